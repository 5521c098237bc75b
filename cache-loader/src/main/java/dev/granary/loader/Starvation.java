// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.time.Duration;
import java.util.Locale;

/**
 * A change of a {@link DataLoader}'s starvation state, handed to the listener set with
 * {@link DataLoader.Builder#starvationListener}: the trainer's data-wait over the alarm's sliding window crossed the
 * threshold (the seeds' warning line is 20 %), up ({@link #starved()}) or back down. The figures are the window's,
 * and say where the time goes: {@link #cause()} names the likeliest bottleneck.
 *
 * <p>How the cause is chosen: {@link Cause#DECODE} when the decode workers were busy at least 80 % of the window;
 * else the origin ({@link Cause#ORIGIN_LATENCY} for requests under 1 MiB on average, whose time is mostly the
 * origin's time to first byte; {@link Cause#ORIGIN_THROUGHPUT} for larger ones, whose time is mostly transfer) when
 * this loader's origin reads took at least as much thread-time as its decoding; else {@link Cause#QUEUE_EMPTY}:
 * neither the origin nor the workers were the limit, yet the trainer found the prefetch queue empty — too little
 * read-ahead or prefetch for the trainer's pace, or samples served from the tiers slower than it consumes them.
 *
 * @param starved              true when the data-wait passed the threshold, false when it fell back under it
 * @param cause                the likeliest bottleneck over the window
 * @param dataWaitRatio        the share of the window the trainer spent waiting for batches, in [0, 1]
 * @param threshold            the alarm's threshold, in (0, 1]
 * @param window               the alarm's window
 * @param originReads          origin data reads this loader caused in the window
 * @param originLatencyMillis  their mean duration, in milliseconds (0 without reads)
 * @param originBytesPerSecond the bytes they fetched per second of the window
 * @param decodeBusy           the share of the window the decode workers were busy, in [0, 1]
 * @param emptyQueueShare      the share of the trainer's requests that found no batch ready, in [0, 1]
 */
public record Starvation(
        boolean starved,
        Cause cause,
        double dataWaitRatio,
        double threshold,
        Duration window,
        long originReads,
        double originLatencyMillis,
        double originBytesPerSecond,
        double decodeBusy,
        double emptyQueueShare) {

    /** Where the trainer's data-wait goes. */
    public enum Cause {
        /** Many small origin reads, each waiting for the origin's first byte: more reads in flight would help. */
        ORIGIN_LATENCY(
                "origin latency",
                "more reads in flight hide it: readAhead, the origin's maxConcurrency,"
                        + " or larger samples (shards)"),
        /** Large origin reads limited by the bytes per second the origin or the network gives. */
        ORIGIN_THROUGHPUT(
                "origin throughput",
                "the origin or the network gives no more: a faster origin, a warm"
                        + " disk tier (prestage), or fewer bytes per sample"),
        /** The decoder: the workers are busy, so reading faster would not help. */
        DECODE("decode", "more workers, or a cheaper decoder"),
        /** Neither the origin nor the workers are the limit, yet no batch is ready when the trainer asks. */
        QUEUE_EMPTY("queue empty", "more prefetch and readAhead, so reads start earlier");

        private final String label;
        private final String hint;

        Cause(String label, String hint) {
            this.label = label;
            this.hint = hint;
        }

        /** {@return the cause in words, such as "origin latency"} */
        public String label() {
            return label;
        }

        /** {@return what usually helps} */
        public String hint() {
            return hint;
        }
    }

    /** {@return the change in one line with its figures, as the loader logs it} */
    public String describe() {
        if (!starved) {
            return String.format(
                    Locale.ROOT,
                    "no longer starved: the trainer waited for data %.1f %% of the last" + " %s (threshold %.0f %%)",
                    dataWaitRatio * 100,
                    seconds(window),
                    threshold * 100);
        }
        return String.format(
                Locale.ROOT,
                "starved: the trainer waited for data %.1f %% of the last %s (threshold"
                        + " %.0f %%); the time goes to %s: %d origin reads, %.1f ms each on average, %.1f MB/s; decode"
                        + " workers busy %.0f %%; the prefetch queue was empty at %.0f %% of batches (%s)",
                dataWaitRatio * 100,
                seconds(window),
                threshold * 100,
                cause.label,
                originReads,
                originLatencyMillis,
                originBytesPerSecond / 1e6,
                decodeBusy * 100,
                emptyQueueShare * 100,
                cause.hint);
    }

    private static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.1f s", d.toNanos() / 1e9);
    }
}
