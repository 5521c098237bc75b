// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The names of the objects a tier holds pages of — origin, object key, object version — each stored once and shared
 * by every page of that object version, under a dense {@code int} id. A page index then keeps four bytes per page for
 * its object instead of a {@code PageKey} and three strings.
 *
 * <p>Each id counts the pages that refer to it ({@link #acquire}, {@link #release}); the last release forgets the
 * name and frees the id for reuse. Origins are few and interned separately, so all objects of one origin share one
 * origin string. Per object the table costs its strings (shared with whoever else holds them), three references and
 * one {@code int} in columns, and one {@code long} slot of the open-addressing table (at a load of 3/8 to 3/4).
 *
 * <h2>Thread safety</h2>
 * Not thread-safe: the owner guards every mutation with its lock. {@link #find} may be called under an optimistic
 * read (a {@link java.util.concurrent.locks.StampedLock} stamp validated afterwards): it then reads without
 * synchronisation, so it may see torn state: it then returns {@code -1} or a wrong id, or throws a
 * {@link RuntimeException} (a table chunk seen before it was filled in), all of which the caller's validation
 * discards ({@code DiskIndex.lease} looks again under the read lock).
 */
final class ObjectNames {

    private String[] origins = new String[64];
    private String[] keys = new String[64];
    private String[] versions = new String[64];
    private int[] pages = new int[64];
    /**
     * Open addressing, linear probing: per slot the name's hash in the high half and id + 1 in the low half, 0 for
     * empty. The hash beside the id lets a probe pass over other names without touching their columns: a lookup
     * that misses (every name a recovery scan adds) costs the table's cache lines only. In chunks of 512 KiB
     * ({@link ChunkedLongs}): a plain array of a megabyte or more would take whole G1 regions.
     */
    private ChunkedLongs table = new ChunkedLongs(128);
    private int size;
    /** Ids below this have been handed out at least once. */
    private int highWater;
    private int[] freeIds = new int[16];
    private int freeCount;
    /** Origins, interned: few, so a plain map. */
    private final Map<String, String> originStrings = new HashMap<>();

    /** {@return the hash of a name, as {@link #find} expects it} */
    static int hash(String origin, String key, String version) {
        int h = key.hashCode() * 31 + version.hashCode();
        h = h * 31 + origin.hashCode();
        // MurmurHash3's finaliser: names such as train/000123.jpg with versions growing alongside have String hashes
        // in arithmetic progression, which linear probing in a power-of-two table turns into long clusters.
        h ^= h >>> 16;
        h *= 0x85EB_CA6B;
        h ^= h >>> 13;
        h *= 0xC2B2_AE35;
        return h ^ (h >>> 16);
    }

    /**
     * Looks a name up.
     *
     * @return its id, or {@code -1}
     */
    int find(String origin, String key, String version, int hash) {
        ChunkedLongs t = table;
        String[] k = keys;
        String[] v = versions;
        String[] o = origins;
        int mask = (int) t.length() - 1;
        for (int i = hash & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
            long entry = t.get(i);
            if (entry == 0) {
                return -1;
            }
            int id = (int) entry - 1;
            if ((int) (entry >>> 32) == hash && id >= 0 && id < k.length && id < v.length && id < o.length) {
                String ki = k[id];
                String vi = v[id];
                String oi = o[id];
                if (ki != null && vi != null && oi != null && ki.equals(key) && vi.equals(version)
                        && oi.equals(origin)) {
                    return id;
                }
            }
        }
        return -1;
    }

    /** Finds or adds a name and counts one more page of it; {@return its id} Under the owner's lock. */
    int acquire(String origin, String key, String version) {
        int hash = hash(origin, key, version);
        return acquire(find(origin, key, version, hash), origin, key, version, hash);
    }

    /**
     * Counts one more page of a name the caller just looked up under the same lock: {@code id} is what
     * {@link #find} answered ({@code -1} adds the name).
     */
    int acquire(int id, String origin, String key, String version, int hash) {
        if (id < 0) {
            id = add(origin, key, version, hash);
        }
        pages[id]++;
        return id;
    }

    /** Counts one page of {@code id} less; the last one forgets the name. Under the owner's lock. */
    void release(int id) {
        if (--pages[id] > 0) {
            return;
        }
        removeFromTable(id, hash(origins[id], keys[id], versions[id]));
        origins[id] = null;
        keys[id] = null;
        versions[id] = null;
        if (freeCount == freeIds.length) {
            freeIds = Arrays.copyOf(freeIds, freeCount * 2);
        }
        freeIds[freeCount++] = id;
        size--;
    }

    String origin(int id) {
        return origins[id];
    }

    String key(int id) {
        return keys[id];
    }

    String version(int id) {
        return versions[id];
    }

    /** {@return the number of names held} */
    int size() {
        return size;
    }

    private int add(String origin, String key, String version, int hash) {
        int id;
        if (freeCount > 0) {
            id = freeIds[--freeCount];
        } else {
            id = highWater++;
            if (id == keys.length) {
                int n = id + (id >> 1);
                origins = Arrays.copyOf(origins, n);
                keys = Arrays.copyOf(keys, n);
                versions = Arrays.copyOf(versions, n);
                pages = Arrays.copyOf(pages, n);
            }
        }
        origins[id] = originStrings.computeIfAbsent(origin, o -> o);
        keys[id] = key;
        versions[id] = version;
        pages[id] = 0;
        size++;
        if (size * 4L > table.length() * 3L) {
            rehash((int) table.length() * 2);
        }
        insert(table, id, hash);
        return id;
    }

    private static void insert(ChunkedLongs t, int id, int hash) {
        int mask = (int) t.length() - 1;
        int i = hash & mask;
        while (t.get(i) != 0) {
            i = (i + 1) & mask;
        }
        t.set(i, (long) hash << 32 | (id + 1));
    }

    private void rehash(int capacity) {
        ChunkedLongs fresh = new ChunkedLongs(capacity);
        ChunkedLongs old = table;
        for (long j = 0; j < old.length(); j++) {
            long entry = old.get(j);
            if (entry != 0) {
                insert(fresh, (int) entry - 1, (int) (entry >>> 32));
            }
        }
        table = fresh; // published after it is complete: an optimistic reader sees the old table or the new
    }

    /** Backward-shift deletion (Knuth, Algorithm R): no tombstones, probe chains stay short. */
    private void removeFromTable(int id, int hash) {
        ChunkedLongs t = table;
        int mask = (int) t.length() - 1;
        int i = hash & mask;
        long target = (long) hash << 32 | (id + 1);
        while (t.get(i) != target) {
            i = (i + 1) & mask;
        }
        int hole = i;
        for (int j = (hole + 1) & mask; t.get(j) != 0; j = (j + 1) & mask) {
            int home = (int) (t.get(j) >>> 32) & mask;
            // move t[j] into the hole unless its home lies cyclically in (hole, j]
            if (((j - home) & mask) >= ((j - hole) & mask)) {
                t.set(hole, t.get(j));
                hole = j;
            }
        }
        t.set(hole, 0);
    }
}
