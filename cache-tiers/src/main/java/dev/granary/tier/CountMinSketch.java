// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

/**
 * A 4-bit count-min sketch of how often pages were read or inserted (TinyLFU's frequency filter, as in Caffeine's
 * {@code FrequencySketch}): 16 counters of 4 bits per {@code long}, four counters per page hash, the estimate the
 * smallest of the four, capped at 15. When as many increments as ten times the counters' number of pages have been
 * made, every counter is halved, so old popularity fades.
 *
 * <p>Sized to half a {@code long} per page held (rounded up to a power of two, at least 64 longs): 4-8 bytes a page.
 * Grown (and reset, as Caffeine does) when the number of pages outgrows it. In chunks of 32 Ki longs (256 KiB), so
 * no part is large enough for G1 to give it whole regions of its own.
 *
 * <p>Not thread-safe: the owner's lock guards it.
 */
final class CountMinSketch implements SlotPolicy.Frequencies {

    private static final int SHIFT = 15;
    private static final int CHUNK = 1 << SHIFT;
    private static final long RESET_MASK = 0x7777_7777_7777_7777L;
    private static final long[] SEEDS = {
        0xC3A5C85C97CB3127L, 0xB492B66FBE98F273L, 0x9AE16A3B2F90404FL, 0xCBF29CE484222325L
    };

    private long[][] table;
    private int mask;
    private long additions;
    private long sampleSize;

    CountMinSketch() {
        allocate(64);
    }

    private void allocate(int longs) {
        int chunks = Math.max(1, longs >>> SHIFT);
        table = new long[chunks][Math.min(longs, CHUNK)];
        mask = longs - 1;
        additions = 0;
        sampleSize = 10L * 2 * longs;
    }

    /** {@return the number of {@code long}s of counters; for tests and sizing} */
    int longs() {
        return mask + 1;
    }

    @Override
    public void ensureCapacity(int pages) {
        int half = Math.max(64, pages / 2);
        int wanted = Integer.highestOneBit(half - 1) << 1;
        if (wanted > mask + 1) {
            allocate(wanted);
        }
    }

    private static long spread(long hash, int i) {
        long h = (hash + SEEDS[i]) * 0x9E3779B97F4A7C15L;
        return h ^ (h >>> 29);
    }

    @Override
    public int frequency(long hash) {
        int min = 15;
        for (int i = 0; i < 4; i++) {
            long h = spread(hash, i);
            int at = (int) h & mask;
            int shift = ((int) (h >>> 40) & 15) << 2;
            min = Math.min(min, (int) (table[at >>> SHIFT][at & (CHUNK - 1)] >>> shift) & 15);
        }
        return min;
    }

    @Override
    public void increment(long hash) {
        boolean added = false;
        for (int i = 0; i < 4; i++) {
            long h = spread(hash, i);
            int at = (int) h & mask;
            int shift = ((int) (h >>> 40) & 15) << 2;
            long[] chunk = table[at >>> SHIFT];
            int j = at & (CHUNK - 1);
            if (((chunk[j] >>> shift) & 15) < 15) {
                chunk[j] += 1L << shift;
                added = true;
            }
        }
        if (added && ++additions >= sampleSize) {
            for (long[] chunk : table) {
                for (int j = 0; j < chunk.length; j++) {
                    chunk[j] = (chunk[j] >>> 1) & RESET_MASK;
                }
            }
            additions /= 2;
        }
    }
}
