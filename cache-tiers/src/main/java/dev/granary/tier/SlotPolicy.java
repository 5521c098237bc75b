// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.util.Arrays;

/**
 * The memory tier's default policy, W-TinyLFU weighted by bytes (Caffeine's design), over the tier's {@code int} slot
 * ids instead of keys: no object per page. A small LRU <em>window</em> (1 % of the capacity) takes every new page;
 * a page pushed out of the window while the tier is full is admitted into the main region only if a
 * {@linkplain Frequencies frequency sketch} says it is read more often than the main region's victim (else the
 * candidate itself goes); the main region is a segmented LRU, <em>probation</em> and <em>protected</em> (80 % of the
 * main region), a hit in probation promoting a page to protected.
 *
 * <h2>Layout</h2>
 * The three LRU lists are intrusive and doubly linked through two {@code int} columns indexed by slot
 * ({@code prev}, {@code next}; -1 ends a list) and one {@code byte} column naming the list a slot is in: 9 bytes a
 * slot, in chunks of the tier's slot chunk size. Weights are not stored here: {@link Slots#weight} reads them from
 * the tier's rows.
 *
 * <h2>Thread safety</h2>
 * None: the tier calls it under its write lock. Hits reach it through the tier's read buffer, drained under that lock
 * ({@link MemorySlots}).
 */
final class SlotPolicy {

    static final byte NONE = 0;
    static final byte WINDOW = 1;
    static final byte PROBATION = 2;
    static final byte PROTECTED = 3;

    /** What the policy needs of the tier. */
    interface Slots {
        /** {@return the bytes slot {@code slot} occupies} */
        long weight(int slot);

        /** {@return the hash of the page in slot {@code slot}, the key of its frequency} */
        long hash(int slot);

        /** Removes the page in slot {@code slot}, which the policy has already unlinked. */
        void evicted(int slot);
    }

    /** How often pages were read: a count-min sketch, or an exact count in tests. */
    interface Frequencies {
        void increment(long hash);

        int frequency(long hash);

        /** Called as the number of pages held grows. */
        void ensureCapacity(int pages);
    }

    private final int shift;
    private final int chunkMask;
    private final Slots slots;
    private final Frequencies frequencies;
    private final long capacity;
    private final long windowMax;
    private final long protectedMax;
    private int[][] prev = new int[0][];
    private int[][] next = new int[0][];
    private byte[][] region = new byte[0][];
    private final int[] head = {-1, -1, -1, -1};
    private final int[] tail = {-1, -1, -1, -1};
    private final long[] weight = new long[4];
    private int size;

