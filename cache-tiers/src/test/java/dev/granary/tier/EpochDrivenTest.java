// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheStats;
import dev.granary.EpochDriver;
import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.Tiering;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A loader driving memory over disk through shuffled epochs of a dataset larger than both: the resident set is stable,
 * every epoch after the first hits exactly what is resident, and that is the tiers' capacity — the ceiling — where
 * the undriven policies (W-TinyLFU, segment LRU) keep replacing samples and hit far less.
 */
class EpochDrivenTest {

    private static final int SAMPLE = 8 << 10;
    private static final int SAMPLES = 200;
    private static final long MEMORY = 256 << 10; // 32 samples
    private static final long DISK = 1L << 20; // 4 segments of 256 KiB: ~120 samples with their record headers

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Path data;
    private Dataset dataset;
    private List<String> keys;

    @BeforeEach
    void setUp() throws IOException {
        data = Files.createDirectories(root.resolve("data"));
        dataset = new Dataset(data, 5);
        keys = new ArrayList<>();
        for (int i = 0; i < SAMPLES; i++) {
            String key = String.format("train/%04d.bin", i);
            dataset.put(key, SAMPLE);
            keys.add(key);
        }
    }

    private TieredCache cache(Path disk) {
        MemoryTier memory =
                MemoryTier.builder().capacity(MEMORY).slabSize(128 << 10).build();
        DiskTier diskTier = DiskTier.builder()
                .directory(disk)
                .capacity(DISK)
                .segmentSize(256 << 10)
                .build();
        leaks.released("memory tier", memory::isReleased);
        leaks.released("disk tier", diskTier::isReleased);
        return leaks.watch(TieredCache.builder(PosixOrigin.of(data))
                .tier(memory)
                .tier(diskTier)
                .tiering(Tiering.INCLUSIVE)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }

    /** Reads every sample once in a shuffled order; returns the hits of all tiers during it. */
    private long epoch(TieredCache cache, long seed, List<String> sampleKeys) throws IOException {
        List<String> order = new ArrayList<>(sampleKeys);
        Collections.shuffle(order, new Random(seed));
        long before = hits(cache.stats());
        for (String key : order) {
            try (Lease lease = cache.read(key)) {
                Bytes.assertSame(dataset.objects().get(key), lease.bytes(), key);
            }
        }
        return hits(cache.stats()) - before;
    }

    private static long hits(CacheStats stats) {
        return stats.tiers().stream().mapToLong(t -> t.hits()).sum();
    }

    @Test
    void drivenEpochsHitExactlyTheStableResidentSetAtTheCeiling() throws IOException {
        long[] driven = new long[6];
        try (TieredCache cache = cache(root.resolve("disk"));
                EpochDriver driver = cache.loaderSupport().driver()) {
            for (int e = 0; e < driven.length; e++) {
                driver.startEpoch();
                driven[e] = epoch(cache, e, keys);
                driver.endEpoch();
            }
            CacheStats stats = cache.stats();
            assertEquals(0, stats.tiers().get(0).evictions(), "memory evicted under a loader: " + stats);
            assertEquals(0, stats.tiers().get(1).evictions(), "disk evicted under a loader: " + stats);
        }
        assertEquals(0, driven[0], "the first epoch is cold");
        for (int e = 2; e < driven.length; e++) {
            assertEquals(driven[1], driven[e], "steady state must be stable: " + Arrays.toString(driven));
        }
        // The ceiling in samples: memory holds exactly 32; the disk's 1 MiB holds at most 128 (less their headers).
        long ceiling = MEMORY / SAMPLE + DISK / SAMPLE;
        assertTrue(
                driven[1] >= 0.9 * ceiling && driven[1] <= ceiling,
                "driven hits per epoch " + driven[1] + " vs ceiling " + ceiling + ": " + Arrays.toString(driven));

        // The same epochs undriven: the tiers' own policies keep replacing samples and fall well below.
        long undriven = 0;
        try (TieredCache cache = cache(root.resolve("disk-undriven"))) {
            for (int e = 0; e < driven.length; e++) {
                long h = epoch(cache, e, keys);
                if (e >= 2) {
                    undriven += h;
                }
            }
        }
        long drivenSteady = 0;
        for (int e = 2; e < driven.length; e++) {
            drivenSteady += driven[e];
        }
        assertTrue(undriven < 0.9 * drivenSteady, "undriven " + undriven + " vs driven " + drivenSteady);
    }

    @Test
    void pagesOfAnotherDatasetAreFlushedFromTheSecondEpochOn() throws IOException {
        List<String> foreign = new ArrayList<>();
        for (int i = 0; i < SAMPLES; i++) {
            String key = String.format("other/%04d.bin", i);
            dataset.put(key, SAMPLE);
            foreign.add(key);
        }
        long[] hits = new long[5];
        try (TieredCache cache = cache(root.resolve("disk"))) {
            epoch(cache, 99, foreign); // the tiers are full of another dataset
            epoch(cache, 98, foreign);
            try (EpochDriver driver = cache.loaderSupport().driver()) {
                for (int e = 0; e < hits.length; e++) {
                    driver.startEpoch();
                    hits[e] = epoch(cache, e, keys);
                    driver.endEpoch();
                }
            }
        }
        long ceiling = MEMORY / SAMPLE + DISK / SAMPLE;
        assertEquals(0, hits[0], Arrays.toString(hits));
        // Epoch 1 replaces the foreign pages (dead: not read in epoch 0); from epoch 2 on the ceiling holds.
        for (int e = 3; e < hits.length; e++) {
            assertEquals(hits[2], hits[e], Arrays.toString(hits));
        }
        assertTrue(hits[2] >= 0.9 * ceiling, "hits " + Arrays.toString(hits) + " vs ceiling " + ceiling);
    }

    @Test
    void aWarmDiskReopenedUnderALoaderKeepsItsPagesThroughTheFirstEpoch() throws IOException {
        Path disk = root.resolve("disk");
        try (TieredCache cache = cache(disk);
                EpochDriver driver = cache.loaderSupport().driver()) {
            for (int e = 0; e < 3; e++) {
                driver.startEpoch();
                epoch(cache, e, keys);
                driver.endEpoch();
            }
        }
        try (TieredCache cache = cache(disk);
                EpochDriver driver = cache.loaderSupport().driver()) {
            driver.startEpoch();
            long first = epoch(cache, 7, keys);
            driver.endEpoch();
            CacheStats stats = cache.stats();
            // Nothing of the recovered disk set was replaced before the loader could read it.
            assertEquals(0, stats.tiers().get(1).evictions(), stats.toString());
            assertTrue(
                    stats.tiers().get(1).hits() >= 0.9 * (DISK / SAMPLE) - MEMORY / SAMPLE,
                    "disk hits in the first epoch after reopening: " + stats + " (epoch hits " + first + ")");
        }
    }

    @Test
    void aWarmRestartOfADatasetTheDiskHoldsReadsFromMemoryFromTheSecondEpoch() throws IOException {
        Path disk = root.resolve("disk");
        List<String> small = keys.subList(0, 24); // 192 KiB: fits the 256 KiB memory tier, and the disk
        try (TieredCache cache = cache(disk);
                EpochDriver driver = cache.loaderSupport().driver()) {
            driver.startEpoch();
            epoch(cache, 1, small);
            driver.endEpoch();
        }
        // A new process: memory empty, the disk holds the dataset.
        try (TieredCache cache = cache(disk);
                EpochDriver driver = cache.loaderSupport().driver()) {
            driver.startEpoch();
            assertEquals(small.size(), epoch(cache, 2, small), "the first epoch after the restart hits the disk");
            driver.endEpoch();
            CacheStats first = cache.stats();
            assertEquals(small.size(), first.tiers().get(1).hits(), first.toString());
            assertEquals(0, first.origin().reads(), first.toString());
            // No read of that epoch missed: its disk hits were copied into memory's free room.
            driver.startEpoch();
            epoch(cache, 3, small);
            driver.endEpoch();
            CacheStats second = cache.stats().minus(first);
            assertEquals(small.size(), second.tiers().get(0).hits(), "the second epoch reads memory: " + second);
            assertEquals(0, second.tiers().get(1).hits(), second.toString());
            assertEquals(
                    0, second.tiers().get(0).evictions() + second.tiers().get(1).evictions(), second.toString());
        }
    }

    @Test
    void aRestartOfADatasetLargerThanTheTiersKeepsMemoryForTheMissesAndStaysAtTheCeiling() throws IOException {
        Path disk = root.resolve("disk");
        long[] before = new long[4];
        try (TieredCache cache = cache(disk);
                EpochDriver driver = cache.loaderSupport().driver()) {
            for (int e = 0; e < before.length; e++) {
                driver.startEpoch();
                before[e] = epoch(cache, e, keys);
                driver.endEpoch();
            }
        }
        long[] after = new long[4];
        try (TieredCache cache = cache(disk);
                EpochDriver driver = cache.loaderSupport().driver()) {
            for (int e = 0; e < after.length; e++) {
                driver.startEpoch();
                after[e] = epoch(cache, 10 + e, keys);
                driver.endEpoch();
            }
            CacheStats stats = cache.stats();
            assertEquals(
                    0, stats.tiers().get(0).evictions() + stats.tiers().get(1).evictions(), stats.toString());
        }
        // Copies up stop at the epoch's first miss (after a handful of reads: most samples are not resident), so the
        // memory tier's room goes to the misses, and the restarted job reaches the first job's steady state.
        long ceiling = MEMORY / SAMPLE + DISK / SAMPLE;
        for (int e = 2; e < after.length; e++) {
            assertTrue(
                    after[e] >= before[before.length - 1] - 4 && after[e] >= 0.9 * ceiling,
                    "after the restart " + Arrays.toString(after) + ", before " + Arrays.toString(before) + ", ceiling "
                            + ceiling);
        }
    }

    @Test
    void driverMisuseIsRefusedWithClearMessages() throws IOException {
        try (TieredCache cache = cache(root.resolve("disk"))) {
            EpochDriver driver = cache.loaderSupport().driver();
            driver.startEpoch();
            IllegalStateException twice = assertThrows(IllegalStateException.class, driver::startEpoch);
            assertTrue(twice.getMessage().contains("already started"), twice.getMessage());
            driver.endEpoch();
            driver.endEpoch(); // nothing started: no-op
            driver.close();
            driver.close();
            IllegalStateException closed = assertThrows(IllegalStateException.class, driver::startEpoch);
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
        }
    }
}
