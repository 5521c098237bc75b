// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.function.Consumer;

/**
 * The data-wait over a sliding window, and the alarm on it: a loader's cumulative figures ({@link Totals}) are fed in
 * with the time they were taken; the window is the difference between the newest feed and the oldest one kept (at
 * most one window old, plus one granule). When the share of the window the trainer spent waiting passes the
 * threshold, the alarm logs one warning naming where the time goes ({@link Starvation}) and calls the listener; it
 * logs and calls again only when the state changes (back under the threshold: INFO).
 *
 * <p>The clock is whatever the caller feeds: the loader feeds {@link System#nanoTime()} at each batch handed to the
 * trainer and at each {@link #ratio} read (a meter scrape); tests feed their own. The alarm is armed once it has
 * seen a whole window, so an epoch's cold start alone never raises it.
 *
 * <p>Thread-safe: synchronized. Memory: at most {@value #GRANULES} + 2 snapshots.
 */
final class StarvationAlarm {

    private static final System.Logger LOG = System.getLogger(DataLoader.class.getName());
    static final int GRANULES = 16;
    /** Decode workers busy this share of the window: decoding is the bottleneck. */
    static final double DECODE_BUSY = 0.8;
    /** Origin reads at least this large on average are transfer-bound, smaller ones latency-bound. */
    static final long LARGE_READ = 1 << 20;

    /**
     * A loader's cumulative figures at one moment.
     *
     * @param waitNanos   the trainer's data-wait
     * @param decodeNanos time the workers spent decoding
     * @param originReads origin data reads the loader caused
     * @param originBytes their bytes
     * @param originNanos their durations, summed
     * @param takes       batches the trainer asked for
     * @param emptyTakes  of those, the ones that found no batch ready
     */
    record Totals(
            long waitNanos,
            long decodeNanos,
            long originReads,
            long originBytes,
            long originNanos,
            long takes,
            long emptyTakes) {}

    private record Point(long at, Totals totals) {}

    private final double threshold;
    private final long windowNanos;
    private final long granuleNanos;
    private final int workers;
    private final String loader;
    private final Consumer<Starvation> listener;
    private final ArrayDeque<Point> points = new ArrayDeque<>();
    private long firstAt;
    private boolean starved;

    /**
     * @param threshold the data-wait share that raises the alarm, in (0, 1]
     * @param window    the window's length, positive
     * @param workers   the loader's decode threads
     * @param loader    names the loader in the log
     * @param listener  called on each change, or null
     */
    StarvationAlarm(double threshold, Duration window, int workers, String loader, Consumer<Starvation> listener) {
        this.threshold = threshold;
        this.windowNanos = window.toNanos();
        this.granuleNanos = Math.max(1, windowNanos / GRANULES);
        this.workers = workers;
        this.loader = loader;
        this.listener = listener;
    }

    /**
     * Feeds the figures at {@code now} and checks the alarm.
     *
     * @return the change, if the state changed (already logged and handed to the listener), else null
     */
    Starvation observe(long now, Totals totals) {
        Starvation change;
        synchronized (this) {
            add(now, totals);
            Point base = points.peekFirst();
            long elapsed = now - base.at;
            if (now - firstAt < windowNanos || elapsed <= 0) {
                return null;
            }
            double ratio = Math.min(1.0, (double) (totals.waitNanos - base.totals.waitNanos) / elapsed);
            boolean over = ratio >= threshold;
            if (over == starved) {
                return null;
            }
            starved = over;
            change = report(over, ratio, elapsed, totals, base.totals);
        }
        if (change.starved()) {
            LOG.log(System.Logger.Level.WARNING, () -> loader + ": " + change.describe());
        } else {
            LOG.log(System.Logger.Level.INFO, () -> loader + ": " + change.describe());
        }
        if (listener != null) {
            try {
                listener.accept(change);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, loader + ": starvation listener failed", e);
            }
        }
        return change;
    }

    /**
     * {@return the share of the window the trainer spent waiting, in [0, 1]} A wait still in progress counts up to
     * {@code now}; one that has lasted a whole window gives 1. 0 before two feeds.
     *
     * @param waitingSince when the trainer started the wait in progress, or 0 if it is not waiting
     */
    synchronized double ratio(long now, Totals totals, long waitingSince) {
        add(now, totals);
        if (waitingSince != 0 && now - waitingSince >= windowNanos) {
            return 1.0; // stuck on one batch for the whole window, however sparse the feeds
        }
        Point base = points.peekFirst();
        long elapsed = now - base.at;
        if (elapsed <= 0) {
            return 0;
        }
        long wait = totals.waitNanos - base.totals.waitNanos;
        if (waitingSince != 0) {
            wait += now - Math.max(waitingSince, base.at);
        }
        return Math.max(0, Math.min(1.0, (double) wait / elapsed));
    }

    /** {@return whether the alarm is raised} */
    synchronized boolean starved() {
        return starved;
    }

    /** Keeps one point per granule, and only the newest one at or before the window's start. */
    private void add(long now, Totals totals) {
        if (points.isEmpty()) {
            firstAt = now;
        }
        Point last = points.peekLast();
        if (last == null || now - last.at >= granuleNanos) {
            points.addLast(new Point(now, totals));
        }
        long start = now - windowNanos;
        while (points.size() >= 2) {
            Iterator<Point> it = points.iterator();
            it.next();
            if (it.next().at > start) {
                break;
            }
            points.pollFirst();
        }
    }

    private Starvation report(boolean over, double ratio, long elapsed, Totals now, Totals then) {
        long decode = now.decodeNanos - then.decodeNanos;
        long reads = now.originReads - then.originReads;
        long bytes = now.originBytes - then.originBytes;
        long originNanos = now.originNanos - then.originNanos;
        long takes = now.takes - then.takes;
        long empty = now.emptyTakes - then.emptyTakes;
        double decodeBusy = Math.min(1.0, (double) decode / ((double) Math.max(1, workers) * elapsed));
        Starvation.Cause cause;
        if (decodeBusy >= DECODE_BUSY) {
            cause = Starvation.Cause.DECODE;
        } else if (reads > 0 && originNanos >= decode) {
            cause = bytes / reads >= LARGE_READ ? Starvation.Cause.ORIGIN_THROUGHPUT : Starvation.Cause.ORIGIN_LATENCY;
        } else {
            cause = Starvation.Cause.QUEUE_EMPTY;
        }
        return new Starvation(
                over,
                cause,
                ratio,
                threshold,
                Duration.ofNanos(windowNanos),
                reads,
                reads == 0 ? 0 : originNanos / 1e6 / reads,
                bytes * 1e9 / elapsed,
                decodeBusy,
                takes == 0 ? 0 : (double) empty / takes);
    }
}
