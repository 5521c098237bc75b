// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The memory tier's 4-bit count-min sketch: estimates never below the true count (up to 15), aging, sizing. */
@Timeout(60)
class CountMinSketchTest {

    @Test
    void anEstimateIsNeverBelowTheTrueCountUpToFifteen() {
        CountMinSketch sketch = new CountMinSketch();
        sketch.ensureCapacity(10_000);
        SplittableRandom random = new SplittableRandom(3);
        long[] hashes = new long[2000];
        int[] counts = new int[hashes.length];
        for (int i = 0; i < hashes.length; i++) {
            hashes[i] = random.nextLong();
        }
        for (int n = 0; n < 20_000; n++) { // fewer than the aging threshold (10 x counters' pages)
            int i = random.nextInt(hashes.length);
            sketch.increment(hashes[i]);
            counts[i]++;
        }
        int exact = 0;
        for (int i = 0; i < hashes.length; i++) {
            int f = sketch.frequency(hashes[i]);
            assertTrue(f >= Math.min(15, counts[i]), "hash " + i + ": " + f + " < " + counts[i]);
            if (f == Math.min(15, counts[i])) {
                exact++;
            }
        }
        assertTrue(exact > hashes.length * 9 / 10, "most estimates exact at this load: " + exact);
    }

    @Test
    void countsAgeByHalvingAfterTenIncrementsPerCountedPage() {
        CountMinSketch sketch = new CountMinSketch();
        long hot = 42;
        for (int i = 0; i < 15; i++) {
            sketch.increment(hot);
        }
        assertEquals(15, sketch.frequency(hot));
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < 20 * sketch.longs(); i++) { // past the sample size: at least one halving
            sketch.increment(random.nextLong());
        }
        assertTrue(sketch.frequency(hot) < 15, "a page not read lately is worth less: " + sketch.frequency(hot));
    }

    @Test
    void theSketchGrowsWithThePagesHeldAtHalfALongEach() {
        CountMinSketch sketch = new CountMinSketch();
        assertEquals(64, sketch.longs());
        sketch.ensureCapacity(100_000);
        assertEquals(65_536, sketch.longs());
        sketch.ensureCapacity(1_000_000);
        assertEquals(524_288, sketch.longs());
        sketch.ensureCapacity(10);
        assertEquals(524_288, sketch.longs(), "never shrinks");
    }
}
