// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import dev.granary.loader.Sampler;
import java.io.IOException;

/**
 * The epoch-shuffled trace and its replay: epoch {@code e} is {@code Sampler.shuffled(N, seed).epoch(e)}, the
 * loader's own order, as one {@code int[]} of item ids per epoch. Stateless; thread-safe.
 */
final class Trace {

    private Trace() {}

    /** {@return the trace: epoch {@code e} is {@code Sampler.shuffled(items, seed).epoch(e)}} */
    static int[][] shuffled(int items, int epochs, long seed) {
        Sampler sampler = Sampler.shuffled(items, seed);
        int[][] trace = new int[epochs][];
        for (int e = 0; e < epochs; e++) {
            trace[e] = sampler.epoch(e);
        }
        return trace;
    }

    /** {@return the largest item id in {@code trace}, plus one} @throws IllegalArgumentException on a negative id */
    static int idSpace(int[][] trace) {
        int max = -1;
        for (int[] epoch : trace) {
            for (int item : epoch) {
                Config.require(item >= 0, "item: " + item + " (expected: >= 0)");
                max = Math.max(max, item);
            }
        }
        return max + 1;
    }

    /** Replays {@code trace} against {@code subject}. {@return the hits of each epoch} */
    static long[] replay(Subject subject, int[][] trace) throws IOException {
        long[] hits = new long[trace.length];
        for (int e = 0; e < trace.length; e++) {
            hits[e] = replayEpoch(subject, trace, e);
        }
        return hits;
    }

    /** Starts epoch {@code epoch} of {@code subject}, replays it and ends it. {@return its hits} */
    static long replayEpoch(Subject subject, int[][] trace, int epoch) throws IOException {
        subject.startEpoch(epoch);
        long hits = 0;
        for (int item : trace[epoch]) {
            if (subject.access(item)) {
                hits++;
            }
        }
        subject.endEpoch(epoch);
        return hits;
    }
}
