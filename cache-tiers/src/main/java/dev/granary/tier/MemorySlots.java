// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.PageKey;
import dev.granary.spi.Workload;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.StampedLock;

/**
 * The memory tier's index of pages, in primitive arrays: no object per cached page (decision 0011).
 *
 * <h2>Layout</h2>
 * A page lives in a <em>slot</em>, an {@code int} id reused once the page is gone and every reader released it.
 * <ul>
 *   <li><b>Rows</b>, three {@code long}s a slot: the allocator's first block and the length; the offset; the object
 *       id ({@link ObjectNames}) and the workload stamp (clamped to an {@code int}). 24 bytes.</li>
 *   <li><b>Lease words</b>, one {@code long} a slot, changed only by compare-and-set: a sequence number in the high
 *       half, odd while the page is in the index, and the reference count in the low half (the index's reference,
 *       the filler's, one per page object handed out). 8 bytes. The sequence grows at every publication and
 *       removal, so a hint ({@code (slot, sequence)}) names one stay of one page in the index and never another.</li>
 *   <li><b>Table</b>: open addressing in a {@link ChunkedLongs} (linear probing, backward-shift deletion, grown by
 *       half at a load of 0.8) from (object id, offset, length) to slot + 1 and 32 bits of the hash as a tag: 10-15
 *       bytes a page.</li>
 *   <li>The default policy's lists ({@link SlotPolicy}, 9 bytes a slot) and frequency sketch
 *       ({@link CountMinSketch}, 4-8 bytes a page), or nothing for a custom policy, which keeps its own state.</li>
 * </ul>
 * Rows, lease words and the policy's columns are in chunks of {@value #CHUNK} slots that are never copied or moved
 * once made (a compare-and-set on a copy would be lost), and small enough that G1 never gives one whole regions.
 *
 * <h2>Thread safety</h2>
 * One {@link StampedLock}. Every change of the table, the rows' identities, the names, the free slots and the
 * policy holds its write lock. A lookup probes under an optimistic read, takes its lease with a compare-and-set that
 * requires an odd sequence (the page is in the index) and a count above zero, and keeps it if the stamp validates;
 * else it gives the lease back and looks again under the read lock (under which nothing leaves the index). A hint's
 * lease is one compare-and-set on the word, without the lock: an equal sequence is the same stay in the index. The
 * last release of a slot frees its blocks and then, under the write lock, its name and its id. The allocator's lock is
 * never taken while this write lock is held (the dry run takes them the other way round).
 */
final class MemorySlots implements SlotPolicy.Slots {

    static final int SHIFT = 13;
    static final int CHUNK = 1 << SHIFT;
    private static final int MASK = CHUNK - 1;
    static final int ROW = 3;
    /** No lease: what {@link #lease} answers on a miss (never a valid answer: a slot id is below 2^31 - 1). */
    static final long NONE = -1;

    private static final long SEQ = 1L << 32;
    private static final long COUNT = 0xFFFF_FFFFL;
    private static final VarHandle WORDS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final int READS = 256;

    private final StampedLock lock = new StampedLock();
    private final SlabAllocator allocator;
    private final ObjectNames names = new ObjectNames();
    /** Outer arrays replaced under the write lock when a chunk is added; read without it. */
    private volatile long[][] rows = new long[0][];

    private volatile long[][] words = new long[0][];
    private ChunkedLongs table = new ChunkedLongs(1024);
    private int size;
    private int highWater;
    private int[] free = new int[64];
    private int freeCount;
    private boolean closed;
    /** The default policy, or {@code null} when the tier's policy is a custom one. */
    private final SlotPolicy policy;
    /** Sampled hits, slot + 1, written racily and drained into the policy under the write lock. */
    private final int[] reads;

    private int readCursor;
    /** Where the policy's evictions of the current locked operation go. */
    private Removed evicting;

    /** @param capacity the tier's capacity: the default policy's bound; {@code withPolicy} false for custom ones */
    MemorySlots(SlabAllocator allocator, long capacity, boolean withPolicy) {
        this.allocator = allocator;
        this.policy = withPolicy ? new SlotPolicy(capacity, SHIFT, this, new CountMinSketch()) : null;
        this.reads = withPolicy ? new int[READS] : null;
    }

