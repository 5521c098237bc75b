// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.Lease;
import dev.granary.TierStats;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.PageKey;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Child JVM of the truncation tests (a {@code SIGBUS} the JVM cannot handle kills it, so the parent watches the exit
 * code): fills a disk tier from a directory of objects, reopens it, truncates a segment file inside a page, and
 * reads every object back, twice. Mode {@code cold} truncates before any page was read since the reopen (so every
 * page is still to be verified); modes {@code verified} and {@code checked} first reads everything once (every page
 * verified, copies go
 * through the mapping), and puts a memory tier above the disk so pages are also copied up from the mapping; mode
 * {@code verified-disk-only} does the same without the memory tier, so whole-object reads are assembled by copies
 * from the mapping.
 *
 * <p>Prints {@code result ok=<reads with right bytes> wrong=<reads with wrong bytes> io=<IOExceptions>
 * io-unexplained=<IOExceptions not saying the cache file was damaged> corruptions=<n> failures=<n> second-pass-ok=<n>
 * objects=<n>}; an {@link Error} escaping a read ends the child with its stack trace and exit code 1.
 */
public final class TruncatedSegmentMain {

    static final int PAGE = 16 << 10;

    private TruncatedSegmentMain() {}

    public static void main(String[] args) throws Exception {
        Path data = Path.of(args[0]);
        Path dir = Path.of(args[1]);
        boolean verified = !args[2].equals("cold");
        // "verified": the tier's periodic length check is taken out of the way, so the reads meet the truncated
        // mapping in the copies (the safety nets); "checked": the default check finds the truncation first
        Duration check = args[2].startsWith("verified") ? Duration.ofDays(1) : DiskTier.Builder.LENGTH_CHECK;
        boolean withMemory = verified && !args[2].equals("verified-disk-only");
        List<String> keys;
        try (Stream<Path> files = Files.list(data)) {
            keys = files.map(f -> f.getFileName().toString()).sorted().toList();
        }
        try (TieredCache cache = cache(
                data,
                DiskTier.builder()
                        .directory(dir)
                        .capacity(4L << 20)
                        .segmentSize(128 << 10)
                        .build(),
                null)) {
            for (String key : keys) {
                try (Lease lease = cache.read(key)) {
                    lease.bytes();
                }
            }
        }
        DiskTier disk = DiskTier.builder()
                .directory(dir)
                .capacity(4L << 20)
                .segmentSize(128 << 10)
                .lengthCheck(check)
                .build();
        MemoryTier memory = withMemory
                ? MemoryTier.builder().capacity(256 << 10).slabSize(64 << 10).build()
                : null;
        try (TieredCache cache = cache(data, disk, memory)) {
            if (verified) {
                readAll(cache, keys, data); // verifies every disk page
            }
            // Cut the file inside the last page of a segment (payloads grow downwards: the first one written),
            // past its first 4 KiB (which a read probes): the rest of it lies beyond the end of the file but inside
            // the mapping, where a copy faults.
            DiskTier.Location cut = disk.keys().stream()
                    .map(disk::locate)
                    .filter(l -> l.length() > 2 * 4096)
                    .max(Comparator.comparingLong(DiskTier.Location::payloadOffset))
                    .orElseThrow();
            Path victim = cut.file();
            try (FileChannel channel = FileChannel.open(victim, StandardOpenOption.WRITE)) {
                channel.truncate(cut.payloadOffset() + 4096);
            }
            System.out.println("truncated " + victim);
            if (memory != null) {
                // drop the memory tier's copies, so the reads copy the pages up from the truncated mapping again
                for (PageKey key : disk.keys()) {
                    memory.remove(key);
                }
            }
            int[] first = readAll(cache, keys, data);
            int[] second = readAll(cache, keys, data);
            TierStats stats = cache.stats().tiers().getLast();
            System.out.println("result ok=" + first[0] + " wrong=" + (first[1] + second[1]) + " io=" + first[2]
                    + " io-unexplained=" + (first[3] + second[3]) + " corruptions=" + stats.corruptions()
                    + " failures=" + stats.failures() + " second-pass-ok=" + second[0] + " objects=" + keys.size()
                    + " origin-reads=" + cache.stats().origin());
        }
    }

    private static TieredCache cache(Path data, DiskTier disk, MemoryTier memory) {
        TieredCache.Builder builder = TieredCache.builder(PosixOrigin.of(data)).pageSize(PAGE);
        if (memory != null) {
            builder.tier(memory);
        }
        return builder.tier(disk).build();
    }

    /** Reads every object whole (through copies) and into a buffer; {@return ok, wrong, io, io-unexplained} */
    private static int[] readAll(TieredCache cache, List<String> keys, Path data) throws IOException {
        int[] counts = new int[4];
        for (String key : keys) {
            byte[] expected = Files.readAllBytes(data.resolve(key));
            try (Lease lease = cache.read(key)) {
                ByteBuffer bytes = lease.bytes();
                byte[] got = new byte[bytes.remaining()];
                bytes.get(got);
                counts[Arrays.equals(expected, got) ? 0 : 1]++;
            } catch (IOException e) {
                count(counts, e);
            }
            try {
                ByteBuffer into = ByteBuffer.allocate(expected.length);
                cache.readInto(key, 0, into);
                counts[Arrays.equals(expected, into.array()) ? 0 : 1]++;
            } catch (IOException e) {
                count(counts, e);
            }
        }
        return counts;
    }

    private static void count(int[] counts, IOException e) {
        counts[2]++;
        if (e.getMessage() == null || !e.getMessage().contains("cache file under it was damaged")) {
            counts[3]++;
            e.printStackTrace(System.out);
        }
    }
}
