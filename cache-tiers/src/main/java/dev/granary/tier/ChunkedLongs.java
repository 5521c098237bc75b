// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.util.Arrays;

/**
 * A {@code long} array of any length held as chunks of 64 Ki longs (512 KiB). Two reasons: G1 gives an array of half
 * a region or more (1 MiB with the usual 2 MiB regions) whole regions of its own, so a 1.1 MiB table would hold
 * 2 MiB of heap — at 100 000 pages, 10-20 bytes a page of nothing; and growing copies only the last chunk, not the
 * whole array. Only the last chunk is ever shorter than 64 Ki longs.
 *
 * <p>Not thread-safe: the owner's lock guards growth; an element read under an optimistic read may be stale or throw
 * {@link ArrayIndexOutOfBoundsException}, which the owner's validation turns into a retry.
 */
final class ChunkedLongs {

    static final int BITS = 16;
    static final int SIZE = 1 << BITS;
    private static final int MASK = SIZE - 1;
    private static final long[][] NONE = new long[0][];

    private long[][] chunks = NONE;
    private long length;

    /** An array of {@code length} zeros. */
    ChunkedLongs(long length) {
        resize(length);
    }

    long length() {
        return length;
    }

    long get(long i) {
        return chunks[(int) (i >>> BITS)][(int) i & MASK];
    }

    void set(long i, long value) {
        chunks[(int) (i >>> BITS)][(int) i & MASK] = value;
    }

    /** Sets to {@code value} the bits of element {@code i} that {@code mask} selects, keeping the others. */
    void merge(long i, long mask, long value) {
        long[] chunk = chunks[(int) (i >>> BITS)];
        int at = (int) i & MASK;
        chunk[at] = (chunk[at] & ~mask) | (value & mask);
    }

    /** Makes the array exactly {@code newLength} long, keeping the elements below it. */
    void resize(long newLength) {
        int full = (int) (newLength >>> BITS);
        int rest = (int) newLength & MASK;
        int count = full + (rest > 0 ? 1 : 0);
        long[][] grown = Arrays.copyOf(chunks, count);
        for (int c = 0; c < count; c++) {
            int want = c < full ? SIZE : rest;
            long[] chunk = grown[c];
            if (chunk == null) {
                grown[c] = new long[want];
            } else if (chunk.length != want) {
                grown[c] = Arrays.copyOf(chunk, want);
            }
        }
        chunks = grown;
        length = newLength;
    }
}
