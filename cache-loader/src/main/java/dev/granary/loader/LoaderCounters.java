// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.concurrent.atomic.LongAdder;

/**
 * What a {@link DataLoader}'s epochs count, for {@link LoaderStats}: filled by the epochs' threads, read by
 * {@link DataLoader#stats()}. Also the running mean of sample sizes, by which the read-ahead reserves bytes for
 * samples whose size the dataset does not know.
 *
 * <p>Thread-safe: every counter is a {@link LongAdder}.
 */
final class LoaderCounters {

    final LongAdder samples = new LongAdder();
    final LongAdder skipped = new LongAdder();
    final LongAdder failed = new LongAdder();
    final LongAdder batches = new LongAdder();
    final LongAdder bytes = new LongAdder();
    final LongAdder dataWait = new LongAdder();
    private final LongAdder[] depthAtTake;
    private final LongAdder observedBytes = new LongAdder();
    private final LongAdder observedCount = new LongAdder();
    private final java.util.concurrent.atomic.AtomicBoolean fellBack = new java.util.concurrent.atomic.AtomicBoolean();

    /** @param prefetch the deepest the ready queue gets */
    LoaderCounters(int prefetch) {
        depthAtTake = new LongAdder[prefetch + 1];
        for (int i = 0; i < depthAtTake.length; i++) {
            depthAtTake[i] = new LongAdder();
        }
    }

    /** The trainer got a batch of {@code size} samples after waiting {@code waitNanos}, finding {@code depth} ready. */
    void delivered(int size, long waitNanos, int depth) {
        samples.add(size);
        batches.increment();
        took(waitNanos, depth);
    }

    /** The trainer got a failed batch after waiting {@code waitNanos}, finding {@code depth} ready. */
    void took(long waitNanos, int depth) {
        dataWait.add(waitNanos);
        depthAtTake[Math.min(depth, depthAtTake.length - 1)].increment();
    }

    /** A sample failed: skipped and counted, or failing its batch. */
    void sampleFailed(boolean skippedIt) {
        (skippedIt ? skipped : failed).increment();
    }

    /** A sample of {@code sampleBytes} was read. */
    void observed(long sampleBytes) {
        observedBytes.add(sampleBytes);
        observedCount.increment();
    }

    /** {@return the mean size of the samples read so far, or -1 before the first} */
    long meanSampleBytes() {
        long n = observedCount.sum();
        return n == 0 ? -1 : observedBytes.sum() / n;
    }

    /**
     * {@return true the first time an epoch of this loader could not stream its shards, false afterwards}: the
     * reason is logged once at INFO, not every epoch
     */
    boolean firstFallback() {
        return fellBack.compareAndSet(false, true);
    }

    /** {@return how often the trainer found {@code d} batches ready, for each {@code d}} */
    long[] depthAtTake() {
        long[] depth = new long[depthAtTake.length];
        for (int i = 0; i < depth.length; i++) {
            depth[i] = depthAtTake[i].sum();
        }
        return depth;
    }
}
