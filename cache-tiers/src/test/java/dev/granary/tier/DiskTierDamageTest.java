// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.Lease;
import dev.granary.TierStats;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A disk tier whose files are damaged under it or between runs: misses and I/O errors, never a crash or wrong bytes.
 */
class DiskTierDamageTest {

    @TempDir
    Path root;

    private Path data;
    private Path dir;

    @BeforeEach
    void setUp() {
        data = root.resolve("data");
        dir = root.resolve("disk");
        Dataset dataset = new Dataset(data, 11);
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < 30; i++) {
            // every object spans at least two pages, so whole reads are assembled by copies
            dataset.put(String.format("obj-%02d", i), TruncatedSegmentMain.PAGE + 1 + random.nextInt(50_000));
        }
    }

    @Test
    void aSegmentTruncatedUnderARunningTierIsAMissNotACrash() throws Exception {
        ChildJvm.Result child = ChildJvm.run(TruncatedSegmentMain.class, data.toString(), dir.toString(), "cold");
        assertEquals(0, child.exitCode(), "the child must end normally (134 is a SIGBUS): " + child.output());
        Matcher m = result(child);
        assertEquals(0, count(m, "wrong"), child.output());
        assertEquals(
                0,
                count(m, "io"),
                "unverified pages are verified by reading the file: a miss, not an error: " + child.output());
        assertEquals(2 * count(m, "objects"), count(m, "ok"), child.output());
        assertEquals(2 * count(m, "objects"), count(m, "second-pass-ok"), child.output());
        assertTrue(count(m, "corruptions") + count(m, "failures") > 0, "the truncation is counted: " + child.output());
    }

    @Test
    void aSegmentTruncatedAfterItsPagesWereVerifiedGivesIoErrorsNeverAnError() throws Exception {
        ChildJvm.Result child = ChildJvm.run(TruncatedSegmentMain.class, data.toString(), dir.toString(), "verified");
        assertEquals(
                0,
                child.exitCode(),
                "the child must end normally (1: an Error escaped a read; 134: a SIGBUS): " + child.output());
        Matcher m = result(child);
        assertEquals(0, count(m, "wrong"), child.output());
        assertEquals(0, count(m, "io-unexplained"), "an I/O error says the cache file was damaged: " + child.output());
        assertEquals(2 * count(m, "objects"), count(m, "ok") + count(m, "io"), child.output());
        assertEquals(
                2 * count(m, "objects"),
                count(m, "second-pass-ok"),
                "damaged pages were dropped, so the second" + " pass reads them from the origin: " + child.output());
        // copied up into memory: the tier counts it; assembled by a copy (memory admission refused): an IOException
        assertTrue(
                count(m, "corruptions") + count(m, "failures") + count(m, "io") > 0,
                "a read met the truncation: " + child.output());
    }

    @Test
    void readsFromATruncatedMappingFailAsMissesOrIoErrorsAndTheNextReadMisses() throws Exception {
        ChildJvm.Result child =
                ChildJvm.run(TruncatedSegmentMain.class, data.toString(), dir.toString(), "verified-disk-only");
        assertEquals(0, child.exitCode(), "1: an Error escaped a read; 134: a SIGBUS: " + child.output());
        Matcher m = result(child);
        assertEquals(0, count(m, "wrong"), child.output());
        // Met at the lease (the cold-page probe touches a page over 4 KiB: the fault drops the segment, a miss that
        // is counted) or in the copy (an IOException naming the damaged file).
        assertTrue(
                count(m, "io") + count(m, "corruptions") + count(m, "failures") > 0,
                "a read met the truncated mapping: " + child.output());
        assertEquals(0, count(m, "io-unexplained"), "an I/O error says the cache file was damaged: " + child.output());
        assertEquals(2 * count(m, "objects"), count(m, "ok") + count(m, "io"), child.output());
        assertEquals(2 * count(m, "objects"), count(m, "second-pass-ok"), child.output());
    }

    @Test
    void aSegmentTruncatedUnderARunningTierIsFoundByTheLengthCheckAndDropped() throws Exception {
        ChildJvm.Result child = ChildJvm.run(TruncatedSegmentMain.class, data.toString(), dir.toString(), "checked");
        assertEquals(0, child.exitCode(), child.output());
        Matcher m = result(child);
        assertEquals(0, count(m, "wrong"), child.output());
        assertEquals(0, count(m, "io-unexplained"), child.output());
        assertEquals(2 * count(m, "objects"), count(m, "second-pass-ok"), child.output());
        assertTrue(count(m, "corruptions") > 0, "the truncated segment is dropped and counted: " + child.output());
    }

    /**
     * Between a close and the next open, damage the directory at random (flip bytes in a segment file, truncate it,
     * extend it, delete it, garble or delete FORMAT), reopen, and read everything back: every byte served equals the
     * origin's. A miss is fine; a refusal to open (an unreadable FORMAT) is fine and the directory is started over;
     * wrong bytes never.
     */
    @Test
    void randomDamageBetweenRunsNeverServesWrongBytes() throws Exception {
        damageLoop(dir, 100, 1L << 20, 2026);
    }

    /** The same on a real 384 KiB filesystem under a 1 MiB tier: segment creation meets a full disk as well. */
    @Test
    void randomDamageOnAFullFilesystemNeverServesWrongBytes() throws Exception {
        Path mount = Files.createDirectories(root.resolve("tiny-fs"));
        Assumptions.assumeTrue(
                TinyFilesystem.mount(mount, 384 << 10),
                "needs root to mount a 384 KiB tmpfs; randomDamageBetweenRunsNeverServesWrongBytes covers the damage"
                        + " and DiskTierTest.aFullDiskStopsAdmissionAndReadsKeepWorking the full disk");
        try {
            long failures = damageLoop(mount.resolve("disk"), 40, 1L << 20, 7);
            assertTrue(failures > 0, "a 384 KiB filesystem cannot take a 1 MiB tier: segment creation must fail");
        } finally {
            TinyFilesystem.unmount(mount);
        }
    }

    /** {@return the tier failures (full disk) counted over all trials} */
    private long damageLoop(Path disk, int trials, long capacity, long seed) throws Exception {
        SplittableRandom random = new SplittableRandom(seed);
        Map<String, byte[]> objects = new TreeMap<>();
        try (var files = Files.list(data)) {
            for (Path f : files.toList()) {
                objects.put(f.getFileName().toString(), Files.readAllBytes(f));
            }
        }
        List<String> keys = List.copyOf(objects.keySet());
        Map<String, Integer> damages = new TreeMap<>();
        long served = 0;
        long failures = 0;
        long corruptions = 0;
        for (int trial = 0; trial < trials; trial++) {
            DiskTier tier;
            try {
                tier = DiskTier.builder()
                        .directory(disk)
                        .capacity(capacity)
                        .segmentSize(64 << 10)
                        .build();
            } catch (IllegalStateException e) {
                assertTrue(e.getMessage().contains("FORMAT is unreadable"), "trial " + trial + ": " + e.getMessage());
                damages.merge("refused, started over", 1, Integer::sum);
                deleteTree(disk);
                continue;
            }
            try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                    .tier(tier)
                    .pageSize(8 << 10)
                    .build()) {
                // read everything back (pages that survived are served from disk), then some more at random
                for (int pass = 0; pass < 2; pass++) {
                    for (String key : keys) {
                        byte[] expected = objects.get(key);
                        int offset = pass == 0 ? 0 : random.nextInt(expected.length);
                        int length = pass == 0 ? expected.length : 1 + random.nextInt(expected.length - offset);
                        try (Lease lease = cache.read(key, offset, length)) {
                            Bytes.assertSame(
                                    Arrays.copyOfRange(expected, offset, offset + length),
                                    lease.bytes(),
                                    "trial " + trial + ", " + key + " at " + offset);
                        }
                        served += length;
                    }
                }
                TierStats stats = cache.stats().tiers().getFirst();
                failures += stats.failures();
                corruptions += stats.corruptions();
            }
            try {
                damages.merge(damage(disk, random), 1, Integer::sum);
            } catch (IOException e) { // on the full filesystem, extending a file or rewriting FORMAT can fail
                damages.merge("damage failed: " + e.getClass().getSimpleName(), 1, Integer::sum);
            }
        }
        System.out.println("damage loop (" + disk + "): " + trials + " trials, " + damages + "; " + served
                + " bytes served, all right; " + corruptions + " corruptions and " + failures + " failures counted");
        return failures;
    }

    /** Damages the closed directory one random way; {@return what was done} */
    private static String damage(Path disk, SplittableRandom random) throws IOException {
        List<Path> segments;
        try (var files = Files.list(disk.resolve(DiskDirectory.SEGMENTS))) {
            segments = files.sorted().toList();
        }
        int what = random.nextInt(segments.isEmpty() ? 2 : 8);
        Path format = disk.resolve(DiskDirectory.FORMAT_FILE);
        if (what == 0) {
            Files.writeString(format, random.nextBoolean() ? "granary-disk-tier\nformat x\n" : "garbage");
            return "FORMAT garbled";
        }
        if (what == 1) {
            Files.deleteIfExists(format);
            return "FORMAT deleted";
        }
        Path file = segments.get(random.nextInt(segments.size()));
        long size = Files.size(file);
        switch (what) {
            case 2, 3, 4 -> {
                // flip bytes: anywhere, or in the header area where the records are
                int flips = 1 + random.nextInt(8);
                for (int i = 0; i < flips; i++) {
                    long at = what == 4 ? random.nextLong(Math.min(size, 4096)) : random.nextLong(size);
                    DiskTierTest.flip(file, at);
                }
                return what == 4 ? "header bytes flipped" : "bytes flipped";
            }
            case 5 -> {
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                    channel.truncate(random.nextLong(size));
                }
                return "truncated";
            }
            case 6 -> {
                byte[] more = new byte[1 + random.nextInt(8192)];
                random.nextBytes(more);
                Files.write(file, more, StandardOpenOption.APPEND);
                return "extended";
            }
            default -> {
                Files.delete(file);
                return "segment deleted";
            }
        }
    }

    private static void deleteTree(Path directory) throws IOException {
        try (var walk = Files.walk(directory)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    private static Matcher result(ChildJvm.Result child) {
        Matcher m = Pattern.compile("result (.*)").matcher(child.output());
        assertTrue(m.find(), "the child prints its result: " + child.output());
        System.out.println("truncation child: " + m.group(1));
        return m;
    }

    private static int count(Matcher m, String name) {
        Matcher field =
                Pattern.compile("(?:^| )" + Pattern.quote(name) + "=(\\d+)").matcher(m.group(1));
        assertTrue(field.find(), name + " in " + m.group(1));
        return Integer.parseInt(field.group(1));
    }
}
