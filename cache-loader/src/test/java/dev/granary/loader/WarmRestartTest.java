// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheStats;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The next job starts warm also when a loader drove the cache (issue 15, item 6). While a {@link DataLoader} drives
 * it, a cache's tiers are exclusive: a dataset that fits in memory never reaches the disk tier while the job runs.
 * {@code TieredCache.close()} carries those pages into the disk tier's free room, so a new process on the same
 * directory — a real child JVM here — reads its first epoch from disk. Every byte is checked in both processes.
 */
@Timeout(180)
class WarmRestartTest {

    private static final int OBJECTS = 240;

    @TempDir
    Path dir;

    private Path data;
    private Path disk;

    /** The bytes of object {@code i}: a function of {@code i}, so the child checks them without the parent. */
    static byte[] content(int i) {
        SplittableRandom random = new SplittableRandom(1000 + i);
        byte[] bytes = new byte[8_000 + random.nextInt(40_000)];
        random.nextBytes(bytes);
        return bytes;
    }

    static String key(int i) {
        return String.format("train/%05d.bin", i);
    }

    @BeforeEach
    void writeObjects() throws IOException {
        data = Files.createDirectories(dir.resolve("data"));
        Files.createDirectories(data.resolve("train"));
        for (int i = 0; i < OBJECTS; i++) {
            Files.write(data.resolve(key(i)), content(i));
        }
        disk = dir.resolve("cache");
    }

    /** The cache both processes build: memory large enough for the dataset, a disk tier over the same directory. */
    static TieredCache cache(Path data, Path disk, boolean carry) {
        return TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder().capacity(64L << 20).build())
                .tier(DiskTier.builder()
                        .directory(disk)
                        .capacity(64L << 20)
                        .segmentSize(4L << 20)
                        .build())
                .pageSize(64 << 10)
                .carryOnClose(carry)
                .build();
    }

    /** Runs epochs of a shuffled loader over the dataset, checking every sample; returns the origin reads made. */
    static long train(TieredCache cache, int epochs) throws IOException {
        Dataset dataset = Dataset.ofObjects(cache, "train/");
        long before = cache.stats().origin().reads();
        try (DataLoader<Integer> loader = DataLoader.builder(dataset, WarmRestartTest::check)
                .batchSize(16)
                .shuffle(7)
                .build()) {
            for (int e = 0; e < epochs; e++) {
                int seen = 0;
                try (Epoch<Integer> epoch = loader.epoch(e)) {
                    for (Batch<Integer> batch : epoch) {
                        seen += batch.items().size();
                    }
                }
                assertEquals(OBJECTS, seen);
            }
        }
        return cache.stats().origin().reads() - before;
    }

    private static Integer check(Sample sample) {
        ByteBuffer b = sample.bytes();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        int i = Integer.parseInt(sample.key().substring("train/".length(), "train/".length() + 5));
        assertArrayEquals(content(i), bytes, sample.key());
        return i;
    }

    private static long diskUsed(CacheStats stats) {
        return stats.tiers().getLast().usedBytes(); // the disk tier is the last
    }

    @Test
    void aJobThatKeptEverythingInMemoryLeavesItOnDiskForTheNextProcess() throws Exception {
        try (TieredCache cache = cache(data, disk, true)) {
            assertEquals(OBJECTS, train(cache, 2), "the first job reads each object once");
            assertEquals(0, diskUsed(cache.stats()), "under the loader the tiers are exclusive: memory holds all");
        }
        long[] child = Child.run(data, disk, true);
        assertEquals(OBJECTS, child[0], "the child saw every sample");
        assertTrue(
                child[1] <= OBJECTS / 100,
                "the restarted job's first epoch reads at most 1 % of its samples" + " from the origin: " + child[1]);
    }

    @Test
    void withoutTheCarryTheNextProcessStartsCold() throws Exception {
        try (TieredCache cache = cache(data, disk, false)) {
            assertEquals(OBJECTS, train(cache, 1));
        }
        long[] child = Child.run(data, disk, false);
        assertEquals(OBJECTS, child[0]);
        assertEquals(OBJECTS, child[1], "nothing reached the disk: every sample from the origin");
    }

    @Test
    void theCarryFillsOnlyTheDisksFreeRoomAndEvictsNothing() throws IOException {
        // A disk tier of 2 MiB under 6+ MiB of memory-resident pages: it takes what fits and keeps what it had.
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(DiskTier.builder()
                        .directory(disk)
                        .capacity(2L << 20)
                        .segmentSize(1L << 20)
                        .build())
                .pageSize(64 << 10)
                .build()) {
            for (int i = 0; i < 10; i++) {
                cache.read(key(i)).close();
            }
        }
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder().capacity(64L << 20).build())
                .tier(DiskTier.builder()
                        .directory(disk)
                        .capacity(2L << 20)
                        .segmentSize(1L << 20)
                        .build())
                .pageSize(64 << 10)
                .build()) {
            assertEquals(OBJECTS - 10, train(cache, 1), "the first 10 were on disk already");
            long used = diskUsed(cache.stats());
            assertTrue(used > 0, "the first 10 objects are on disk");
        }
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(DiskTier.builder()
                        .directory(disk)
                        .capacity(2L << 20)
                        .segmentSize(1L << 20)
                        .build())
                .pageSize(64 << 10)
                .build()) {
            CacheStats stats = cache.stats();
            assertTrue(diskUsed(stats) <= 2L << 20, "within the disk's capacity: " + diskUsed(stats));
            long before = cache.stats().origin().reads();
            for (int i = 0; i < 10; i++) {
                try (var lease = cache.read(key(i))) {
                    byte[] bytes = new byte[lease.length()];
                    lease.bytes().get(bytes);
                    assertArrayEquals(content(i), bytes);
                }
            }
            assertEquals(before, cache.stats().origin().reads(), "what the disk held before the carry is still there");
            for (int i = 10; i < OBJECTS; i++) {
                try (var lease = cache.read(key(i))) {
                    byte[] bytes = new byte[lease.length()];
                    lease.bytes().get(bytes);
                    assertArrayEquals(content(i), bytes, "every object reads right, from disk or origin");
                }
            }
        }
    }

    /** The next job: a new JVM on the same directory, one epoch; prints samples seen and origin reads. */
    static final class Child {

        static long[] run(Path data, Path disk, boolean carry) throws Exception {
            String java =
                    Path.of(System.getProperty("java.home"), "bin", "java").toString();
            List<String> command = List.of(
                    java,
                    "--enable-native-access=ALL-UNNAMED",
                    "-cp",
                    System.getProperty("java.class.path"),
                    Child.class.getName(),
                    data.toString(),
                    disk.toString(),
                    Boolean.toString(carry));
            Process child =
                    new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            assertTrue(child.waitFor(120, TimeUnit.SECONDS), out);
            assertEquals(0, child.exitValue(), out);
            String[] lines = out.split("\n");
            String[] figures = lines[lines.length - 1].split(" ");
            return new long[] {Long.parseLong(figures[0]), Long.parseLong(figures[1])};
        }

        public static void main(String[] args) throws Exception {
            try (TieredCache cache = cache(Path.of(args[0]), Path.of(args[1]), Boolean.parseBoolean(args[2]))) {
                long reads = train(cache, 1);
                System.out.println(OBJECTS + " " + reads);
            }
        }
    }
}