    /**
     * @param capacity    the bound on the total weight, in bytes
     * @param chunkShift  the slots per column chunk, as a power of two
     */
    SlotPolicy(long capacity, int chunkShift, Slots slots, Frequencies frequencies) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("policy capacity: " + capacity + " bytes (expected: > 0)");
        }
        this.capacity = capacity;
        this.windowMax = Math.max(1, capacity / 100);
        this.protectedMax = (capacity - windowMax) / 5 * 4;
        this.shift = chunkShift;
        this.chunkMask = (1 << chunkShift) - 1;
        this.slots = slots;
        this.frequencies = frequencies;
    }

    /** Makes room in the columns for {@code chunks} chunks of slots. */
    void grow(int chunks) {
        int had = prev.length;
        if (chunks <= had) {
            return;
        }
        prev = Arrays.copyOf(prev, chunks);
        next = Arrays.copyOf(next, chunks);
        region = Arrays.copyOf(region, chunks);
        for (int c = had; c < chunks; c++) {
            prev[c] = new int[chunkMask + 1];
            next[c] = new int[chunkMask + 1];
            region[c] = new byte[chunkMask + 1];
        }
    }

    int size() {
        return size;
    }

    /** {@return the total weight of the pages held} */
    long weight() {
        return weight[WINDOW] + weight[PROBATION] + weight[PROTECTED];
    }

    long weight(byte list) {
        return weight[list];
    }

    byte region(int s) {
        return region[s >>> shift][s & chunkMask];
    }

    /** {@return the slots of one list, least recently used first; for tests} */
    int[] list(byte list) {
        int[] out = new int[size];
        int n = 0;
        for (int s = head[list]; s >= 0; s = next(s)) {
            out[n++] = s;
        }
        return Arrays.copyOf(out, n);
    }

    private int next(int s) {
        return next[s >>> shift][s & chunkMask];
    }

    private void link(byte list, int s) {
        int c = s >>> shift;
        int i = s & chunkMask;
        int t = tail[list];
        prev[c][i] = t;
        next[c][i] = -1;
        region[c][i] = list;
        if (t < 0) {
            head[list] = s;
        } else {
            next[t >>> shift][t & chunkMask] = s;
        }
        tail[list] = s;
        weight[list] += slots.weight(s);
    }

    private void unlink(int s) {
        int c = s >>> shift;
        int i = s & chunkMask;
        byte list = region[c][i];
        int p = prev[c][i];
        int n = next[c][i];
        if (p < 0) {
            head[list] = n;
        } else {
            next[p >>> shift][p & chunkMask] = n;
        }
        if (n < 0) {
            tail[list] = p;
        } else {
            prev[n >>> shift][n & chunkMask] = p;
        }
        region[c][i] = NONE;
        weight[list] -= slots.weight(s);
    }

    /** A page entered the tier: into the window, then the regions are brought back within their bounds. */
    void insert(int s) {
        if (region(s) != NONE) {
            return;
        }
        frequencies.increment(slots.hash(s));
        link(WINDOW, s);
        size++;
        frequencies.ensureCapacity(size);
        balance();
    }

    /** A page was read. */
    void access(int s) {
        byte list = region(s);
        if (list == NONE) {
            return; // a stale record of a page that left
        }
        frequencies.increment(slots.hash(s));
        switch (list) {
            case WINDOW -> {
                unlink(s);
                link(WINDOW, s);
            }
            case PROBATION -> {
                unlink(s);
                link(PROTECTED, s);
                while (weight[PROTECTED] > protectedMax && head[PROTECTED] != s) {
                    int demoted = head[PROTECTED];
                    unlink(demoted);
                    link(PROBATION, demoted);
                }
            }
            default -> {
                unlink(s);
                link(PROTECTED, s);
            }
        }
    }

    /** The tier removed a page on its own (invalidation, a dead page): forget it. */
    void remove(int s) {
        if (region(s) != NONE) {
            unlink(s);
            size--;
        }
    }

    /**
     * Evicts pages, coldest first (probation, then window, then protected, each least recently used first), until
     * {@code bytes} of weight went.
     *
     * @return the weight evicted
     */
    long evict(long bytes) {
        long evicted = 0;
        while (evicted < bytes) {
            int s = coldest();
            if (s < 0) {
                break;
            }
            evicted += slots.weight(s);
            evict(s);
        }
        return evicted;
    }

    private int coldest() {
        if (head[PROBATION] >= 0) {
            return head[PROBATION];
        }
        if (head[WINDOW] >= 0) {
            return head[WINDOW];
        }
        return head[PROTECTED];
    }

    private void evict(int s) {
        unlink(s);
        size--;
        slots.evicted(s);
    }

    /**
     * Moves window overflow into the main region, each candidate against the main region's victim when the tier is
     * full, then evicts coldest first while the total is above the capacity.
     */
    private void balance() {
        while (weight[WINDOW] > windowMax && head[WINDOW] >= 0) {
            int candidate = head[WINDOW];
            unlink(candidate);
            if (weight() + slots.weight(candidate) <= capacity) {
                link(PROBATION, candidate);
                continue;
            }
            int victim = head[PROBATION] >= 0 ? head[PROBATION] : head[PROTECTED];
            if (victim < 0) {
                link(PROBATION, candidate);
            } else if (frequencies.frequency(slots.hash(candidate)) > frequencies.frequency(slots.hash(victim))) {
                evict(victim);
                link(PROBATION, candidate);
            } else {
                size--;
                slots.evicted(candidate);
            }
        }
        while (weight() > capacity) {
            evict(coldest());
        }
    }

    @Override
    public String toString() {
        return "SlotPolicy[window=" + weight[WINDOW] + ", probation=" + weight[PROBATION] + ", protected="
                + weight[PROTECTED] + ", capacity=" + capacity + ", pages=" + size + "]";
    }
}
