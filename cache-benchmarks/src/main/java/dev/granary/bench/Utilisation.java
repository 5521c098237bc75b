// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

/**
 * Accelerator utilisation as MLPerf Storage defines it, the emulated accelerator that produces it, and the sweep's
 * verdict ({@link MlperfBenchmark}).
 *
 * <p>MLPerf Storage (rules, 3.3.2 "trainingAcceleratorUtilizationCheck"): {@code AU = total_compute_time /
 * total_benchmark_running_time}, where the compute time is the emulated one (batches × the workload's
 * {@code computation_time}) and the I/O of the first step is excluded; a run passes at AU ≥ 90 % for ResNet-50 and
 * 3D U-Net. Here, per emulated accelerator: compute = batches × the nominal compute time per batch, wall = from the
 * moment its first batch arrived to the end of its last compute; a measurement's AU is the mean over its accelerators
 * (MLPerf reports the mean, {@code train_au_mean_percentage}); the minimum is reported beside it.
 *
 * <p>Stateless helpers and immutable records, except {@link Sweep}, which one thread fills.
 */
final class Utilisation {

    /** MLPerf Storage's pass line for ResNet-50 and 3D U-Net. */
    static final double PASS = 0.90;

    private Utilisation() {}

    /**
     * One emulated accelerator's outcome.
     *
     * @param batches      batches it computed on
     * @param computeNanos nominal compute time of those batches
     * @param wallNanos    first batch's arrival to the end of the last compute
     * @param waitNanos    time it waited for batches after the first
     */
    record Accelerator(int batches, long computeNanos, long wallNanos, long waitNanos) {
        Accelerator {
            if (batches < 1 || computeNanos < 0 || wallNanos <= 0 || waitNanos < 0) {
                throw new IllegalArgumentException("accelerator: " + batches + " batches, compute " + computeNanos
                        + " ns, wall " + wallNanos + " ns, wait " + waitNanos + " ns (expected: >= 1 batch, wall > 0,"
                        + " others >= 0)");
            }
        }

        /** {@return compute time over wall time} */
        double au() {
            return (double) computeNanos / wallNanos;
        }
    }

    /**
     * A measurement: every accelerator of one count, and the bytes delivered to them.
     *
     * @param accelerators one entry per accelerator, not empty
     * @param bytes        sample bytes delivered in all
     * @param wallNanos    from the start gate to the last accelerator's end
     * @param note         what the subject adds (residency, tier split), may be empty
     */
    record Measurement(List<Accelerator> accelerators, long bytes, long wallNanos, String note) {
        Measurement {
            if (accelerators.isEmpty()) {
                throw new IllegalArgumentException("accelerators: none (expected: at least one)");
            }
            accelerators = List.copyOf(accelerators);
        }

        double meanAu() {
            return accelerators.stream().mapToDouble(Accelerator::au).average().orElseThrow();
        }

        double minAu() {
            return accelerators.stream().mapToDouble(Accelerator::au).min().orElseThrow();
        }

        boolean passes() {
            return meanAu() >= PASS;
        }

        double mbPerSecond() {
            return bytes / 1e6 / (wallNanos / 1e9);
        }
    }

    /**
     * {@return the nominal compute time per batch that makes one accelerator need {@code mbPerSecond} (10^6 B/s)}
     *
     * @throws IllegalArgumentException if an argument is not positive
     */
    static long computeNanos(int batch, long sampleBytes, double mbPerSecond) {
        if (batch < 1 || sampleBytes < 1 || !(mbPerSecond > 0)) {
            throw new IllegalArgumentException("profile: batch " + batch + ", sample " + sampleBytes + " B, "
                    + mbPerSecond + " MB/s (expected: all > 0)");
        }
        return Math.round(batch * (double) sampleBytes / (mbPerSecond * 1e6) * 1e9);
    }

