// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.bench.Utilisation.Accelerator;
import dev.granary.bench.Utilisation.Measurement;
import dev.granary.bench.Utilisation.Sweep;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class UtilisationTest {

    @Test
    void auIsComputeOverWallAndAMeasurementPassesOnItsMean() {
        Accelerator busy = new Accelerator(10, 950, 1000, 10);
        Accelerator starved = new Accelerator(10, 800, 1000, 190);
        assertEquals(0.95, busy.au(), 1e-12);
        Measurement m = new Measurement(List.of(busy, starved), 2_000_000, 1_000_000_000L, "");
        assertEquals(0.875, m.meanAu(), 1e-12);
        assertEquals(0.80, m.minAu(), 1e-12);
        assertFalse(m.passes());
        assertTrue(new Measurement(List.of(busy, new Accelerator(3, 900, 1000, 0)), 1, 1, "").passes());
        assertEquals(2.0, m.mbPerSecond(), 1e-12);
    }

    @Test
    void exactlyNinetyPercentPasses() {
        assertTrue(new Measurement(List.of(new Accelerator(1, 9, 10, 0)), 1, 1, "").passes());
        assertFalse(new Measurement(List.of(new Accelerator(1, 8_999, 10_000, 0)), 1, 1, "").passes());
    }

    @Test
    void badInputIsRefusedWithTheValue() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new Accelerator(1, 10, 0, 0));
        assertTrue(e.getMessage().contains("wall 0 ns"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new Accelerator(0, 10, 10, 0));
        assertThrows(IllegalArgumentException.class, () -> new Measurement(List.of(), 0, 1, ""));
        assertThrows(IllegalArgumentException.class, () -> Utilisation.computeNanos(0, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> Utilisation.steps(10, 0, 1, 1));
        assertThrows(IllegalArgumentException.class, () -> new Sweep(0));
    }

    @Test
    void computeTimeGivesTheStatedDemand() {
        // 8 x 150 528 B at 20 MB/s: 1.204224 MB / 20 MB/s = 60.2112 ms
        assertEquals(60_211_200, Utilisation.computeNanos(8, 150_528, 20));
        // MLPerf's ResNet-50 on an H100: 400 x 114 660 B per 0.224 s is ~204.75 MB/s
        assertEquals(224_000_000.0, (double) Utilisation.computeNanos(400, 114_660, 400 * 114_660 / 0.224 / 1e6), 1.0);
    }

    @Test
    void stepsStayWithinOnePassOverTheDataset() {
        assertEquals(16, Utilisation.steps(3000, 1, 8, 16));
        assertEquals(11, Utilisation.steps(3000, 32, 8, 16)); // 93 samples each: 11 whole batches
        assertEquals(0, Utilisation.steps(100, 64, 8, 16));
    }

    @Test
    void runTakesStepsBatchesCountsNominalComputeAndExcludesTheFirstWait() throws Exception {
        int[] handed = {0};
        Accelerator a = Utilisation.run(() -> ++handed[0] <= 5 ? 4 : -1, 3, 1_000);
        assertEquals(3, a.batches());
        assertEquals(3, handed[0]);
        assertEquals(3_000, a.computeNanos());
        assertTrue(a.wallNanos() >= a.computeNanos(), a.toString()); // each compute sleeps at least its time

        handed[0] = 0;
        Accelerator shortSource = Utilisation.run(() -> ++handed[0] <= 2 ? 4 : -1, 10, 1_000);
        assertEquals(2, shortSource.batches());
        assertNull(Utilisation.run(() -> -1, 10, 1_000));
    }

    @Test
    void sweepStopsAfterPatienceFailuresAndNamesTheLargestPass() {
        Sweep sweep = new Sweep(2);
        sweep.record(1, true);
        sweep.record(2, true);
        sweep.record(4, false);
        assertFalse(sweep.done());
        sweep.record(6, true); // noise: passes above a failure
        sweep.record(8, false);
        sweep.record(10, false);
        assertTrue(sweep.done());
        assertEquals(6, sweep.largestPassing());
        assertTrue(sweep.passAboveFailure());
        sweep.cap();
        assertEquals("6*", sweep.verdict());
        assertThrows(IllegalStateException.class, () -> sweep.record(12, true));
    }

    @Test
    void sweepThatNeverFailsIsALowerBound() {
        Sweep sweep = new Sweep(2);
        sweep.record(1, true);
        sweep.record(2, true);
        assertThrows(IllegalArgumentException.class, () -> sweep.record(2, true));
        sweep.cap();
        assertEquals("2+", sweep.verdict());

        Sweep none = new Sweep(1);
        none.record(1, false);
        none.cap();
        assertEquals("0", none.verdict());
        assertEquals(0, none.largestPassing());
    }
}
