// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheStats;
import dev.granary.TieredCache;
import dev.granary.testkit.LeakCheck;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two loaders on one cache: each one's {@link LoaderStats} counts the reads it made and the origin reads its misses
 * caused, not the other's, while the cache's own counters hold both; and {@link Epoch#stats()} gives each epoch's.
 */
@Timeout(120)
class PerLoaderStatsTest {

    private static final int A = 48;
    private static final int B = 32;
    private static final int SIZE = 2000;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path dir;

    private void write(String prefix, int n) throws Exception {
        Path d = Files.createDirectories(dir.resolve(prefix));
        for (int i = 0; i < n; i++) {
            byte[] bytes = new byte[SIZE + i];
            Arrays.fill(bytes, (byte) i);
            Files.write(d.resolve(String.format("%03d.bin", i)), bytes);
        }
    }

    private static long bytes(int n) {
        return (long) n * SIZE + (long) n * (n - 1) / 2;
    }

    private static DataLoader<LoaderFixture.Item> loader(TieredCache cache, String prefix) throws Exception {
        return DataLoader.builder(Dataset.ofObjects(cache, prefix), LoaderFixture::copy)
                .batchSize(8)
                .workers(2)
                .prefetch(2)
                .build();
    }

    private static List<LoaderStats> epochs(DataLoader<LoaderFixture.Item> loader, int count) {
        List<LoaderStats> stats = new ArrayList<>();
        for (int e = 0; e < count; e++) {
            Epoch<LoaderFixture.Item> epoch = loader.epoch(e);
            try (epoch) {
                epoch.forEach(b -> {});
            }
            stats.add(epoch.stats()); // frozen at the close
            assertEquals(stats.getLast(), epoch.stats());
            // The epoch's own time: from its start to its close, and the trainer waited for part of it.
            LoaderStats one = stats.getLast();
            assertTrue(
                    one.elapsedNanos() > 0
                            && one.elapsedNanos() <= loader.stats().elapsedNanos(),
                    one.toString());
            assertTrue(one.dataWaitNanos() <= one.elapsedNanos(), one.toString());
            assertEquals((double) one.dataWaitNanos() / one.elapsedNanos(), one.dataWaitRatio(), 1e-12);
        }
        return stats;
    }

    @Test
    void twoLoadersOnOneCacheEachCountTheirOwnReads() throws Exception {
        write("a", A);
        write("b", B);
        TieredCache cache = LoaderFixture.cache(leaks, dir);
        try (cache;
                DataLoader<LoaderFixture.Item> a = loader(cache, "a/");
                DataLoader<LoaderFixture.Item> b = loader(cache, "b/")) {
            CacheStats before = cache.stats();
            // Both at once, on their own threads: two epochs each.
            CompletableFuture<List<LoaderStats>> ra = CompletableFuture.supplyAsync(() -> epochs(a, 2));
            CompletableFuture<List<LoaderStats>> rb = CompletableFuture.supplyAsync(() -> epochs(b, 2));
            List<LoaderStats> ea = ra.join();
            List<LoaderStats> eb = rb.join();

            LoaderStats sa = a.stats();
            LoaderStats sb = b.stats();
            // Each loader: its epoch 0 cold (one miss and one origin read per object), its epoch 1 warm.
            assertEquals(A, sa.misses());
            assertEquals(A, sa.originReads());
            assertEquals(bytes(A), sa.originBytes());
            assertArrayEquals(new long[] {A}, sa.tierHits());
            assertEquals(B, sb.misses());
            assertEquals(B, sb.originReads());
            assertEquals(bytes(B), sb.originBytes());
            assertArrayEquals(new long[] {B}, sb.tierHits());
            // The cache's counters hold both.
            CacheStats both = cache.stats().minus(before);
            assertEquals(A + B, both.origin().reads());
            assertEquals(bytes(A) + bytes(B), both.origin().bytes());
            assertEquals(A + B, both.tiers().getFirst().hits());
            assertEquals(A + B, both.tiers().getFirst().misses());

            // Per epoch.
            assertEquals(A, ea.get(0).misses());
            assertEquals(A, ea.get(0).originReads());
            assertArrayEquals(new long[] {0}, ea.get(0).tierHits());
            assertEquals(A, ea.get(0).samples());
            assertEquals(0, ea.get(1).misses());
            assertEquals(0, ea.get(1).originReads());
            assertArrayEquals(new long[] {A}, ea.get(1).tierHits());
            assertEquals(A, ea.get(1).samples());
            assertEquals(A / 8, ea.get(1).batches());
            assertEquals(bytes(A), ea.get(1).bytes());
            assertEquals(B, eb.get(0).originReads());
            assertArrayEquals(new long[] {B}, eb.get(1).tierHits());
            // The epochs add up to the loader's figures.
            assertEquals(sa.samples(), ea.get(0).samples() + ea.get(1).samples());
            assertEquals(
                    sa.dataWaitNanos(), ea.get(0).dataWaitNanos() + ea.get(1).dataWaitNanos());
            assertEquals(sa.batches(), ea.get(0).batches() + ea.get(1).batches());
        }
    }

    @Test
    void aSecondLoaderOnTheSameObjectsIsServedByTheTierAndCausesNoOriginRead() throws Exception {
        write("a", A);
        TieredCache cache = LoaderFixture.cache(leaks, dir);
        try (cache;
                DataLoader<LoaderFixture.Item> first = loader(cache, "a/");
                DataLoader<LoaderFixture.Item> second = loader(cache, "a/")) {
            epochs(first, 1);
            LoaderStats f = first.stats();
            List<LoaderStats> s = epochs(second, 1);
            assertEquals(f, first.stats(), "the first loader's figures do not move with the second's reads");
            assertEquals(0, second.stats().originReads());
            assertEquals(0, second.stats().misses());
            assertArrayEquals(new long[] {A}, second.stats().tierHits());
            assertEquals(second.stats().hitRatio(), s.getFirst().hitRatio());
            assertTrue(f.hitRatio() == 0 && second.stats().hitRatio() == 1);
            assertEquals(A, cache.stats().origin().reads());
        }
    }
}
