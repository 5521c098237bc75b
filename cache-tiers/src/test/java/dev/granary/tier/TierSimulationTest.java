// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheSimulation;
import dev.granary.CacheStats;
import dev.granary.EpochDriver;
import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.PageKey;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link dev.granary.spi.Tier#simulation()} of the real tiers against the real tiers, read for read: one thread reads
 * objects of mixed sizes (sub-page, several pages, odd sizes that exercise slab blocks, record headers and payload
 * alignment) through a driven cache in a known order, epoch after epoch, and the cache's dry run, fed the same pages in
 * the same order from a copy made before, must name the same tier (or the origin) for every single read. Fresh
 * tiers, a disk tier reopened warm, and a cache pre-filled with another dataset (whose pages die from the loader's
 * second epoch). Also: a simulation changes nothing in the cache.
 */
class TierSimulationTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Path data;
    private final List<String> keys = new ArrayList<>();
    private final List<String> others = new ArrayList<>();

    private void objects(int n, long seed) throws IOException {
        data = Files.createDirectories(root.resolve("data"));
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < n; i++) {
            int size = i % 17 == 4 ? 40_000 + random.nextInt(100_000) : 100 + random.nextInt(12_000);
            String key = String.format("train/%05d.bin", i);
            byte[] b = new byte[size];
            random.nextBytes(b);
            Files.createDirectories(data.resolve("train"));
            Files.write(data.resolve(key), b);
            keys.add(key);
        }
        for (int i = 0; i < n / 4; i++) {
            String key = String.format("other/%05d.bin", i);
            Files.createDirectories(data.resolve("other"));
            Files.write(data.resolve(key), new byte[3000 + random.nextInt(3000)]);
            others.add(key);
        }
    }

    private TieredCache cache(Path disk) {
        MemoryTier memory =
                MemoryTier.builder().capacity(384 << 10).slabSize(128 << 10).build();
        leaks.released("memory tier", memory::isReleased);
        TieredCache.Builder b = TieredCache.builder(PosixOrigin.of(data))
                .tier(memory)
                .pageSize(32 << 10)
                .leakDetection(LeakDetection.PARANOID);
        if (disk != null) {
            DiskTier diskTier = DiskTier.builder()
                    .directory(disk)
                    .capacity(1L << 20)
                    .segmentSize(96 << 10)
                    .build();
            leaks.released("disk tier", diskTier::isReleased);
            b.tier(diskTier);
        }
        return leaks.watch(b.build());
    }

    @Test
    void memoryOnlyMatchesReadForRead() throws IOException {
        objects(400, 1);
        try (TieredCache cache = cache(null)) {
            compare(cache, keys, 4, 11);
        }
    }

    @Test
    void memoryAndDiskMatchReadForRead() throws IOException {
        objects(400, 2);
        try (TieredCache cache = cache(root.resolve("disk"))) {
            compare(cache, keys, 4, 12);
        }
    }

    @Test
    void reopenedDiskMatchesReadForRead() throws IOException {
        objects(400, 3);
        Path disk = root.resolve("disk");
        try (TieredCache cache = cache(disk)) {
            compare(cache, keys, 2, 13);
        }
        try (TieredCache cache = cache(disk)) {
            int[] tiers = compare(cache, keys, 3, 14);
            assertTrue(tiers[1] > 0, "the reopened disk tier serves reads");
        }
    }

    @Test
    void anotherDatasetsPagesDieAsPredicted() throws IOException {
        objects(400, 4);
        try (TieredCache cache = cache(root.resolve("disk"))) {
            for (String key : others) { // undriven: the tiers' own policies place them
                cache.read(key).close();
            }
            compare(cache, keys, 4, 15);
        }
    }

    @Test
    void aSimulationChangesNothing() throws IOException {
        objects(200, 5);
        try (TieredCache cache = cache(root.resolve("disk"));
                EpochDriver driver = cache.loaderSupport().driver()) {
            for (String key : keys) {
                cache.read(key).close();
            }
            CacheStats before = cache.stats();
            CacheSimulation sim = cache.loaderSupport().simulation(driver);
            List<PageKey> pages = pages(cache, keys);
            for (int e = 0; e < 3; e++) {
                sim.startEpoch();
                for (PageKey page : pages) {
                    sim.read(page);
                }
                sim.endEpoch();
            }
            CacheStats after = cache.stats();
            assertEquals(before, after, "a dry run leaves every counter and gauge of the cache as it was");
            assertThrows(
                    IllegalArgumentException.class, () -> cache.loaderSupport().simulation(null));
            driver.close();
            IllegalStateException closed = assertThrows(
                    IllegalStateException.class, () -> cache.loaderSupport().simulation(driver));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
        }
    }

    /**
     * Runs {@code epochs} shuffled epochs for real (one thread, page by page through {@code cache.read}) and in the
     * dry run taken just before; asserts the same outcome for every read. {@return reads served per tier, then the
     * origin's}
     */
    private int[] compare(TieredCache cache, List<String> dataset, int epochs, long seed) throws IOException {
        List<PageKey> pages = pages(cache, dataset);
        int tierCount = cache.stats().tiers().size();
        int[] served = new int[tierCount + 1];
        try (EpochDriver driver = cache.loaderSupport().driver()) {
            CacheSimulation sim = cache.loaderSupport().simulation(driver);
            Random random = new Random(seed);
            for (int e = 0; e < epochs; e++) {
                List<PageKey> order = new ArrayList<>(pages);
                Collections.shuffle(order, random);
                driver.startEpoch();
                sim.startEpoch();
                assertEquals(cache.stats().tiers().size(), sim.tierNames().size());
                for (PageKey page : order) {
                    CacheStats before = cache.stats();
                    try (Lease lease = cache.read(page.key(), page.offset(), page.length())) {
                        assertEquals(page.length(), lease.bytes().remaining());
                    }
                    CacheStats d = cache.stats().minus(before);
                    int real = -1;
                    for (int t = 0; t < tierCount; t++) {
                        if (d.tiers().get(t).hits() > 0) {
                            real = t;
                        }
                    }
                    assertEquals(real < 0 ? 1 : 0, d.origin().reads(), "one origin read exactly on a miss");
                    int predicted = sim.read(page);
                    assertEquals(real, predicted, "epoch " + e + ", " + page + ": tier that serves it (-1: origin)");
                    served[real < 0 ? tierCount : real]++;
                }
                driver.endEpoch();
                sim.endEpoch();
            }
        }
        return served;
    }

    /** Every page of every object, as {@code cache.read} cuts them. */
    private static List<PageKey> pages(TieredCache cache, List<String> dataset) throws IOException {
        CacheSimulation cutter;
        List<PageKey> pages = new ArrayList<>();
        try (EpochDriver d = cache.loaderSupport().driver()) {
            cutter = cache.loaderSupport().simulation(d);
            for (String key : dataset) {
                ObjectInfo info = cache.stat(key);
                for (long p = 0; p < cutter.pages(info); p++) {
                    pages.add(cutter.pageKey(info, p));
                }
            }
        }
        return pages;
    }
}
