// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * How fast the disk tier writes pages, beside its ceiling in the same run: {@code DiskTier.put} of N pages that sit
 * in off-heap memory (as pages filled in the memory tier do) into a fresh tier, against a plain
 * {@code FileChannel.write} append of the same pages, from the same memory, to one file. Neither {@code fsync}s (the
 * tier does not: its pages reach the disk by writeback, as the append's do); both create their files inside the
 * timed part (the tier its segments, preallocated; the append its one file). Rounds alternate which goes first; each
 * round's files are deleted before the next, so dirty pages never pile up across rounds.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@disk-write
 * </pre>
 * Options in {@code -Ddiskwrite.args="..."}: {@code --pageSizes=4096,131072,1048576} {@code --bytes=536870912} (per
 * round and contender) {@code --rounds=3}. Files go to {@code granary.bench.dir} (must not be tmpfs).
 */
public final class DiskWriteBenchmark {

    private DiskWriteBenchmark() {}

    /**
     * Runs the rounds.
     *
     * @param args see the class Javadoc
     * @throws IOException if the files cannot be written
     */
    public static void main(String[] args) throws IOException {
        String pageSizes = "4096,131072,1048576";
        long bytes = 512L << 20;
        int rounds = 3;
        for (String arg : args) {
            if (arg.startsWith("--pageSizes=")) {
                pageSizes = arg.substring(12);
            } else if (arg.startsWith("--bytes=")) {
                bytes = Long.parseLong(arg.substring(8));
            } else if (arg.startsWith("--rounds=")) {
                rounds = Integer.parseInt(arg.substring(9));
            } else if (!arg.isBlank()) {
                throw new IllegalArgumentException("option: " + arg
                        + " (expected: --pageSizes=, --bytes=, --rounds=)");
            }
        }
        Path base = DiskBenchData.baseDirectory("/var/tmp/granary-bench");
        DiskBenchData.requireBlockDevice(base);
        System.out.printf("disk-write: %s on %s; %d MiB per round and contender, %d rounds%n", base,
                DiskBenchData.describeFileSystem(base), bytes >> 20, rounds);
        for (String s : pageSizes.split(",")) {
            run(base, Integer.parseInt(s.strip()), bytes, rounds);
        }
    }

    private static void run(Path base, int pageSize, long bytes, int rounds) throws IOException {
        int count = (int) (bytes / pageSize);
        // 64 distinct page contents, reused: the bytes written are what matters, not their variety.
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] contents = new MemorySegment[64];
            SplittableRandom random = new SplittableRandom(pageSize);
            for (int i = 0; i < contents.length; i++) {
                byte[] b = new byte[pageSize];
                random.nextBytes(b);
                contents[i] = arena.allocate(pageSize, 4096).copyFrom(MemorySegment.ofArray(b));
            }
            PageKey[] keys = new PageKey[count];
            for (int i = 0; i < count; i++) {
                keys[i] = DiskBenchData.key(i, 7, pageSize);
            }
            double[] tier = new double[rounds];
            double[] append = new double[rounds];
            double[] ratio = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                Path directory = base.resolve("disk-write-" + pageSize);
                DiskBenchData.deleteTree(directory);
                Files.createDirectories(directory);
                try {
                    if (r % 2 == 0) {
                        tier[r] = tier(directory.resolve("tier"), keys, contents, pageSize, bytes);
                        append[r] = append(directory.resolve("raw.dat"), count, contents);
                    } else {
                        append[r] = append(directory.resolve("raw.dat"), count, contents);
                        tier[r] = tier(directory.resolve("tier"), keys, contents, pageSize, bytes);
                    }
                } finally {
                    DiskBenchData.deleteTree(directory);
                }
                ratio[r] = tier[r] / append[r];
                System.out.printf(Locale.ROOT, "  %s round %d: tier %.0f MB/s, append %.0f MB/s, tier/append %.2f%n",
                        DiskColdReadBenchmark.size(pageSize), r + 1, tier[r], append[r], ratio[r]);
            }
            System.out.printf(Locale.ROOT, "%s pages: tier %.0f MB/s, append %.0f MB/s (medians); tier/append median"
                    + " %.2f (min %.2f, max %.2f)%n", DiskColdReadBenchmark.size(pageSize), median(tier),
                    median(append), median(ratio), Arrays.stream(ratio).min().orElse(0),
                    Arrays.stream(ratio).max().orElse(0));
        }
    }

    /** {@return MB/s of putting every page into a fresh tier} */
    private static double tier(Path directory, PageKey[] keys, MemorySegment[] contents, int pageSize, long bytes) {
        long capacity = ((bytes + bytes / 4) / (64L << 20) + 3) * (64L << 20);
        long t0 = System.nanoTime();
        try (DiskTier tier = DiskTier.builder().directory(directory).capacity(capacity).segmentSize(64L << 20)
                .build()) {
            for (int i = 0; i < keys.length; i++) {
                Page page = new Page(keys[i], contents[i & 63]) {
                    @Override
                    protected void deallocate() {}
                };
                page.seal();
                if (!tier.put(page)) {
                    throw new IllegalStateException("the tier refused page " + i + ": " + tier.stats());
                }
            }
            if (tier.stats().evictions() != 0) {
                throw new IllegalStateException("the tier evicted while filling: " + tier.stats());
            }
        }
        return (double) keys.length * pageSize / 1e6 / ((System.nanoTime() - t0) / 1e9);
    }

    /** {@return MB/s of appending every page to one file} */
    private static double append(Path file, int count, MemorySegment[] contents) throws IOException {
        long t0 = System.nanoTime();
        long written = 0;
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (int i = 0; i < count; i++) {
                ByteBuffer b = contents[i & 63].asByteBuffer();
                while (b.hasRemaining()) {
                    written += channel.write(b);
                }
            }
        }
        return written / 1e6 / ((System.nanoTime() - t0) / 1e9);
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
