// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The starvation alarm driven by a clock the test feeds: the window, the threshold, one listener call per change of
 * state, and the cause it names — with no real time involved. (The log line itself is checked by
 * {@code StarvationWarningTest} in cache-benchmarks, whose tests can read the JDK logger.)
 */
@Timeout(60)
class StarvationAlarmTest {

    private static final long S = 1_000_000_000L;
    private static final long MS = 1_000_000L;

    /** A loader's figures: cumulative wait and decode time, origin reads, takes (none empty unless said). */
    private static StarvationAlarm.Totals totals(
            long wait, long decode, long reads, long bytes, long originNanos, long takes, long empty) {
        return new StarvationAlarm.Totals(wait, decode, reads, bytes, originNanos, takes, empty);
    }

    @Test
    void raisesOnceWhenTheWindowPassesTheThresholdAndClearsOnceWhenItFallsBack() {
        List<Starvation> heard = new ArrayList<>();
        StarvationAlarm alarm = new StarvationAlarm(0.2, Duration.ofSeconds(10), 4, "loader over test", heard::add);
        long wait = 0;
        long origin = 0;
        long reads = 0;
        long takes = 0;
        // 20 s at 10 % data-wait: under the threshold.
        for (long t = 0; t <= 20; t++) {
            assertNull(alarm.observe(t * S, totals(wait, 0, reads, reads * 100_000, origin, takes, 0)), "t=" + t);
            wait += S / 10;
            reads += 10;
            origin += 10 * 30 * MS;
            takes++;
        }
        assertFalse(alarm.starved());
        // Then 60 % data-wait, time spent on small origin reads: raised once, within a window.
        Starvation raised = null;
        int changes = 0;
        for (long t = 21; t <= 40; t++) {
            wait += 6 * S / 10;
            reads += 10;
            origin += 10 * 200 * MS;
            takes++;
            Starvation s = alarm.observe(t * S, totals(wait, 0, reads, reads * 100_000, origin, takes, takes - 20));
            if (s != null) {
                raised = s;
                changes++;
                assertTrue(t <= 31, "raised within one window of the change, at t=" + t);
            }
        }
        assertEquals(1, changes, "one change while it stays starved");
        assertNotNull(raised);
        assertTrue(raised.starved());
        assertTrue(raised.dataWaitRatio() >= 0.2 && raised.dataWaitRatio() <= 0.6, "ratio " + raised.dataWaitRatio());
        assertEquals(Starvation.Cause.ORIGIN_LATENCY, raised.cause(), "100 kB reads: time to first byte dominates");
        assertTrue(
                raised.originLatencyMillis() > 30 && raised.originLatencyMillis() <= 200,
                "mean origin read " + raised.originLatencyMillis());
        assertEquals(List.of(raised), heard, "the listener heard the change once");
        assertTrue(alarm.starved());
        // Back to no waiting: cleared once.
        changes = 0;
        for (long t = 41; t <= 70; t++) {
            takes++;
            Starvation s = alarm.observe(t * S, totals(wait, 0, reads, reads * 100_000, origin, takes, 0));
            if (s != null) {
                changes++;
                assertFalse(s.starved());
                assertTrue(s.dataWaitRatio() < 0.2);
            }
        }
        assertEquals(1, changes);
        assertEquals(2, heard.size());
        assertFalse(alarm.starved());
        String line = raised.describe();
        assertTrue(line.startsWith("starved: the trainer waited for data"), line);
        assertTrue(line.contains("the time goes to origin latency"), line);
        assertTrue(line.contains("(threshold 20 %)"), line);
        assertTrue(
                heard.get(1).describe().startsWith("no longer starved: the trainer waited for data"),
                heard.get(1).describe());
    }

    @Test
    void aColdStartAloneDoesNotRaiseIt() {
        StarvationAlarm alarm = new StarvationAlarm(0.2, Duration.ofSeconds(10), 4, "loader over test", null);
        // The trainer waits the whole first 9 s: the alarm has not seen a window yet.
        for (long t = 0; t < 10; t++) {
            assertNull(alarm.observe(t * S, totals(t * S, 0, 0, 0, 0, t, t)));
        }
        assertFalse(alarm.starved());
        // Once a window is seen, the same waiting raises it.
        assertNotNull(alarm.observe(10 * S, totals(10 * S, 0, 0, 0, 0, 10, 10)));
    }