    // ------------------------------------------------------------------------------------------------ hashing

    /** The high half of an entry is the slot + 1; the low half, the tag: the hash's high 32 bits. */
    private static final int TAG_BITS = 32;

    private static long hash(int object, long offset, int length) {
        return PageTable.hash(object, offset, length);
    }

    private static long home(long h, long capacity) {
        return PageTable.home(h, TAG_BITS, capacity);
    }

    private static long entry(int slot, long h) {
        return (long) (slot + 1) << 32 | (h >>> 32);
    }

    // ------------------------------------------------------------------------------------------------ rows

    private long row(int slot, int field) {
        return rows[slot >>> SHIFT][(slot & MASK) * ROW + field];
    }

    /** {@return first block << 32 | length} Stable while the caller holds a reference to the slot. */
    long blockAndLength(int slot) {
        return row(slot, 0);
    }

    private int lengthOf(int slot) {
        return (int) row(slot, 0);
    }

    private long offsetOf(int slot) {
        return row(slot, 1);
    }

    private int objectOf(int slot) {
        return (int) (row(slot, 2) >>> 32);
    }

    int stampOf(int slot) {
        return (int) row(slot, 2);
    }

    /** Records the workload clock of a read; racy (a lost update only delays a stamp). The caller holds a lease. */
    void stamp(int slot, int clock) {
        long[] chunk = rows[slot >>> SHIFT];
        int at = (slot & MASK) * ROW + 2;
        long r = chunk[at];
        if ((int) r != clock) {
            chunk[at] = (r & ~COUNT) | (clock & COUNT);
        }
    }

    private long word(int slot) {
        return (long) WORDS.getVolatile(words[slot >>> SHIFT], slot & MASK);
    }

    @Override
    public long weight(int slot) {
        return SlabAllocator.footprint(lengthOf(slot));
    }

    @Override
    public long hash(int slot) {
        int object = objectOf(slot);
        long h = ObjectNames.hash(names.origin(object), names.key(object), names.version(object));
        return h * 0x9E3779B97F4A7C15L + offsetOf(slot) * 0xC2B2AE3D27D4EB4FL + lengthOf(slot);
    }

    @Override
    public void evicted(int slot) {
        removeLocked(slot, evicting, false);
    }

    private PageKey keyOf(int slot) {
        int object = objectOf(slot);
        return new PageKey(
                names.origin(object), names.key(object), names.version(object), offsetOf(slot), lengthOf(slot));
    }

    // ------------------------------------------------------------------------------------------------ leases

