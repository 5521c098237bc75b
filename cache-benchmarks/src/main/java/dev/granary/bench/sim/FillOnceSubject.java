// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

/**
 * Admits while there is room, then refuses every miss: the resident set is the first {@code C} items seen. Not
 * thread-safe.
 */
final class FillOnceSubject implements Subject {
    private final int capacity;
    private final boolean[] resident;
    private int size;

    FillOnceSubject(int capacity, int[][] trace) {
        this.capacity = Config.checkCapacity(capacity);
        this.resident = new boolean[Trace.idSpace(trace)];
    }

    @Override
    public String name() {
        return "never-evict once full";
    }

    @Override
    public void startEpoch(int epoch) {}

    @Override
    public boolean access(int item) {
        if (resident[item]) {
            return true;
        }
        if (size < capacity) {
            resident[item] = true;
            size++;
        }
        return false;
    }

    @Override
    public int ceilingItems() {
        return capacity;
    }
}