    @Test
    void namesTheCause() {
        // Decode workers (2) busy 90 % of the window: decode.
        assertEquals(Starvation.Cause.DECODE, starve(2, 18 * S, 0, 0, 0).cause());
        // Origin reads of 4 MiB taking more thread-time than decoding: throughput.
        assertEquals(
                Starvation.Cause.ORIGIN_THROUGHPUT,
                starve(2, S, 100, 400L << 20, 50 * S).cause());
        // Origin reads of 64 KiB: latency.
        Starvation latency = starve(2, S, 1000, 64_000_000, 50 * S);
        assertEquals(Starvation.Cause.ORIGIN_LATENCY, latency.cause());
        assertEquals(50.0, latency.originLatencyMillis(), 1e-9);
        assertEquals(6.4e6, latency.originBytesPerSecond(), 1e-3);
        // Neither: the queue is empty with the workers and the origin idle (reads from the tiers, too little ahead).
        Starvation empty = starve(2, S, 0, 0, 0);
        assertEquals(Starvation.Cause.QUEUE_EMPTY, empty.cause());
        assertEquals(0.5, empty.emptyQueueShare(), 1e-9);
        assertEquals(0.05, empty.decodeBusy(), 1e-9);
        assertTrue(empty.describe().contains("queue empty"), empty.describe());
    }

    /** 10 s at 50 % data-wait after a quiet first window, with these decode and origin figures. */
    private static Starvation starve(int workers, long decode, long reads, long bytes, long originNanos) {
        StarvationAlarm alarm = new StarvationAlarm(0.2, Duration.ofSeconds(10), workers, "loader over test", null);
        assertNull(alarm.observe(0, totals(0, 0, 0, 0, 0, 0, 0)));
        assertNull(alarm.observe(10 * S, totals(0, 0, 0, 0, 0, 0, 0)));
        Starvation s = alarm.observe(20 * S, totals(5 * S, decode, reads, bytes, originNanos, 100, 50));
        assertNotNull(s);
        return s;
    }

    @Test
    void theRatioCountsAWaitInProgress() {
        StarvationAlarm alarm = new StarvationAlarm(0.2, Duration.ofSeconds(10), 1, "loader over test", null);
        assertEquals(0.0, alarm.ratio(0, totals(0, 0, 0, 0, 0, 0, 0), 0));
        assertEquals(0.25, alarm.ratio(4 * S, totals(S, 0, 0, 0, 0, 1, 0), 0), 1e-9);
        // Waiting since t=6 s, still at t=8 s: 1 s done plus 2 s in progress over 8 s.
        assertEquals(3.0 / 8, alarm.ratio(8 * S, totals(S, 0, 0, 0, 0, 1, 0), 6 * S), 1e-9);
        // Fed again at t=30 s: the window reaches back to the newest feed at or before t=20 s (t=8 s), so a wait in
        // progress since t=25 s counts 5 s over those 22 s.
        assertEquals(5.0 / 22, alarm.ratio(30 * S, totals(S, 0, 0, 0, 0, 1, 0), 25 * S), 1e-9);
        // A trainer stuck on one batch for a whole window: 1, however sparse the feeds.
        assertEquals(1.0, alarm.ratio(31 * S, totals(S, 0, 0, 0, 0, 1, 0), 12 * S), 1e-9);
    }

    @Test
    void theBuilderRefusesBadSettings(@TempDir Path dir) throws Exception {
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(dir))
                .tier(MemoryTier.builder().capacity(1 << 20).build())
                .build()) {
            DataLoader.Builder<Sample> b = DataLoader.builder(Dataset.ofKeys(cache, List.of("a")), s -> s);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.starvationThreshold(0));
            assertEquals(
                    "starvation threshold: 0.0 (expected: a share in (0, 1], such as 0.2 for 20 % data-wait)",
                    e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> b.starvationThreshold(1.5));
            assertThrows(IllegalArgumentException.class, () -> b.starvationThreshold(Double.NaN));
            e = assertThrows(IllegalArgumentException.class, () -> b.starvationWindow(Duration.ZERO));
            assertEquals("starvation window: PT0S (expected: 1 ms to 1 day)", e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> b.starvationWindow(null));
        }
    }
}