    /**
     * Leases a page by key: one more reference on its slot for the caller.
     *
     * @return {@code sequence << 32 | slot}, or {@link #NONE} if the page is not in the index
     */
    long lease(PageKey key) {
        int nameHash = ObjectNames.hash(key.origin(), key.key(), key.version());
        long stamp = lock.tryOptimisticRead();
        if (stamp != 0) {
            long got = NONE;
            boolean torn = false;
            try {
                got = probeAndRetain(key, nameHash);
            } catch (RuntimeException e) { // arrays seen in the middle of a change: look again, locked
                torn = true;
            }
            if (!torn && lock.validate(stamp)) {
                return got;
            }
            if (got != NONE) {
                unlease((int) got); // possibly another page's slot, seen torn: give it back
            }
        }
        stamp = lock.readLock();
        try {
            return probeAndRetain(key, nameHash);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    private long probeAndRetain(PageKey key, int nameHash) {
        int object = names.find(key.origin(), key.key(), key.version(), nameHash);
        if (object < 0) {
            return NONE;
        }
        int slot = probe(object, key.offset(), key.length());
        return slot < 0 ? NONE : retainPublished(slot);
    }

    /** One more reference, if the slot's page is in the index. */
    private long retainPublished(int slot) {
        long[] chunk = words[slot >>> SHIFT];
        int i = slot & MASK;
        long w = (long) WORDS.getVolatile(chunk, i);
        while ((w & SEQ) != 0 && (int) w > 0) {
            long witness = (long) WORDS.compareAndExchange(chunk, i, w, w + 1);
            if (witness == w) {
                return (w & ~COUNT) | slot;
            }
            w = witness;
        }
        return NONE;
    }

    /**
     * Leases the page a hint names, if that page is still in the index: a compare-and-set on its word, no lock.
     *
     * @return whether the caller now holds a reference
     */
    boolean retainHint(int slot, int sequence) {
        long[][] w = words;
        if (slot >>> SHIFT >= w.length) {
            return false;
        }
        long[] chunk = w[slot >>> SHIFT];
        int i = slot & MASK;
        long word = (long) WORDS.getVolatile(chunk, i);
        while ((int) (word >>> 32) == sequence && (int) word > 0) {
            long witness = (long) WORDS.compareAndExchange(chunk, i, word, word + 1);
            if (witness == word) {
                return true;
            }
            word = witness;
        }
        return false;
    }

    /** {@return whether the page a lease of {@code sequence} came from is still in the index} */
    boolean inIndex(int slot, int sequence) {
        return (int) (word(slot) >>> 32) == sequence && (sequence & 1) != 0;
    }

    /** Drops one reference; the last one frees the slot's blocks, its name and its id. */
    void unlease(int slot) {
        long after = (long) WORDS.getAndAdd(words[slot >>> SHIFT], slot & MASK, -1L) - 1;
        int count = (int) after;
        if (count > 0) {
            return;
        }
        if (count < 0) {
            WORDS.getAndAdd(words[slot >>> SHIFT], slot & MASK, 1L);
            throw new IllegalStateException("memory tier slot " + slot + " released more often than retained");
        }
        long bl = blockAndLength(slot);
        allocator.free(bl >>> 32, (int) bl);
        long stamp = lock.writeLock();
        try {
            names.release(objectOf(slot));
            if (freeCount == free.length) {
                free = Arrays.copyOf(free, freeCount * 2);
            }
            free[freeCount++] = slot;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Records a sampled hit for the default policy: a racy store, drained under the write lock. */
    void recordRead(int slot) {
        int at = readCursor++ & (READS - 1);
        reads[at] = slot + 1;
        if (at == READS - 1) {
            long stamp = lock.tryWriteLock(); // a full buffer: drain it unless someone else holds the lock
            if (stamp != 0) {
                try {
                    drainReads(); // accesses only reorder: nothing is evicted
                } finally {
                    lock.unlockWrite(stamp);
                }
            }
        }
    }

    private void drainReads() {
        if (policy == null) {
            return;
        }
        for (int i = 0; i < READS; i++) {
            int v = reads[i];
            if (v != 0) {
                reads[i] = 0;
                int slot = v - 1;
                if (slot < highWater && (word(slot) & SEQ) != 0) {
                    policy.access(slot);
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ table

    private int probe(int object, long offset, int length) {
        ChunkedLongs t = table;
        long[][] r = rows;
        long capacity = t.length();
        long h = hash(object, offset, length);
        long tag = h >>> 32;
        for (long i = home(h, capacity), probes = 0; probes < capacity; i = i + 1 == capacity ? 0 : i + 1, probes++) {
            long e = t.get(i);
            if (e == 0) {
                return -1;
            }
            if ((e & COUNT) == tag) {
                int slot = (int) (e >>> 32) - 1;
                long[] chunk = r[slot >>> SHIFT];
                int b = (slot & MASK) * ROW;
                if ((int) chunk[b] == length && chunk[b + 1] == offset && (int) (chunk[b + 2] >>> 32) == object) {
                    return slot;
                }
            }
        }
        return -1;
    }

    private long hashOf(long entry) {
        int slot = (int) (entry >>> 32) - 1;
        return hash(objectOf(slot), offsetOf(slot), lengthOf(slot));
    }

    private void rehash(long capacity) {
        // published complete: an optimistic reader sees the old table or the new
        table = PageTable.rehash(table, capacity, TAG_BITS, this::hashOf);
    }

    private void deleteFromTable(int slot) {
        long h = hash(objectOf(slot), offsetOf(slot), lengthOf(slot));
        if (!PageTable.delete(table, entry(slot, h), h, TAG_BITS, this::hashOf)) {
            throw new IllegalStateException(
                    "memory tier index: slot " + slot + " is published but not in the" + " table");
        }
    }

    // ------------------------------------------------------------------------------------------------ changes

    /**
     * Takes a slot for a page being filled into {@code block}: one reference, the filler's; not in the index.
     *
     * @return {@code sequence << 32 | slot} (an even sequence), or {@link #NONE} if closed
     */
    long allocate(PageKey key, long block) {
        long stamp = lock.writeLock();
        try {
            if (closed) {
                return NONE;
            }
            int slot;
            if (freeCount > 0) {
                slot = free[--freeCount];
            } else {
                if (highWater == Integer.MAX_VALUE - 1) {
                    throw new IllegalStateException(
                            "memory tier: more than " + highWater + " pages (expected:" + " fewer; use larger pages)");
                }
                slot = highWater++;
                if (slot >>> SHIFT >= rows.length) {
                    grow((slot >>> SHIFT) + 1);
                }
            }
            int object = names.acquire(key.origin(), key.key(), key.version());
            long[] chunk = rows[slot >>> SHIFT];
            int b = (slot & MASK) * ROW;
            chunk[b] = block << 32 | (key.length() & COUNT);
            chunk[b + 1] = key.offset();
            chunk[b + 2] = (long) object << 32;
            long[] w = words[slot >>> SHIFT];
            long word = (long) WORDS.getVolatile(w, slot & MASK);
            WORDS.setVolatile(w, slot & MASK, (word & ~COUNT) | 1);
            return (word & ~COUNT) | slot;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    private void grow(int chunks) {
        long[][] r = Arrays.copyOf(rows, chunks);
        long[][] w = Arrays.copyOf(words, chunks);
        for (int c = rows.length; c < chunks; c++) {
            r[c] = new long[CHUNK * ROW];
            w[c] = new long[CHUNK];
        }
        if (policy != null) {
            policy.grow(chunks);
        }
        rows = r;
        words = w;
    }

    /** What {@link #publish} did. */
    enum Published {
        STORED,
        PRESENT,
        REFUSED
    }

    /**
     * Puts a filled slot into the index, with a reference of the index's own; the default policy may evict pages
     * (into {@code out}), this one included.
     *
     * @param sequence the even sequence {@link #allocate} answered
     */
    Published publish(int slot, int sequence, int clock, Removed out) {
        long stamp = lock.writeLock();
        try {
            long word = word(slot);
            int now = (int) (word >>> 32);
            if (now != sequence) {
                return now == sequence + 1 ? Published.PRESENT : Published.REFUSED; // put twice; or put and gone
            }
            if (closed) {
                return Published.REFUSED;
            }
            if (probe(objectOf(slot), offsetOf(slot), lengthOf(slot)) >= 0) {
                return Published.PRESENT;
            }
            if ((size + 1) * 5L > table.length() * 4L) {
                rehash(table.length() + (table.length() >> 1));
            }
            long h = hash(objectOf(slot), offsetOf(slot), lengthOf(slot));
            PageTable.insert(table, entry(slot, h), h, TAG_BITS);
            size++;
            WORDS.getAndAdd(words[slot >>> SHIFT], slot & MASK, SEQ + 1);
            stamp(slot, clock);
            if (policy != null) {
                evicting = out;
                try {
                    drainReads();
                    policy.insert(slot);
                } finally {
                    evicting = null;
                }
            }
            return Published.STORED;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Takes a published slot out of the index; its reference passes to {@code out}. Under the write lock. */
    private void removeLocked(int slot, Removed out, boolean unlinkFromPolicy) {
        deleteFromTable(slot);
        size--;
        if (unlinkFromPolicy && policy != null) {
            policy.remove(slot);
        }
        out.add(slot, keyOf(slot), weight(slot));
        WORDS.getAndAdd(words[slot >>> SHIFT], slot & MASK, SEQ);
    }

    /** {@return whether the page is in the index} */
    boolean contains(PageKey key) {
        long stamp = lock.readLock();
        try {
            int object = names.find(
                    key.origin(), key.key(), key.version(), ObjectNames.hash(key.origin(), key.key(), key.version()));
            return object >= 0 && probe(object, key.offset(), key.length()) >= 0;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Removes a page by key, into {@code out}; {@return whether it was in the index} */
    boolean remove(PageKey key, Removed out) {
        long stamp = lock.writeLock();
        try {
            int object = names.find(
                    key.origin(), key.key(), key.version(), ObjectNames.hash(key.origin(), key.key(), key.version()));
            int slot = object < 0 ? -1 : probe(object, key.offset(), key.length());
            if (slot < 0) {
                return false;
            }
            removeLocked(slot, out, true);
            return true;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Removes every page of one object, in every version, into {@code out}. */
    void removeObject(String origin, String key, Removed out) {
        long stamp = lock.writeLock();
        try {
            for (int slot = 0; slot < highWater; slot++) {
                if ((word(slot) & SEQ) != 0) {
                    int object = objectOf(slot);
                    if (names.key(object).equals(key) && names.origin(object).equals(origin)) {
                        removeLocked(slot, out, true);
                    }
                }
            }
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /**
     * The default policy gives up pages, coldest first, until {@code bytes} of footprint went, into {@code out}.
     *
     * @return the footprint evicted
     */
    long evict(long bytes, Removed out) {
        long stamp = lock.writeLock();
        try {
            evicting = out;
            drainReads();
            return policy.evict(bytes);
        } finally {
            evicting = null;
            lock.unlockWrite(stamp);
        }
    }

    /** {@return the pages stamped dead under {@code workload}, as {@code sequence << 32 | slot}} */
    long[] dead(Workload workload) {
        long stamp = lock.readLock();
        try {
            long[] found = new long[16];
            int n = 0;
            for (int slot = 0; slot < highWater; slot++) {
                long word = word(slot);
                if ((word & SEQ) != 0 && workload.isDead(stampOf(slot))) {
                    if (n == found.length) {
                        found = Arrays.copyOf(found, n * 2);
                    }
                    found[n++] = (word & ~COUNT) | slot;
                }
            }
            return Arrays.copyOf(found, n);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Removes a page found dead, if it is still the same stay in the index and still dead; into {@code out}. */
    boolean removeIfDead(long found, Workload workload, Removed out) {
        int slot = (int) found;
        long stamp = lock.writeLock();
        try {
            if ((int) (word(slot) >>> 32) != (int) (found >>> 32) || !workload.isDead(stampOf(slot))) {
                return false;
            }
            removeLocked(slot, out, true);
            return true;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Closes the index: every page leaves it, into {@code out}; later publications are refused. */
    void close(Removed out) {
        long stamp = lock.writeLock();
        try {
            closed = true;
            for (int slot = 0; slot < highWater; slot++) {
                if ((word(slot) & SEQ) != 0) {
                    removeLocked(slot, out, true);
                }
            }
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** A page in the index as a visit or a dry run sees it. */
    record Entry(int slot, int sequence, PageKey key, long block, int stamp) {}

    /** {@return the pages in the index now} */
    List<Entry> entries() {
        long stamp = lock.readLock();
        try {
            List<Entry> out = new ArrayList<>(size);
            for (int slot = 0; slot < highWater; slot++) {
                long word = word(slot);
                if ((word & SEQ) != 0) {
                    out.add(new Entry(
                            slot, (int) (word >>> 32), keyOf(slot), blockAndLength(slot) >>> 32, stampOf(slot)));
                }
            }
            return out;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** {@return the number of pages in the index} */
    int size() {
        long stamp = lock.readLock();
        try {
            return size;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** {@return the number of object names held; for tests (no name outlives its last slot)} */
    int nameCount() {
        long stamp = lock.readLock();
        try {
            return names.size();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** {@return the default policy's view, for tests; under no lock, so only on a quiet tier} */
    SlotPolicy policy() {
        return policy;
    }

    @Override
    public String toString() {
        return "MemorySlots[pages=" + size + ", slots=" + highWater + ", free=" + freeCount + "]";
    }

    /** Pages that left the index in one operation, each with the index's reference, to be let go after the lock. */
    static final class Removed {
        int count;
        int[] slots = new int[4];
        PageKey[] keys = new PageKey[4];
        long[] weights = new long[4];

        void add(int slot, PageKey key, long weight) {
            if (count == slots.length) {
                slots = Arrays.copyOf(slots, count * 2);
                keys = Arrays.copyOf(keys, count * 2);
                weights = Arrays.copyOf(weights, count * 2);
            }
            slots[count] = slot;
            keys[count] = key;
            weights[count++] = weight;
        }
    }
}
