// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.internal.ReadAccount;
import java.util.concurrent.atomic.AtomicBoolean;
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
    /** Time the workers spent decoding, for the starvation alarm's figures. */
    final LongAdder decodeNanos = new LongAdder();
    /** What this loader's reads caused in the cache: its own tier hits, misses and origin reads. */
    final ReadAccount account;
    /** The time the loader's closed epochs were open, summed. */
    private final LongAdder closedEpochNanos = new LongAdder();
    /** When the open epoch started ({@link System#nanoTime()}), or {@link Long#MIN_VALUE} when none is open. */
    private volatile long epochStart = Long.MIN_VALUE;
    /** When the trainer started waiting for the batch it is waiting for; 0 when it is not waiting. */
    volatile long waitingSince;

    private final StarvationAlarm alarm;
    private final LongAdder[] depthAtTake;
    private final LongAdder observedBytes = new LongAdder();
    private final LongAdder observedCount = new LongAdder();
    private final AtomicBoolean fellBack = new AtomicBoolean();

    /**
     * @param prefetch the deepest the ready queue gets
     * @param account  the loader's account in its cache
     * @param alarm    the starvation alarm, fed at each batch the trainer takes
     */
    LoaderCounters(int prefetch, ReadAccount account, StarvationAlarm alarm) {
        this.account = account;
        this.alarm = alarm;
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
        waitingSince = 0;
        alarm.observe(System.nanoTime(), totals());
    }

    /** {@return the share of the alarm's window the trainer spent waiting, a wait in progress included} */
    double dataWaitRatio() {
        long since = waitingSince;
        return alarm.ratio(System.nanoTime(), totals(), since);
    }

    /** {@return whether the starvation alarm is raised} */
    boolean starved() {
        return alarm.starved();
    }

    /** {@return the cumulative figures the starvation alarm works on} */
    StarvationAlarm.Totals totals() {
        long takes = 0;
        for (LongAdder d : depthAtTake) {
            takes += d.sum();
        }
        return new StarvationAlarm.Totals(
                dataWait.sum(),
                decodeNanos.sum(),
                account.originReads(),
                account.originBytes(),
                account.originNanos(),
                takes,
                depthAtTake[0].sum());
    }

    /** An epoch was opened: its time counts from now. Epochs of one loader are open one at a time. */
    synchronized void epochStarted() {
        epochEnded(); // an epoch opened while another was still open: the earlier one's time stops here
        epochStart = System.nanoTime();
    }

    /** The open epoch closed (or was superseded): its time is added. Does nothing when none is open. */
    synchronized void epochEnded() {
        long start = epochStart;
        if (start != Long.MIN_VALUE) {
            closedEpochNanos.add(System.nanoTime() - start);
            epochStart = Long.MIN_VALUE;
        }
    }

    /** {@return the time epochs of this loader were open: the closed ones, and the open one until now} */
    long epochNanos() {
        long start = epochStart;
        return closedEpochNanos.sum() + (start == Long.MIN_VALUE ? 0 : Math.max(0, System.nanoTime() - start));
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
