// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import java.util.ArrayDeque;

/** First in, first out: a hit does not reorder; a miss evicts the oldest insert. Not thread-safe. */
final class FifoSubject implements Subject {
    private final int capacity;
    private final boolean[] resident;
    private final ArrayDeque<Integer> order = new ArrayDeque<>();

    FifoSubject(int capacity, int[][] trace) {
        this.capacity = Config.checkCapacity(capacity);
        this.resident = new boolean[Trace.idSpace(trace)];
    }

    @Override
    public String name() {
        return "FIFO";
    }

    @Override
    public void startEpoch(int epoch) {}

    @Override
    public boolean access(int item) {
        if (resident[item]) {
            return true;
        }
        if (order.size() == capacity) {
            resident[order.removeFirst()] = false;
        }
        order.addLast(item);
        resident[item] = true;
        return false;
    }

    @Override
    public int ceilingItems() {
        return capacity;
    }
}