    /**
     * {@return batches per accelerator for a measurement: {@code maxSteps}, or fewer so that the accelerators' reads
     * stay within one pass over the dataset (each rank's part holds {@code samples / accelerators})}
     */
    static int steps(int samples, int accelerators, int batch, int maxSteps) {
        if (samples < 1 || accelerators < 1 || batch < 1 || maxSteps < 1) {
            throw new IllegalArgumentException("steps: " + samples + " samples, " + accelerators + " accelerators,"
                    + " batch " + batch + ", max " + maxSteps + " (expected: all >= 1)");
        }
        return Math.min(maxSteps, samples / accelerators / batch);
    }

    /** Where an accelerator gets its batches. */
    @FunctionalInterface
    interface BatchSource {
        /** {@return the next batch's sample count once it is ready, or -1 at the end} */
        int next() throws Exception;
    }

    /**
     * Runs one emulated accelerator: takes up to {@code steps} batches, and for each "computes" (sleeps) exactly
     * {@code computeNanos} measured on the clock (a sleep that ends early is resumed; one that overruns counts as
     * wall time, as a late kernel launch would).
     *
     * @return its outcome, or null if the source ended before the first batch
     */
    static Accelerator run(BatchSource source, int steps, long computeNanos) throws Exception {
        long first = -1;
        long wait = 0;
        int batches = 0;
        while (batches < steps) {
            long w0 = System.nanoTime();
            int n = source.next();
            long w1 = System.nanoTime();
            if (n < 0) {
                break;
            }
            if (batches == 0) {
                first = w1;
            } else {
                wait += w1 - w0;
            }
            compute(computeNanos);
            batches++;
        }
        if (batches == 0) {
            return null;
        }
        return new Accelerator(batches, batches * computeNanos, Math.max(1, System.nanoTime() - first), wait);
    }

    /** Sleeps {@code nanos} of wall time at least. */
    static void compute(long nanos) {
        long end = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    /**
     * The sweep of one subject over increasing accelerator counts: records each count's verdict, stops after
     * {@code patience} failures in a row, and names the largest count that passed.
     */
    static final class Sweep {
        private final int patience;
        private final List<int[]> results = new ArrayList<>(); // {count, passed}
        private int failuresInARow;
        private boolean capped;

        Sweep(int patience) {
            if (patience < 1) {
                throw new IllegalArgumentException("patience: " + patience + " (expected: >= 1)");
            }
            this.patience = patience;
        }

        /**
         * Records a count's verdict.
         *
         * @throws IllegalArgumentException if the count does not increase
         * @throws IllegalStateException    if the sweep is done
         */
        void record(int count, boolean passed) {
            if (done()) {
                throw new IllegalStateException("sweep: done after " + patience + " failures in a row");
            }
            if (!results.isEmpty() && count <= results.getLast()[0]) {
                throw new IllegalArgumentException("count: " + count + " (expected: > " + results.getLast()[0] + ")");
            }
            results.add(new int[] {count, passed ? 1 : 0});
            failuresInARow = passed ? 0 : failuresInARow + 1;
        }

        /** Marks that the sweep ended at the largest count tried without failing enough to stop (a lower bound). */
        void cap() {
            capped = !done();
        }

        boolean done() {
            return failuresInARow >= patience;
        }

        /** {@return the largest count that passed, 0 if none} */
        int largestPassing() {
            int best = 0;
            for (int[] r : results) {
                if (r[1] == 1) {
                    best = r[0];
                }
            }
            return best;
        }

        /** {@return whether a count passed above one that failed (noise, or a non-monotonic subject)} */
        boolean passAboveFailure() {
            boolean failed = false;
            for (int[] r : results) {
                if (r[1] == 0) {
                    failed = true;
                } else if (failed) {
                    return true;
                }
            }
            return false;
        }

        /** {@return e.g. {@code "12"}, {@code "64+"} (never failed up to the cap) or {@code "0"}} */
        String verdict() {
            int best = largestPassing();
            return best
                    + (capped && !results.isEmpty() && best == results.getLast()[0] ? "+" : "")
                    + (passAboveFailure() ? "*" : "");
        }
    }
}
