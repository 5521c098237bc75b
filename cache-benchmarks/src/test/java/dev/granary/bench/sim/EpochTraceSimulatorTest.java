// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheStats;
import dev.granary.TierStats;
import dev.granary.bench.sim.EpochTraceSimulator.Column;
import dev.granary.bench.sim.EpochTraceSimulator.Outcome;
import dev.granary.loader.Sampler;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class EpochTraceSimulatorTest {

    private static final int ITEMS = 2_000;
    private static final int EPOCHS = 5;

    private static Map<String, Outcome> simulateAll(int[][] trace, int capacity) throws IOException {
        Map<String, Outcome> outcomes = new HashMap<>();
        for (Column column : EpochTraceSimulator.COLUMNS) {
            outcomes.put(column.name(), EpochTraceSimulator.simulate(column, capacity, trace));
        }
        return outcomes;
    }

    @ParameterizedTest
    @ValueSource(doubles = {0.1, 0.25, 0.5, 0.75})
    void orderingAndCeilingOnASmallTrace(double fraction) throws IOException {
        int[][] trace = Trace.shuffled(ITEMS, EPOCHS, 7);
        int capacity = (int) Math.round(fraction * ITEMS);
        double ceiling = (double) capacity / ITEMS;
        Map<String, Outcome> o = simulateAll(trace, capacity);

        double belady = o.get("Belady MIN").steadyState();
        for (Outcome other : o.values()) {
            assertTrue(
                    belady >= other.steadyState(),
                    "Belady " + belady + " < " + other.subject() + " " + other.steadyState());
        }
        assertTrue(belady <= ceiling + 1e-12, "Belady " + belady + " above the ceiling " + ceiling);

        // The real tiers hold fewer than C items (record and segment headers, whole segments): their own ceiling.
        Outcome granary = o.get(EpochTraceSimulator.GRANARY);
        double granaryCeiling = granary.ceiling();
        assertTrue(
                granary.ceilingItems() <= capacity && granary.ceilingItems() >= 0.8 * capacity,
                "measured ceiling " + granary.ceilingItems() + " items of C = " + capacity);
        assertTrue(
                granary.steadyState() >= 0.98 * granaryCeiling,
                "Granary " + granary.steadyState() + " (measured ceiling " + granaryCeiling + ")");
        assertTrue(granary.steadyState() <= granaryCeiling + 1e-12, "Granary above its measured ceiling");
        double lru = o.get("LRU").steadyState();
        assertTrue(lru < granary.steadyState(), "LRU " + lru + " >= Granary " + granary.steadyState());
        for (long f : granary.foreignAfter()) {
            assertEquals(0, f, "foreign pages in the empty-start scenario");
        }

        Outcome prefilled = o.get(EpochTraceSimulator.GRANARY_PREFILLED);
        double prefilledCeiling = prefilled.ceiling();
        assertEquals(granary.ceilingItems(), prefilled.ceilingItems(), "same tiers, same measured capacity");
        assertEquals(0, prefilled.hitsPerEpoch()[0], "foreign pages cannot hit");
        assertEquals(0, prefilled.hitsPerEpoch()[1], "epoch 0 cannot replace live foreign pages");
        assertEquals(
                prefilled.ceilingItems(), prefilled.foreignAfter()[0], "foreign pages are not dead in the first epoch");
        for (int e = 1; e < EPOCHS; e++) {
            assertEquals(0, prefilled.foreignAfter()[e], "foreign pages left after epoch " + e);
        }
        for (int e = 2; e < EPOCHS; e++) {
            assertTrue(
                    prefilled.epoch(e) >= 0.98 * prefilledCeiling,
                    "pre-filled, epoch " + e + ": " + prefilled.epoch(e) + " (measured ceiling " + prefilledCeiling
                            + ")");
        }
    }

    @Test
    void traceIsTheLoadersSamplerOrderAndEveryEpochIsAPermutation() {
        int[][] trace = Trace.shuffled(ITEMS, 3, 7);
        int[] sorted = trace[1].clone();
        Arrays.sort(sorted);
        int[] identity = new int[ITEMS];
        Arrays.setAll(identity, i -> i);
        assertArrayEquals(identity, sorted);
        assertArrayEquals(Sampler.shuffled(ITEMS, 7).epoch(2), trace[2]);
        assertTrue(!Arrays.equals(trace[0], trace[1]), "epochs 0 and 1 in the same order");
    }

    /** The real tiers: memory filled first and exactly, both within capacity, every lease closed after each epoch. */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void granaryOnRealTiersFillsMemoryFirstAndLeavesNoLease(boolean prefilled) throws IOException {
        int[][] trace = Trace.shuffled(ITEMS, 3, 3);
        int capacity = 300; // memory 100 items = 100 KiB, disk 200 items = 200 KiB in 16 KiB segments
        try (GranarySubject subject = GranarySubject.splitThirds(capacity, trace, prefilled)) {
            int ceiling = subject.ceilingItems();
            long[] hits = new long[trace.length];
            for (int e = 0; e < trace.length; e++) {
                hits[e] = Trace.replayEpoch(subject, trace, e);
                CacheStats stats = subject.cache().stats();
                assertEquals(0, stats.openLeases(), "leases open after epoch " + e);
                TierStats memory = stats.tiers().get(0);
                TierStats disk = stats.tiers().get(1);
                assertEquals(100L * GranarySubject.ITEM_BYTES, memory.capacityBytes());
                assertEquals(memory.capacityBytes(), memory.usedBytes(), "memory is filled first, exactly");
                assertTrue(disk.usedBytes() <= disk.capacityBytes(), "disk " + disk);
            }
            // 100 in memory; 200 KiB of disk is 12 whole segments of 14 records of 1 KiB + header each (not 200).
            assertEquals(100 + 12 * 14, ceiling, "measured ceiling");
            if (prefilled) {
                assertArrayEquals(new long[] {0, 0, ceiling}, hits);
            } else {
                assertArrayEquals(new long[] {0, ceiling, ceiling}, hits);
            }
        }
    }

    @Test
    void granaryRefusesAMemoryTierBelowItsMinimum() {
        int[][] trace = Trace.shuffled(100, 2, 1);
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> GranarySubject.splitThirds(90, trace, false));
        assertTrue(e.getMessage().startsWith("Granary memory tier: 30 items"), e.getMessage());
    }

    /** MIN against an exhaustive search over every admit/evict/bypass choice, on tiny shuffled traces. */
    @Test
    void beladyMatchesExhaustiveOptimum() throws IOException {
        for (int items = 2; items <= 6; items++) {
            for (int capacity = 1; capacity < items; capacity++) {
                for (long seed = 0; seed < 20; seed++) {
                    int[][] trace = Trace.shuffled(items, 3, seed);
                    int[] flat =
                            Arrays.stream(trace).flatMapToInt(Arrays::stream).toArray();
                    long min = Arrays.stream(Trace.replay(new BeladyMinSubject(capacity, trace), trace))
                            .sum();
                    assertEquals(
                            optimum(flat, capacity),
                            min,
                            "items " + items + ", capacity " + capacity + ", seed " + seed);
                }
            }
        }
    }

    /** The most hits any policy (free to bypass) can get, by dynamic programming over resident sets. */
    private static long optimum(int[] flat, int capacity) {
        int states = 1 << 6;
        long[] best = new long[states]; // best[mask]: most hits so far ending with residents = mask; -1 unreachable
        Arrays.fill(best, -1);
        best[0] = 0;
        for (int item : flat) {
            long[] next = new long[states];
            Arrays.fill(next, -1);
            int bit = 1 << item;
            for (int mask = 0; mask < states; mask++) {
                if (best[mask] < 0) {
                    continue;
                }
                if ((mask & bit) != 0) {
                    next[mask] = Math.max(next[mask], best[mask] + 1);
                    continue;
                }
                next[mask] = Math.max(next[mask], best[mask]); // bypass
                if (Integer.bitCount(mask) < capacity) {
                    next[mask | bit] = Math.max(next[mask | bit], best[mask]);
                } else {
                    for (int victims = mask; victims != 0; victims &= victims - 1) {
                        int m = (mask & ~Integer.lowestOneBit(victims)) | bit;
                        next[m] = Math.max(next[m], best[mask]);
                    }
                }
            }
            best = next;
        }
        return Arrays.stream(best).max().orElseThrow();
    }

    @Test
    void configParsesAndRejectsBadArguments() {
        Config c = Config.parse(new String[] {"--items=1_000", "--epochs=3", "--fractions=0.2, 0.5", ""});
        assertEquals(new Config(1000, 3, 1, List.of(0.2, 0.5), 1000), c);
        assertEquals(20_000, Config.parse(new String[] {"--items=100000"}).granaryItems());
        assertEquals(500, Config.parse(new String[] {"--granary-items=500"}).granaryItems());
        assertThrows(IllegalArgumentException.class, () -> Config.parse(new String[] {"--granary-items=0"}));
        assertEquals(c, Config.parse(c.toArgs().split(" ")));
        assertEquals(200, c.capacity(0.2));
        assertThrows(IllegalArgumentException.class, () -> Config.parse(new String[] {"--epochs=1"}));
        assertThrows(IllegalArgumentException.class, () -> Config.parse(new String[] {"--fractions=1.5"}));
        assertThrows(IllegalArgumentException.class, () -> Config.parse(new String[] {"--item=5"}));
        assertThrows(
                IllegalArgumentException.class, () -> Config.parse(new String[] {"--items=10", "--fractions=0.01"}));
    }
}
