// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.nio.charset.StandardCharsets;
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
 * <h2>Names as bytes</h2>
 * A name added from a put arrives as the strings of its {@code PageKey}, which the caller holds anyway: kept as they
 * are. A name found by a recovery scan ({@link #acquireBytes}) arrives as the UTF-8 bytes of a record header; if key
 * and version are ASCII (object keys and versions nearly always are) they are kept as bytes in a few large arrays
 * ({@link #ARENA_CHUNK} each) and no string is made: reopening a directory of a million one-page objects then makes
 * no object per name, which the collector would otherwise copy (2 M strings and their arrays took more of the
 * process's time than the scan itself). Such a name is compared with a lookup's strings character by character, its
 * hash is that of the strings it stands for ({@link #hash(String, byte[], int, int, int, int)}), and
 * {@link #key}/{@link #version} decode it when asked (eviction listeners, region policies). The bytes of names
 * released are reclaimed by compacting the arrays once they are more than half garbage.
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
    /**
     * For a name held as bytes: where its key's bytes start in {@link #arena} (chunk &lt;&lt; 32 | offset), the
     * version's following them; {@code -1} for a name held as strings. Null until the first name held as bytes: a
     * tier filled by puts alone pays nothing for these columns.
     */
    private long[] at;
    /** For a name held as bytes: its key's length &lt;&lt; 16 | its version's length (each below 64 KiB). */
    private int[] lengths;
    /** Chunks of name bytes; only the last one takes new names. */
    private byte[][] arena = new byte[0][];
    /** Where the next name goes in the last chunk. */
    private int arenaEnd = ARENA_CHUNK;
    /** Bytes in the arena held by live names, and taken in all (live, released, and chunk ends left unused). */
    private long arenaLive;

    private long arenaTaken;
    /** Size of a chunk of {@link #arena}: below half a G1 region, so chunks are ordinary objects. */
    static final int ARENA_CHUNK = 256 << 10;
    /** Origins, interned: few, so a plain map. */
    private final Map<String, String> originStrings = new HashMap<>();

    /** {@return the hash of a name, as {@link #find} expects it} */
    static int hash(String origin, String key, String version) {
        return mix(key.hashCode(), version.hashCode(), origin.hashCode());
    }

    /**
     * {@return the hash of a name whose key and version are ASCII bytes} equal to {@link #hash(String, String, String)}
     * of the strings they decode to ({@link String#hashCode()} of an ASCII string is this sum over its bytes).
     */
    static int hash(String origin, byte[] bytes, int keyAt, int keyLength, int versionAt, int versionLength) {
        return mix(asciiHash(bytes, keyAt, keyLength), asciiHash(bytes, versionAt, versionLength), origin.hashCode());
    }

    private static int asciiHash(byte[] bytes, int from, int length) {
        int h = 0;
        for (int i = from, end = from + length; i < end; i++) {
            h = 31 * h + bytes[i];
        }
        return h;
    }

    /** {@return whether {@code length} bytes from {@code from} are all ASCII} */
    static boolean ascii(byte[] bytes, int from, int length) {
        for (int i = from, end = from + length; i < end; i++) {
            if (bytes[i] < 0) {
                return false;
            }
        }
        return true;
    }

    private static int mix(int keyHash, int versionHash, int originHash) {
        int h = keyHash * 31 + versionHash;
        h = h * 31 + originHash;
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
                if (oi != null && oi.equals(origin)) {
                    if (ki != null) {
                        if (vi != null && ki.equals(key) && vi.equals(version)) {
                            return id;
                        }
                    } else if (bytesEqual(id, key, version)) {
                        return id;
                    }
                }
            }
        }
        return -1;
    }

    /**
     * Whether the name {@code id}, held as bytes, is this key and version. Under an optimistic read the arrays may
     * be torn: an index out of bounds then throws, which the caller's validation discards.
     */
    private boolean bytesEqual(int id, String key, String version) {
        long[] a = at;
        if (a == null) {
            return false;
        }
        long where = a[id];
        if (where < 0) {
            return false;
        }
        int l = lengths[id];
        int keyLength = l >>> 16;
        int versionLength = l & 0xFFFF;
        if (key.length() != keyLength || version.length() != versionLength) {
            return false;
        }
        byte[] chunk = arena[(int) (where >>> 32)];
        int from = (int) where;
        for (int i = 0; i < keyLength; i++) {
            if (chunk[from + i] != key.charAt(i)) {
                return false;
            }
        }
        from += keyLength;
        for (int i = 0; i < versionLength; i++) {
            if (chunk[from + i] != version.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Looks up a name given as ASCII bytes (key, then version at {@code versionAt}), as {@link #find} does a name
     * given as strings. Under the owner's lock.
     *
     * @return its id, or {@code -1}
     */
    int find(String origin, byte[] bytes, int keyAt, int keyLength, int versionAt, int versionLength, int hash) {
        ChunkedLongs t = table;
        int mask = (int) t.length() - 1;
        for (int i = hash & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
            long entry = t.get(i);
            if (entry == 0) {
                return -1;
            }
            int id = (int) entry - 1;
            if ((int) (entry >>> 32) != hash || !origins[id].equals(origin)) {
                continue;
            }
            String ki = keys[id];
            if (ki != null) {
                if (asciiEquals(ki, bytes, keyAt, keyLength)
                        && asciiEquals(versions[id], bytes, versionAt, versionLength)) {
                    return id;
                }
            } else if (lengths[id] == (keyLength << 16 | versionLength)) {
                long where = at[id];
                byte[] chunk = arena[(int) (where >>> 32)];
                int from = (int) where;
                if (Arrays.equals(chunk, from, from + keyLength, bytes, keyAt, keyAt + keyLength)
                        && Arrays.equals(
                                chunk,
                                from + keyLength,
                                from + keyLength + versionLength,
                                bytes,
                                versionAt,
                                versionAt + versionLength)) {
                    return id;
                }
            }
        }
        return -1;
    }

    private static boolean asciiEquals(String s, byte[] bytes, int from, int length) {
        if (s.length() != length) {
            return false;
        }
        for (int i = 0; i < length; i++) {
            if (s.charAt(i) != bytes[from + i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * Counts one more page of a name given as ASCII bytes that the caller just looked up with
     * {@link #find(String, byte[], int, int, int, int, int)} under the same lock ({@code -1} adds it, its bytes
     * copied into the arena). {@return its id} Under the owner's lock.
     *
     * @throws IllegalArgumentException if key or version is 64 KiB or longer (a record header cannot hold them)
     */
    int acquireBytes(
            int id, String origin, byte[] bytes, int keyAt, int keyLength, int versionAt, int versionLength, int hash) {
        if (id < 0) {
            if (keyLength > 0xFFFF || versionLength > 0xFFFF) {
                throw new IllegalArgumentException(
                        "object name of " + keyLength + " + " + versionLength + " bytes (expected: each below 64 KiB)");
            }
            if (at == null) {
                at = new long[keys.length];
                Arrays.fill(at, -1);
                lengths = new int[keys.length];
            }
            id = add(origin, null, null, hash);
            int total = keyLength + versionLength;
            long where = take(total);
            byte[] chunk = arena[(int) (where >>> 32)];
            System.arraycopy(bytes, keyAt, chunk, (int) where, keyLength);
            System.arraycopy(bytes, versionAt, chunk, (int) where + keyLength, versionLength);
            at[id] = where;
            lengths[id] = keyLength << 16 | versionLength;
            arenaLive += total;
        }
        pages[id]++;
        return id;
    }

    /** Room for {@code n} bytes in the arena's last chunk (a new one if they do not fit); {@return where} */
    private long take(int n) {
        if (arenaEnd + n > ARENA_CHUNK) {
            int chunks = arena.length;
            arenaTaken += ARENA_CHUNK - Math.min(arenaEnd, ARENA_CHUNK); // the old chunk's unused end
            arena = Arrays.copyOf(arena, chunks + 1);
            arena[chunks] = new byte[Math.max(ARENA_CHUNK, n)];
            arenaEnd = 0;
        }
        long where = (long) (arena.length - 1) << 32 | arenaEnd;
        arenaEnd += n;
        arenaTaken += n;
        return where;
    }

    /**
     * Copies the live names' bytes into fresh chunks once more than half of the arena is garbage (names released,
     * chunk ends), so the bytes held stay within twice the live names' and a chunk. Under the owner's lock.
     */
    private void compactIfWasteful() {
        if (arenaTaken - arenaLive <= Math.max(arenaLive, 2L * ARENA_CHUNK)) {
            return;
        }
        byte[][] old = arena;
        arena = new byte[0][];
        arenaEnd = ARENA_CHUNK;
        arenaTaken = 0;
        for (int id = 0; id < highWater; id++) {
            long where = at[id];
            if (where < 0 || keys[id] != null || origins[id] == null) {
                continue;
            }
            int l = lengths[id];
            int total = (l >>> 16) + (l & 0xFFFF);
            long fresh = take(total);
            System.arraycopy(old[(int) (where >>> 32)], (int) where, arena[(int) (fresh >>> 32)], (int) fresh, total);
            at[id] = fresh;
        }
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
            if (at != null) {
                at[id] = -1;
            }
        }
        pages[id]++;
        return id;
    }

    /** Counts one page of {@code id} less; the last one forgets the name. Under the owner's lock. */
    void release(int id) {
        if (--pages[id] > 0) {
            return;
        }
        removeFromTable(id, hashOf(id));
        origins[id] = null;
        keys[id] = null;
        versions[id] = null;
        if (at != null && at[id] >= 0) {
            int l = lengths[id];
            arenaLive -= (l >>> 16) + (l & 0xFFFF);
            at[id] = -1;
            compactIfWasteful();
        }
        if (freeCount == freeIds.length) {
            freeIds = Arrays.copyOf(freeIds, freeCount * 2);
        }
        freeIds[freeCount++] = id;
        size--;
    }

    String origin(int id) {
        return origins[id];
    }

    /** {@return the key of a name}: decoded from its bytes (a new string) if held as bytes */
    String key(int id) {
        String k = keys[id];
        if (k != null) {
            return k;
        }
        long where = at[id];
        return new String(arena[(int) (where >>> 32)], (int) where, lengths[id] >>> 16, StandardCharsets.US_ASCII);
    }

    /** {@return the version of a name}: decoded from its bytes (a new string) if held as bytes */
    String version(int id) {
        String v = versions[id];
        if (v != null) {
            return v;
        }
        long where = at[id];
        int l = lengths[id];
        return new String(arena[(int) (where >>> 32)], (int) where + (l >>> 16), l & 0xFFFF, StandardCharsets.US_ASCII);
    }

    /** {@return whether the name {@code id}'s key is {@code key}}, without decoding a key held as bytes */
    boolean keyIs(int id, String key) {
        String k = keys[id];
        if (k != null) {
            return k.equals(key);
        }
        long where = at[id];
        return asciiEquals(key, arena[(int) (where >>> 32)], (int) where, lengths[id] >>> 16);
    }

    /** {@return whether a name is held as bytes}; for tests */
    boolean heldAsBytes(int id) {
        return keys[id] == null && at != null && at[id] >= 0;
    }

    /** {@return the hash of a held name} */
    private int hashOf(int id) {
        String k = keys[id];
        if (k != null) {
            return hash(origins[id], k, versions[id]);
        }
        long where = at[id];
        int l = lengths[id];
        return hash(
                origins[id], arena[(int) (where >>> 32)], (int) where, l >>> 16, (int) where + (l >>> 16), l & 0xFFFF);
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
                if (at != null) {
                    at = Arrays.copyOf(at, n);
                    lengths = Arrays.copyOf(lengths, n);
                }
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
