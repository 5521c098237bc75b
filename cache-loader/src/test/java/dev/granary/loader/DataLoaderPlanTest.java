// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheStats;
import dev.granary.TierStats;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DataLoader#plan}'s contract besides its accuracy ({@link PlanVersusRunTest}): argument checks and refusals
 * with their messages, the choice of the first epoch (after epochs ran, after a resume), the cost arithmetic, and that
 * planning in the middle of a running epoch, from several threads, changes nothing: not the cache's counters, not what
 * the epoch yields, not what the next epochs hit.
 */
@Timeout(120)
class DataLoaderPlanTest {

    @TempDir
    Path dir;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    private TieredCache cache() throws IOException {
        PlanVersusRunTest.writeObjects(dir, 3 * PlanVersusRunTest.MEMORY, 21);
        return LoaderFixture.cache(leaks, PosixOrigin.of(dir), PlanVersusRunTest.MEMORY);
    }

    @Test
    void badArgumentsAndMisuseAreRefusedWithClearMessages() throws IOException {
        try (TieredCache cache = cache()) {
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            DataLoader<Long> loader = PlanVersusRunTest.loader(dataset);
            IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> loader.plan(0));
            assertEquals("epochs to plan: 0 (expected: >= 1)", zero.getMessage());
            IllegalArgumentException negative = assertThrows(IllegalArgumentException.class, () -> loader.plan(-1, 2));
            assertEquals("first epoch: -1 (expected: >= 0)", negative.getMessage());
            assertThrows(IllegalArgumentException.class, () -> loader.plan(Long.MAX_VALUE, 2));
            EpochPlan e = loader.plan(1).epochs().getFirst();
            IllegalArgumentException price = assertThrows(IllegalArgumentException.class, () -> e.requestCost(-1));
            assertTrue(price.getMessage().startsWith("price per 1000 requests: -1.0 (expected:"), price.getMessage());
            assertThrows(IllegalArgumentException.class, () -> e.requestCost(Double.NaN));
            loader.close();
            IllegalStateException closed = assertThrows(IllegalStateException.class, () -> loader.plan(1));
            assertTrue(closed.getMessage().contains("is closed (expected: an open loader)"), closed.getMessage());

            try (DataLoader<Long> undriven =
                    DataLoader.builder(dataset, s -> s.size()).driveCache(false).build()) {
                IllegalStateException refused = assertThrows(IllegalStateException.class, () -> undriven.plan(2));
                assertTrue(
                        refused.getMessage().contains("does not drive its cache (driveCache(false))"),
                        refused.getMessage());
            }

            // ofKeys: sizes are not known before a read; the plan says so rather than guessing.
            try (DataLoader<Long> byKeys =
                    PlanVersusRunTest.loader(Dataset.ofKeys(cache, List.of("train/000000.bin", "unlisted/x.bin")))) {
                IllegalStateException unknown = assertThrows(IllegalStateException.class, () -> byKeys.plan(1));
                assertTrue(unknown.getMessage().contains("'unlisted/x.bin') has no known size"), unknown.getMessage());
            }
        }
    }

    @Test
    void aTierWithoutSimulationIsNamed() throws IOException {
        PlanVersusRunTest.writeObjects(dir, 64 << 10, 22);
        Tier memory = MemoryTier.builder().capacity(1L << 20).build();
        Tier opaque = new Opaque(memory);
        try (TieredCache cache = leaks.watch(
                        TieredCache.builder(PosixOrigin.of(dir)).tier(opaque).build());
                DataLoader<Long> loader = PlanVersusRunTest.loader(Dataset.ofObjects(cache, "train/"))) {
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> loader.plan(1));
            assertTrue(refused.getMessage().startsWith("tier 'opaque' of "), refused.getMessage());
            assertTrue(refused.getMessage().contains("offers no simulation"), refused.getMessage());
        }
    }

    @Test
    void costAndRatiosFollowTheCounts() {
        EpochPlan e = new EpochPlan(3, 100, 120, 1200, Map.of("memory", 30L), Map.of("memory", 300L), 90, 10, 900);
        assertEquals(100, e.originRequests());
        assertEquals(0.25, e.hitRatio(), 1e-12);
        assertEquals(0.25, e.byteHitRatio(), 1e-12);
        assertEquals(100 * 0.0004 / 1000, e.requestCost(0.0004), 1e-15);
        assertEquals(0, e.hits("disk"));
        LoaderPlan plan = new LoaderPlan(List.of("memory"), List.of(e, e));
        assertEquals(200, plan.originRequests());
        assertEquals(1800, plan.originBytes());
        assertEquals(2 * e.requestCost(0.0004), plan.requestCost(0.0004), 1e-15);
        assertThrows(IllegalArgumentException.class, () -> new LoaderPlan(List.of("memory"), List.of()));
        assertThrows(IllegalArgumentException.class, () -> new EpochPlan(0, -1, 0, 0, Map.of(), Map.of(), 0, 0, 0));
    }

    @Test
    void theFirstEpochPlannedIsTheOneTheLoaderRunsNext() throws IOException {
        try (TieredCache cache = cache();
                DataLoader<Long> loader = PlanVersusRunTest.loader(Dataset.ofObjects(cache, "train/"))) {
            assertEquals(List.of(0L, 1L, 2L), epochs(loader.plan(3)));
            PlanVersusRunTest.measure(loader, 0, 2);
            assertEquals(List.of(2L, 3L), epochs(loader.plan(2)));
            assertEquals(List.of(7L), epochs(loader.plan(7, 1)));

            // A resume from batch 10 of epoch 5: that epoch reads only the samples after it.
            try (Epoch<Long> five = loader.epoch(5)) {
                Iterator<Batch<Long>> batches = five.iterator();
                for (int b = 0; b < 10; b++) {
                    batches.next();
                }
            }
            LoaderState state = loader.state();
            assertEquals(5, state.epoch());
            assertEquals(10, state.nextBatch());
            loader.resume(state);
            LoaderPlan resumed = loader.plan(2);
            assertEquals(List.of(5L, 6L), epochs(resumed));
            assertEquals(loader.dataset().size() - 160, resumed.epochs().get(0).samples());
            assertEquals(loader.dataset().size(), resumed.epochs().get(1).samples());
        }
    }

    /**
     * Plans from four threads while an epoch is held mid-way (its read-ahead full, no read in flight): the cache's
     * counters and gauges do not move; the epoch then yields every sample once; and the next epochs hit as a plan
     * made between epochs says.
     */
    @Test
    void planningDuringARunningEpochChangesNothing() throws Exception {
        try (TieredCache cache = cache();
                DataLoader<Long> loader = PlanVersusRunTest.loader(Dataset.ofObjects(cache, "train/"))) {
            PlanVersusRunTest.measure(loader, 0, 1);
            long samples = 0;
            try (Epoch<Long> epoch = loader.epoch(1)) {
                Iterator<Batch<Long>> batches = epoch.iterator();
                samples += batches.next().size();
                while (loader.stats().queueDepth() < 4) { // prefetch(4): then the feeder waits and no read runs
                    Thread.onSpinWait();
                }
                CacheStats before = cache.stats();
                List<CompletableFuture<LoaderPlan>> plans = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    plans.add(CompletableFuture.supplyAsync(() -> loader.plan(3)));
                }
                for (CompletableFuture<LoaderPlan> p : plans) {
                    assertEquals(List.of(2L, 3L, 4L), epochs(p.get(60, TimeUnit.SECONDS)));
                }
                CacheStats after = cache.stats();
                // Every counter and the tiers' gauges; not openLeases, which the epoch's last decodes may still be
                // releasing (a batch completes before its samples' leases are closed).
                assertEquals(before.tiers(), after.tiers(), "planning moved no counter or gauge of any tier");
                assertEquals(before.origin(), after.origin(), "planning asked nothing of the origin");
                assertEquals(before.leakedLeases(), after.leakedLeases());
                while (batches.hasNext()) {
                    samples += batches.next().size();
                }
            } catch (ExecutionException e) {
                throw new AssertionError(e.getCause());
            }
            assertEquals(loader.dataset().size(), samples, "the held epoch yields every sample once");
            LoaderPlan plan = loader.plan(2);
            PlanVersusRunTest.compare("after planning during an epoch", plan, PlanVersusRunTest.measure(loader, 2, 2));
        }
    }

    private static List<Long> epochs(LoaderPlan plan) {
        return plan.epochs().stream().map(EpochPlan::epoch).toList();
    }

    /** A tier of someone else's that offers no simulation: delegates everything else. */
    private record Opaque(Tier tier) implements Tier {
        @Override
        public String name() {
            return "opaque";
        }

        @Override
        public Page get(PageKey key) {
            return tier.get(key);
        }

        @Override
        public Page allocate(PageKey key) {
            return tier.allocate(key);
        }

        @Override
        public boolean put(Page page) {
            return tier.put(page);
        }

        @Override
        public void invalidate(String origin, String key) {
            tier.invalidate(origin, key);
        }

        @Override
        public TierStats stats() {
            return tier.stats();
        }

        @Override
        public void close() {
            tier.close();
        }
    }
}
