// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import java.util.Arrays;

/**
 * Belady's MIN over the whole trace. Residents sit in a binary max-heap keyed by their next use (a position in the
 * flattened trace; {@link #NEVER} if none), with each item's heap slot indexed so that a hit re-keys it in
 * O(log C). Invariant: {@code slot[heap[i]] == i} for {@code i < size}, and {@code slot[x] == -1} for every item
 * {@code x} not resident. It is the optimum (free to bypass), so every other subject's hits are at most its. Not
 * thread-safe.
 */
final class BeladyMinSubject implements Subject {
    private static final int NEVER = Integer.MAX_VALUE;

    private final int capacity;
    private final int[] flat;
    private final int[] nextUse;
    private final int[] heap;
    private final int[] key;
    private final int[] slot;
    private int size;
    private int position;

    BeladyMinSubject(int capacity, int[][] trace) {
        this.capacity = Config.checkCapacity(capacity);
        int ids = Trace.idSpace(trace);
        long length = 0;
        for (int[] epoch : trace) {
            length += epoch.length;
        }
        Config.require(length < NEVER, "trace: " + length + " accesses (expected: fewer than 2^31 - 1)");
        flat = new int[(int) length];
        int p = 0;
        for (int[] epoch : trace) {
            System.arraycopy(epoch, 0, flat, p, epoch.length);
            p += epoch.length;
        }
        nextUse = new int[flat.length];
        int[] seen = new int[ids];
        Arrays.fill(seen, NEVER);
        for (int i = flat.length - 1; i >= 0; i--) {
            nextUse[i] = seen[flat[i]];
            seen[flat[i]] = i;
        }
        heap = new int[Math.min(capacity, ids)];
        key = new int[ids];
        slot = new int[ids];
        Arrays.fill(slot, -1);
    }

    @Override
    public String name() {
        return "Belady MIN";
    }

    @Override
    public void startEpoch(int epoch) {}

    @Override
    public int ceilingItems() {
        return capacity;
    }

    @Override
    public boolean access(int item) {
        int p = position++;
        if (p >= flat.length || flat[p] != item) {
            throw new IllegalStateException("access " + p + ": item " + item + " (expected: the trace's "
                    + (p < flat.length ? "item " + flat[p] : "end") + ")");
        }
        int next = nextUse[p];
        int s = slot[item];
        if (s >= 0) {
            key[item] = next; // later than p, the old key: the item can only move up
            siftUp(s);
            return true;
        }
        if (size == heap.length) {
            int farthest = heap[0];
            if (next >= key[farthest]) {
                return false; // bypass: every resident is needed no later than this item
            }
            slot[farthest] = -1;
            key[item] = next;
            heap[0] = item;
            slot[item] = 0;
            siftDown(0);
        } else {
            key[item] = next;
            heap[size] = item;
            slot[item] = size;
            siftUp(size++);
        }
        return false;
    }

    private void siftUp(int i) {
        int item = heap[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (key[heap[parent]] >= key[item]) {
                break;
            }
            place(heap[parent], i);
            i = parent;
        }
        place(item, i);
    }

    private void siftDown(int i) {
        int item = heap[i];
        while (true) {
            int child = 2 * i + 1;
            if (child >= size) {
                break;
            }
            if (child + 1 < size && key[heap[child + 1]] > key[heap[child]]) {
                child++;
            }
            if (key[heap[child]] <= key[item]) {
                break;
            }
            place(heap[child], i);
            i = child;
        }
        place(item, i);
    }

    private void place(int item, int i) {
        heap[i] = item;
        slot[item] = i;
    }
}
