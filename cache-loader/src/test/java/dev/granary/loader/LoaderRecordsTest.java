// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The loader's records print, compare and keep their arrays by content, never as {@code [J@1b6d3586}. */
class LoaderRecordsTest {

    private static LoaderStats stats(long hitsInMemory) {
        return new LoaderStats(
                64,
                1,
                2,
                8,
                4096,
                1_000_000,
                3,
                new long[] {5, 2, 1},
                new long[] {hitsInMemory, 7},
                List.of("memory", "disk"),
                4,
                4,
                1024,
                4_000_000);
    }

    @Test
    void loaderStatsPrintItsArraysByContentAndCompareThemSo() {
        LoaderStats s = stats(50);
        String text = s.toString();
        assertTrue(text.contains("depthAtTake=[5, 2, 1]") && text.contains("tierHits={memory=50, disk=7}"), text);
        assertFalse(text.contains("[J@"), text);
        assertEquals(stats(50), s, "equal figures, equal snapshots");
        assertEquals(stats(50).hashCode(), s.hashCode());
        assertNotEquals(stats(51), s);
    }

    @Test
    void theDataWaitRatioIsTheWaitOverTheTimeCoveredAndAnIntervalsIsItsOwn() {
        LoaderStats s = stats(50); // waited 1 ms of 4 ms
        assertEquals(0.25, s.dataWaitRatio(), 1e-12);
        LoaderStats later = new LoaderStats(
                128,
                1,
                2,
                16,
                8192,
                4_000_000,
                0,
                new long[] {5, 2, 1},
                new long[] {60, 7},
                List.of("memory", "disk"),
                4,
                4,
                1024,
                10_000_000);
        assertEquals(0.5, later.minus(s).dataWaitRatio(), 1e-12, "3 ms of waiting in the 6 ms between them");
        assertEquals(
                0.0,
                new LoaderStats(0, 0, 0, 0, 0, 5, 0, new long[] {0}, new long[] {0}, List.of("m"), 0, 0, 0, 0)
                        .dataWaitRatio(),
                "no time covered: 0, not a division by zero");
    }

    @Test
    void aSnapshotCannotBeChangedThroughItsArrays() {
        long[] hits = {1, 2};
        LoaderStats s = new LoaderStats(0, 0, 0, 0, 0, 0, 0, new long[] {0}, hits, List.of("a", "b"), 0, 0, 0, 0);
        hits[0] = 99;
        s.tierHits()[1] = 99;
        assertEquals(List.of(1L, 2L), Arrays.stream(s.tierHits()).boxed().toList());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> new LoaderStats(
                        0, 0, 0, 0, 0, 0, 0, new long[] {0}, new long[] {1}, List.of("a", "b"), 0, 0, 0, 0));
        assertTrue(e.getMessage().contains("one hit count per tier name"), e.getMessage());
    }

    @Test
    void aBatchPrintsItsIndices() {
        Batch<String> b = new Batch<>(2, 5, List.of("x", "y"), new int[] {41, 7}, null);
        assertEquals("Batch[epoch 2, #5, 2 items, indices [41, 7]]", b.toString());
        assertEquals(new Batch<>(2, 5, List.of("x", "y"), new int[] {41, 7}, null), b);
        int[] many = IntStream.range(0, 20).toArray();
        String text = new Batch<>(0, 0, Collections.nCopies(20, "z"), many, null).toString();
        assertTrue(text.contains("14, 15, … 4 more]"), text);
    }
}
