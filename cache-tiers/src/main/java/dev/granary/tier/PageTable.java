// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.util.function.LongUnaryOperator;

/**
 * The open-addressing table both tiers find their pages in ({@link DiskIndex}, {@link MemorySlots}; decisions 0007
 * and 0011): non-zero {@code long} entries in a {@link ChunkedLongs}, linear probing, no tombstones (backward-shift
 * deletion), any capacity (the owner grows it by half at a load of 0.8). Each owner encodes its own entries (a
 * reference to the page's row and a tag of its hash) and keeps its own lookup, which compares rows it alone knows;
 * what they share is here: the hash of a page, where an entry lives, and inserting, rehashing and deleting.
 *
 * <p>An entry's home is taken from the hash's low {@code 64 - tagBits} bits; the high {@code tagBits} bits are left
 * for the owner's tag. Not thread-safe: owners call it under their write lock.
 */
final class PageTable {

    private PageTable() {}

    /** {@return the hash of a page: its object's id, offset and length} */
    static long hash(int object, long offset, int length) {
        long h = object * 0x9E3779B97F4A7C15L + offset * 0xC2B2AE3D27D4EB4FL + length;
        h ^= h >>> 31;
        h *= 0xD6E8FEB86659FD93L;
        h ^= h >>> 32;
        return h;
    }

    /** {@return the home of a hash in a table of {@code capacity} entries} */
    static long home(long h, int tagBits, long capacity) {
        return Math.unsignedMultiplyHigh(h << tagBits, capacity);
    }

    /** {@return the entry after {@code i}, cyclically} */
    static long next(long i, long capacity) {
        return i + 1 == capacity ? 0 : i + 1;
    }

    /** Puts {@code entry} (hash {@code h}) at the first free place from its home. The table must have one. */
    static void insert(ChunkedLongs t, long entry, long h, int tagBits) {
        long capacity = t.length();
        long i = home(h, tagBits, capacity);
        while (t.get(i) != 0) {
            i = next(i, capacity);
        }
        t.set(i, entry);
    }

    /** {@return a table of {@code capacity} entries holding every entry of {@code old}}, {@code hashOf} of each */
    static ChunkedLongs rehash(ChunkedLongs old, long capacity, int tagBits, LongUnaryOperator hashOf) {
        ChunkedLongs fresh = new ChunkedLongs(capacity);
        for (long i = 0; i < old.length(); i++) {
            long entry = old.get(i);
            if (entry != 0) {
                insert(fresh, entry, hashOf.applyAsLong(entry), tagBits);
            }
        }
        return fresh;
    }

    /**
     * Takes {@code entry} (hash {@code h}) out, shifting the entries after it back (Knuth, Algorithm R), so probe
     * chains stay as short as the load.
     *
     * @return whether the entry was there
     */
    static boolean delete(ChunkedLongs t, long entry, long h, int tagBits, LongUnaryOperator hashOf) {
        long capacity = t.length();
        long i = home(h, tagBits, capacity);
        while (t.get(i) != entry) {
            if (t.get(i) == 0) {
                return false;
            }
            i = next(i, capacity);
        }
        long hole = i;
        for (long j = next(hole, capacity); t.get(j) != 0; j = next(j, capacity)) {
            long home = home(hashOf.applyAsLong(t.get(j)), tagBits, capacity);
            // t[j] may fill the hole unless its home lies cyclically in (hole, j]
            if (Math.floorMod(j - home, capacity) >= Math.floorMod(j - hole, capacity)) {
                t.set(hole, t.get(j));
                hole = j;
            }
        }
        t.set(hole, 0);
        return true;
    }
}
