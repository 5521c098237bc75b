// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A snapshot of a {@link DataLoader}'s counters since it was built ({@link DataLoader#stats()}) or of one epoch's
 * ({@link Epoch#stats()}); {@link #minus(LoaderStats)} gives an interval's. Every figure is the loader's own, even
 * when other loaders or readers share its cache (the cache's own counters, {@code TieredCache.stats()}, are
 * cache-wide).
 *
 * @param samples          samples handed to the trainer (in batches)
 * @param skipped          samples that failed and were skipped ({@code skipFailedSamples(true)})
 * @param failed           samples that failed their batch
 * @param batches          batches handed to the trainer
 * @param bytes            bytes of the samples read
 * @param dataWaitNanos    how long the trainer was blocked in the epoch iterator waiting for a batch
 * @param queueDepth       batches decoded and waiting for the trainer now
 * @param depthAtTake      how often the trainer, asking for a batch, found {@code d} batches ready: index {@code d}
 *                         from 0 to {@code prefetch} — the queue depth over time, sampled at each take; a trainer that
 *                         keeps finding 0 is starved
 * @param tierHits         this loader's reads each tier of the cache served, in tier order, since the loader was built
 * @param tierNames        the tiers' names, in tier order
 * @param misses           this loader's reads no tier could serve since the loader was built (filled from the
 *                         origin, or by joining another reader's origin read of the same bytes)
 * @param originReads      data requests to the origin this loader's misses made since the loader was built
 * @param originBytes      data bytes those requests fetched
 * @param elapsedNanos     the wall-clock time these figures cover: the time the loader's epochs were open (from
 *                         {@code loader.epoch(n)} to the epoch's close), or for an epoch's own figures, from its
 *                         start to now (to its close once closed); time between epochs is not counted
 */
public record LoaderStats(
        long samples,
        long skipped,
        long failed,
        long batches,
        long bytes,
        long dataWaitNanos,
        int queueDepth,
        long[] depthAtTake,
        long[] tierHits,
        List<String> tierNames,
        long misses,
        long originReads,
        long originBytes,
        long elapsedNanos) {

    /**
     * Copies the arrays and the list, so a snapshot never changes.
     *
     * @throws IllegalArgumentException if an array or the list is null, or the tier arrays differ in length
     */
    public LoaderStats {
        if (depthAtTake == null || tierHits == null || tierNames == null || tierHits.length != tierNames.size()) {
            throw new IllegalArgumentException("loader stats: depthAtTake=" + Arrays.toString(depthAtTake)
                    + ", tierHits=" + Arrays.toString(tierHits) + ", tierNames=" + tierNames
                    + " (expected: non-null, one hit count per tier name)");
        }
        depthAtTake = depthAtTake.clone();
        tierHits = tierHits.clone();
        tierNames = List.copyOf(tierNames);
    }

    /** {@return how often the trainer found {@code d} ready batches when it asked for one, a copy} */
    @Override
    public long[] depthAtTake() {
        return depthAtTake.clone();
    }

    /** {@return each tier's hits, in tier order, a copy} */
    @Override
    public long[] tierHits() {
        return tierHits.clone();
    }

    /** {@return the counters accumulated since {@code earlier}} (queue depth: the current one) */
    public LoaderStats minus(LoaderStats earlier) {
        long[] depth = depthAtTake.clone();
        for (int i = 0; i < Math.min(depth.length, earlier.depthAtTake.length); i++) {
            depth[i] -= earlier.depthAtTake[i];
        }
        long[] hits = tierHits.clone();
        for (int i = 0; i < Math.min(hits.length, earlier.tierHits.length); i++) {
            hits[i] -= earlier.tierHits[i];
        }
        return new LoaderStats(
                samples - earlier.samples,
                skipped - earlier.skipped,
                failed - earlier.failed,
                batches - earlier.batches,
                bytes - earlier.bytes,
                dataWaitNanos - earlier.dataWaitNanos,
                queueDepth,
                depth,
                hits,
                tierNames,
                misses - earlier.misses,
                originReads - earlier.originReads,
                originBytes - earlier.originBytes,
                elapsedNanos - earlier.elapsedNanos);
    }

    /**
     * {@return the share of {@link #elapsedNanos()} the trainer spent blocked waiting for batches, in [0, 1]}: for
     * {@code epoch.stats()}, the epoch's data-wait ratio, the figure to watch (a trainer fed in time stays near 0); 0
     * when no time elapsed
     */
    public double dataWaitRatio() {
        return elapsedNanos <= 0 ? 0 : Math.min(1.0, (double) dataWaitNanos / elapsedNanos);
    }

    /** {@return the share of sample reads served by tier {@code tier}: its hits over all hits and misses} */
    public double hitRatio(int tier) {
        long total = misses;
        for (long h : tierHits) {
            total += h;
        }
        return total == 0 ? 0 : (double) tierHits[tier] / total;
    }

    /** {@return the share of sample reads served by any tier} */
    public double hitRatio() {
        long hits = 0;
        for (long h : tierHits) {
            hits += h;
        }
        return hits + misses == 0 ? 0 : (double) hits / (hits + misses);
    }

    /** {@return the mean number of ready batches the trainer found when it asked for one} */
    public double meanDepthAtTake() {
        long n = 0;
        long sum = 0;
        for (int d = 0; d < depthAtTake.length; d++) {
            n += depthAtTake[d];
            sum += d * depthAtTake[d];
        }
        return n == 0 ? 0 : (double) sum / n;
    }

    /** Equal when every figure is, arrays compared by content. */
    @Override
    public boolean equals(Object o) {
        return o instanceof LoaderStats x
                && samples == x.samples
                && skipped == x.skipped
                && failed == x.failed
                && batches == x.batches
                && bytes == x.bytes
                && dataWaitNanos == x.dataWaitNanos
                && queueDepth == x.queueDepth
                && Arrays.equals(depthAtTake, x.depthAtTake)
                && Arrays.equals(tierHits, x.tierHits)
                && tierNames.equals(x.tierNames)
                && misses == x.misses
                && originReads == x.originReads
                && originBytes == x.originBytes
                && elapsedNanos == x.elapsedNanos;
    }

    @Override
    public int hashCode() {
        return Objects.hash(
                samples,
                skipped,
                failed,
                batches,
                bytes,
                dataWaitNanos,
                queueDepth,
                Arrays.hashCode(depthAtTake),
                Arrays.hashCode(tierHits),
                tierNames,
                misses,
                originReads,
                originBytes,
                elapsedNanos);
    }

    /** Every figure, arrays by content: {@code tierHits} per tier name. */
    @Override
    public String toString() {
        StringBuilder tiers = new StringBuilder();
        for (int i = 0; i < tierHits.length; i++) {
            tiers.append(i == 0 ? "" : ", ")
                    .append(tierNames.get(i))
                    .append('=')
                    .append(tierHits[i]);
        }
        return "LoaderStats[samples=" + samples + ", skipped=" + skipped + ", failed=" + failed + ", batches="
                + batches + ", bytes=" + bytes + ", dataWaitNanos=" + dataWaitNanos + ", queueDepth=" + queueDepth
                + ", depthAtTake=" + Arrays.toString(depthAtTake) + ", tierHits={" + tiers + "}, misses=" + misses
                + ", originReads=" + originReads + ", originBytes=" + originBytes + ", elapsedNanos=" + elapsedNanos
                + "]";
    }
}
