// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.PageKey;
import dev.granary.spi.Workload;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.StampedLock;
import java.util.function.BooleanSupplier;

/**
 * The disk tier's index of cached pages, in primitive arrays: no object per page.
 *
 * <h2>Layout</h2>
 * <ul>
 *   <li>Each {@link Segment} keeps its pages as rows of four longs by record number (offset; object id and length;
 *       payload offset and CRC32C; stamp and verified flag): 32 bytes a page, one cache line read per lookup that
 *       finds its page. Records are only appended, and a whole segment leaves at once, so nothing is ever moved or
 *       reused inside a segment.</li>
 *   <li>{@link ObjectNames} keeps (origin, key, version) once per object version, under an {@code int} id.</li>
 *   <li>One open-addressing table ({@link ChunkedLongs}, linear probing, load 0.53 to 0.8) maps a page — its object id,
 *       offset and length — to a reference: the segment's slot here (24 bits), the record number (24 bits) and 16
 *       bits of the page's hash, so a probe rarely looks at a segment's rows for a key that is not there. 8 bytes
 *       a slot, 10-15 bytes a page.</li>
 * </ul>
 * A page object ({@link DiskPage}) is made only when a reader leases a page, and is garbage once released.
 *
 * <h2>Thread safety</h2>
 * One {@link StampedLock}. Every mutation (a page added or removed, a segment registered or killed, a table resize)
 * holds its write lock. Lookups run under an optimistic read: they read the arrays without synchronisation, guard every
 * index against torn state, and keep their answer only if the stamp still validates afterwards; else they look
 * again under the read lock. A record's stamp and verified flag are written without the lock (a racy stamp and a
 * racy 0-to-1 flag, each harmless if lost: a stamp a hit late, a page verified twice).
 */
final class DiskIndex {

    static final int MAX_SEGMENTS = (1 << 24) - 1;
    static final int MAX_RECORDS = 1 << 24;

    private final StampedLock lock = new StampedLock();
    private ObjectNames names = new ObjectNames();
    private ChunkedLongs table = new ChunkedLongs(1 << 10);

    /**
     * A page's home slot in a table of {@code capacity} slots ({@link PageTable}: grown by half at a load of 0.8, so it
     * stays between 0.53 and 0.8 full, 10-15 bytes a page). Uses the hash's low 48 bits; the high 16 are the tag kept
     * in the reference.
     */
    private static long home(long h, long capacity) {
        return PageTable.home(h, TAG_BITS, capacity);
    }

    private static final int TAG_BITS = 16;
    private int size;
    private Segment[] bySlot = new Segment[16];
    private int nextSlot = 1;
    private int[] freeSlots = new int[8];
    private int freeSlotCount;

    /** What {@link #add} did. */
    enum Added {
        STORED,
        PRESENT,
        REFUSED
    }

    // ------------------------------------------------------------------------------------------------ hashing

    private static long hash(int object, long offset, int length) {
        return PageTable.hash(object, offset, length);
    }

    private static long ref(int slot, int record, long hash) {
        return (long) slot << 40 | (long) record << 16 | (hash >>> 48);
    }

    private static int slotOf(long ref) {
        return (int) (ref >>> 40);
    }

    private static int recordOf(long ref) {
        return (int) (ref >>> 16) & 0xFF_FFFF;
    }

    // ------------------------------------------------------------------------------------------------ reads

    /**
     * Leases a page: finds it, retains its segment for the caller and makes a page object over it.
     *
     * @return the page with one reference for the caller, or {@code null} if not in the index (or its segment is
     *     being unmapped)
     */
    DiskPage lease(DiskTier tier, PageKey key) {
        int nameHash = ObjectNames.hash(key.origin(), key.key(), key.version());
        long stamp = lock.tryOptimisticRead();
        Segment segment = null;
        int record = 0;
        long payload = 0;
        int crc = 0;
        if (stamp != 0) {
            try {
                long ref = probe(key, nameHash);
                if (ref != 0) {
                    segment = bySlot[slotOf(ref)];
                    record = recordOf(ref);
                    long where = segment.rows.get((long) record * Segment.ROW + 2);
                    payload = where >>> 32;
                    crc = (int) where;
                }
            } catch (RuntimeException torn) { // inconsistent arrays under a concurrent write: look again, locked
                segment = null;
                stamp = 0;
            }
            if (stamp != 0 && !lock.validate(stamp)) {
                stamp = 0;
            }
        }
        if (stamp == 0) {
            stamp = lock.readLock();
            try {
                long ref = probe(key, nameHash);
                segment = ref == 0 ? null : bySlot[slotOf(ref)];
                if (segment != null) {
                    record = recordOf(ref);
                    payload = segment.payload(record);
                    crc = segment.crc(record);
                }
            } finally {
                lock.unlockRead(stamp);
            }
        }
        if (segment == null || !segment.tryRetain()) {
            return null;
        }
        return new DiskPage(tier, segment, record, key, payload, crc);
    }

    /**
     * {@return whether the page is in the index} Under an optimistic read, as {@link #lease}: no write to the lock's
     * state (a put asks this before writing a page, then {@link #add} checks again under the write lock, so a put
     * takes the lock once).
     */
    boolean contains(PageKey key) {
        int nameHash = ObjectNames.hash(key.origin(), key.key(), key.version());
        long stamp = lock.tryOptimisticRead();
        if (stamp != 0) {
            try {
                boolean found = probe(key, nameHash) != 0;
                if (lock.validate(stamp)) {
                    return found;
                }
            } catch (RuntimeException torn) { // inconsistent arrays under a concurrent write: look again, locked
            }
        }
        stamp = lock.readLock();
        try {
            return probe(key, nameHash) != 0;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** The table lookup; tolerates torn state under an optimistic read (may throw or answer wrongly then). */
    private long probe(PageKey key, int nameHash) {
        int object = names.find(key.origin(), key.key(), key.version(), nameHash);
        if (object < 0) {
            return 0;
        }
        return probe(object, key.offset(), key.length());
    }

    private long probe(int object, long offset, int length) {
        ChunkedLongs t = table;
        Segment[] segments = bySlot;
        long capacity = t.length();
        long h = hash(object, offset, length);
        long tag = h >>> 48;
        long objectAndLength = (long) object << 32 | (length & 0xFFFF_FFFFL);
        for (long i = home(h, capacity), probes = 0; probes < capacity; i = i + 1 == capacity ? 0 : i + 1, probes++) {
            long ref = t.get(i);
            if (ref == 0) {
                return 0;
            }
            if ((ref & 0xFFFF) == tag) {
                ChunkedLongs rows = segments[slotOf(ref)].rows;
                long b = (long) recordOf(ref) * Segment.ROW;
                if (b + 1 < rows.length() && rows.get(b + 1) == objectAndLength && rows.get(b) == offset) {
                    return ref;
                }
            }
        }
        return 0;
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

    // ------------------------------------------------------------------------------------------------ segments

    /** Gives a segment a slot, so its pages can be indexed. */
    void register(Segment segment) {
        long stamp = lock.writeLock();
        try {
            int slot;
            if (freeSlotCount > 0) {
                slot = freeSlots[--freeSlotCount];
            } else {
                if (nextSlot > MAX_SEGMENTS) {
                    throw new IllegalStateException("disk tier segments: more than " + MAX_SEGMENTS
                            + " live (expected: fewer; use larger segments)");
                }
                slot = nextSlot++;
                if (slot >= bySlot.length) {
                    bySlot = Arrays.copyOf(bySlot, bySlot.length * 2);
                }
            }
            bySlot[slot] = segment;
            segment.index = this;
            segment.slot = slot;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Takes the spare room out of a segment's rows: it takes no more appends. */
    void seal(Segment segment) {
        long stamp = lock.writeLock();
        try {
            segment.trim();
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /**
     * Takes every page of a segment out of the index and marks it dead. With {@code keys}, returns the record
     * numbers and keys of the pages that were verified (for an eviction listener); else an empty list.
     *
     * @return how many pages left the index, and the handed-on ones if asked
     */
    Killed kill(Segment segment, boolean delete, boolean keys) {
        List<Object[]> handed = keys ? new ArrayList<>() : List.of();
        int removedPages = 0;
        long stamp = lock.writeLock();
        try {
            if (segment.deadLocked()) {
                return new Killed(0, List.of());
            }
            for (int r = 0; r < segment.records; r++) {
                if (!segment.removed(r)) {
                    if (keys && segment.verified(r)) {
                        handed.add(new Object[] {r, keyOf(segment, r)});
                    }
                    removeLocked(segment, r);
                    removedPages++;
                }
            }
            segment.kill(delete);
            if (segment.slot > 0) {
                bySlot[segment.slot] = null;
                if (freeSlotCount == freeSlots.length) {
                    freeSlots = Arrays.copyOf(freeSlots, freeSlotCount * 2);
                }
                freeSlots[freeSlotCount++] = segment.slot;
            }
        } finally {
            lock.unlockWrite(stamp);
        }
        return new Killed(removedPages, handed);
    }

    /**
     * Takes every page out and marks every registered segment dead, as {@link #kill} of each would, without
     * listing the pages' keys (the tier closes): the table and the names are dropped whole, not page by page, which
     * took 20-50 ms per 65 536 pages (each removal a probe, a backward shift and a name released).
     *
     * @return how many pages left the index
     */
    int killAll() {
        long stamp = lock.writeLock();
        try {
            int removed = size;
            for (int slot = 1; slot < nextSlot; slot++) {
                Segment s = bySlot[slot];
                if (s == null) {
                    continue;
                }
                for (int r = 0; r < s.records; r++) {
                    if (!s.removed(r)) {
                        s.object(r, Segment.REMOVED);
                    }
                }
                s.live = 0;
                s.kill(false);
                bySlot[slot] = null;
            }
            nextSlot = 1;
            freeSlotCount = 0;
            table = new ChunkedLongs(1 << 10);
            names = new ObjectNames();
            size = 0;
            return removed;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** What {@link #kill} took out: a count, and the verified pages as (record number, key) pairs if asked. */
    record Killed(int pages, List<Object[]> verified) {}

    // ------------------------------------------------------------------------------------------------ writes

    /**
     * Adds a page written (or recovered) at {@code payload} in {@code segment}.
     *
     * @return {@link Added#STORED} if indexed now, {@link Added#PRESENT} if an equal page already is,
     *     {@link Added#REFUSED} if the segment is dead or {@code closed} says the tier is
     */
    Added add(
            Segment segment, PageKey key, long payload, int crc, boolean verified, int stamp, BooleanSupplier closed) {
        long lockStamp = lock.writeLock();
        try {
            if (segment.deadLocked() || closed.getAsBoolean()) {
                return Added.REFUSED;
            }
            int nameHash = ObjectNames.hash(key.origin(), key.key(), key.version());
            int known = names.find(key.origin(), key.key(), key.version(), nameHash);
            if (known >= 0 && probe(known, key.offset(), key.length()) != 0) {
                return Added.PRESENT;
            }
            if (segment.records >= MAX_RECORDS) {
                return Added.REFUSED;
            }
            int object = names.acquire(known, key.origin(), key.key(), key.version(), nameHash);
            int r = segment.append(object, key.offset(), key.length(), payload, crc, stamp, verified);
            insertLocked(segment, r, object);
            return Added.STORED;
        } finally {
            lock.unlockWrite(lockStamp);
        }
    }

    /**
     * Indexes the records a recovery scan accepted in one segment ({@link SegmentRecovery}), under one hold of the
     * write lock, unverified and unstamped, with the result {@link #add} would give one by one (a page already
     * indexed, from an older segment or earlier in this one, keeps its first record). Cheaper per record than
     * {@code add} in three ways:
     * <ul>
     *   <li>the table grows once for this segment and the ones still to come ({@code expectedMore}, an estimate),
     *       not by halves as it fills, each growth rehashing every page before;</li>
     *   <li>a record whose names are the record before's (the scan gives consecutive pages of one object one name)
     *       takes that record's object id without hashing and looking its names up;</li>
     *   <li>names are looked up and kept as the scan's bytes ({@link ObjectNames#acquireBytes}): no strings;</li>
     *   <li>the segment's pages enter the table in the order of their home slots, so the table is walked once from
     *       start to end instead of touched at a random place (a cache and TLB miss) per page; a page equal to one
     *       already in the table is found on the same walk (the same home) and dropped.</li>
     * </ul>
     *
     * @param expectedMore pages expected in the segments still to be scanned; 0 if none or unknown
     * @return how many were stored (the others: an equal page was already indexed, or the segment is dead or full)
     */
    int addRecovered(Segment segment, SegmentFormat.Records records, long expectedMore) {
        long lockStamp = lock.writeLock();
        try {
            if (segment.deadLocked() || records.size == 0) {
                return 0;
            }
            long wanted = size + records.size + Math.max(0, expectedMore);
            if (wanted * 5 > table.length() * 4L) {
                rehash(Math.max(table.length() + (table.length() >> 1), wanted * 4 / 3 + 1));
            }
            int n = Math.min(records.size, MAX_RECORDS - segment.records);
            int first = segment.records;
            long[] hashes = new long[n];
            long[] order = new long[n];
            long capacity = table.length();
            int object = -1;
            int name = -1;
            for (int i = 0; i < n; i++) {
                int nm = records.name[i];
                if (nm == name) {
                    names.acquire(object, null, null, null, 0); // the record before's name: the same object
                } else {
                    object = acquire(records, nm);
                    name = nm;
                }
                long offset = records.pageOffset[i];
                int length = records.length[i];
                int rec = segment.append(object, offset, length, records.payload[i], records.crc[i], 0, false);
                long h = hash(object, offset, length);
                hashes[i] = h;
                order[i] = home(h, capacity) << 24 | (rec - first); // rec - first < 2^24 (MAX_RECORDS)
            }
            Arrays.sort(order); // by home slot, then by record number: an earlier record of a page goes in first
            int stored = 0;
            for (long o : order) {
                int i = (int) (o & 0xFF_FFFF);
                int rec = first + i;
                if (insertUnlessPresent(segment, rec, hashes[i])) {
                    stored++;
                } else { // an equal page is indexed already: this record stays in the file, out of the index
                    int id = segment.object(rec);
                    segment.object(rec, Segment.REMOVED);
                    segment.live--;
                    names.release(id);
                }
            }
            size += stored;
            return stored;
        } finally {
            lock.unlockWrite(lockStamp);
        }
    }

    /** Finds or adds the name {@code n} of a recovery scan's records and counts one more page of it. */
    private int acquire(SegmentFormat.Records records, int n) {
        String origin = records.origin[n];
        int hash = records.hash[n];
        String key = records.keyString[n];
        if (key != null) { // not ASCII: decoded by the scan
            String version = records.versionString[n];
            return names.acquire(names.find(origin, key, version, hash), origin, key, version, hash);
        }
        byte[] bytes = records.bytes;
        int keyAt = records.keyAt[n];
        int keyLength = records.keyLength[n];
        int versionAt = keyAt + keyLength;
        int versionLength = records.versionLength[n];
        int id = names.find(origin, bytes, keyAt, keyLength, versionAt, versionLength, hash);
        return names.acquireBytes(id, origin, bytes, keyAt, keyLength, versionAt, versionLength, hash);
    }

    /**
     * Inserts a record of {@code segment} into the table (which has room), unless a page equal to it is there:
     * walks its probe chain once, comparing the pages whose tags match. Does not count it in {@link #size}.
     *
     * @return whether it was inserted
     */
    private boolean insertUnlessPresent(Segment segment, int record, long h) {
        ChunkedLongs t = table;
        long capacity = t.length();
        long tag = h >>> 48;
        long offset = segment.offset(record);
        long objectAndLength = segment.rows.get((long) record * Segment.ROW + 1);
        long i = home(h, capacity);
        for (long ref = t.get(i); ref != 0; ref = t.get(i)) {
            if ((ref & 0xFFFF) == tag) {
                ChunkedLongs rows = bySlot[slotOf(ref)].rows;
                long b = (long) recordOf(ref) * Segment.ROW;
                if (rows.get(b + 1) == objectAndLength && rows.get(b) == offset) {
                    return false;
                }
            }
            i = i + 1 == capacity ? 0 : i + 1;
        }
        t.set(i, ref(segment.slot, record, h));
        return true;
    }

    /**
     * Puts a page of this tier that left the index (moved up by exclusive tiering) back, if its segment is live.
     *
     * @return whether the index holds the page (this record or an equal one) afterwards
     */
    boolean republish(Segment segment, int record, PageKey key, BooleanSupplier closed) {
        long stamp = lock.writeLock();
        try {
            if (segment.deadLocked() || closed.getAsBoolean()) {
                return false;
            }
            if (probe(key, ObjectNames.hash(key.origin(), key.key(), key.version())) != 0) {
                return true;
            }
            if (!segment.removed(record)) {
                return true; // still in the index (under another key's probe it would have been found)
            }
            int object = names.acquire(key.origin(), key.key(), key.version());
            segment.object(record, object);
            segment.live++;
            insertLocked(segment, record, object);
            return true;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Removes a page by key; {@return whether it was in the index} */
    boolean remove(PageKey key) {
        long stamp = lock.writeLock();
        try {
            long ref = probe(key, ObjectNames.hash(key.origin(), key.key(), key.version()));
            if (ref == 0) {
                return false;
            }
            removeLocked(bySlot[slotOf(ref)], recordOf(ref));
            return true;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Removes one record if it is still in the index; {@return whether it was} */
    boolean remove(Segment segment, int record) {
        long stamp = lock.writeLock();
        try {
            if (segment.deadLocked() || segment.removed(record)) {
                return false;
            }
            removeLocked(segment, record);
            return true;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    /** Removes every page of one object, in every version; {@return how many} */
    int removeObject(String origin, String key) {
        long stamp = lock.writeLock();
        try {
            int removedPages = 0;
            for (int slot = 1; slot < nextSlot; slot++) {
                Segment s = bySlot[slot];
                if (s == null) {
                    continue;
                }
                for (int r = 0; r < s.records; r++) {
                    if (!s.removed(r)
                            && names.keyIs(s.object(r), key)
                            && names.origin(s.object(r)).equals(origin)) {
                        removeLocked(s, r);
                        removedPages++;
                    }
                }
            }
            return removedPages;
        } finally {
            lock.unlockWrite(stamp);
        }
    }

    private void insertLocked(Segment segment, int record, int object) {
        if ((size + 1) * 5L > table.length() * 4L) {
            rehash(table.length() + (table.length() >> 1));
        }
        long h = hash(object, segment.offset(record), segment.length(record));
        PageTable.insert(table, ref(segment.slot, record, h), h, TAG_BITS);
        size++;
    }

    private long hashOf(long ref) {
        Segment s = bySlot[slotOf(ref)];
        int r = recordOf(ref);
        return hash(s.object(r), s.offset(r), s.length(r));
    }

    private void rehash(long capacity) {
        table = PageTable.rehash(table, capacity, TAG_BITS, this::hashOf);
    }

    /** Takes one live record out of the table and releases its object name. Under the write lock. */
    private void removeLocked(Segment segment, int record) {
        int object = segment.object(record);
        long h = hash(object, segment.offset(record), segment.length(record));
        if (!PageTable.delete(table, ref(segment.slot, record, h), h, TAG_BITS, this::hashOf)) {
            throw new IllegalStateException(
                    "disk index: record " + record + " of " + segment + " is live but not in the table");
        }
        size--;
        segment.object(record, Segment.REMOVED);
        segment.live--;
        names.release(object);
    }

    // ------------------------------------------------------------------------------------------------ views

    /** {@return the key of a live record}; under a lock */
    private PageKey keyOf(Segment s, int r) {
        int object = s.object(r);
        return new PageKey(names.origin(object), names.key(object), names.version(object), s.offset(r), s.length(r));
    }

    /** Receives a live page of a segment: its key and stamp. */
    interface PageVisitor {
        void page(PageKey key, int stamp);
    }

    /** Passes each live page of a segment to {@code visitor}, from a copy taken under the read lock. */
    void forEachPage(Segment segment, PageVisitor visitor) {
        List<PageKey> keys = new ArrayList<>();
        int[] stamps;
        long stamp = lock.readLock();
        try {
            stamps = new int[segment.live];
            for (int r = 0; r < segment.records; r++) {
                if (!segment.removed(r)) {
                    stamps[keys.size()] = segment.stampOf(r);
                    keys.add(keyOf(segment, r));
                }
            }
        } finally {
            lock.unlockRead(stamp);
        }
        for (int i = 0; i < keys.size(); i++) {
            visitor.page(keys.get(i), stamps[i]);
        }
    }

    int livePages(Segment segment) {
        long stamp = lock.readLock();
        try {
            return segment.live;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** {@code Segment.mostlyDead}: fewer than half of its live page bytes read since {@code keepFrom}. */
    boolean mostlyDead(Segment segment, Workload workload) {
        long stamp = lock.readLock();
        try {
            long live = 0;
            long total = 0;
            for (int r = 0; r < segment.records; r++) {
                if (!segment.removed(r)) {
                    total += segment.length(r);
                    if (!workload.isDead(segment.stampOf(r))) {
                        live += segment.length(r);
                    }
                }
            }
            return live * 2 < total;
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** {@return the number of object names held; for tests (no name outlives its last page)} */
    int nameCount() {
        long stamp = lock.readLock();
        try {
            return names.size();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** {@return whether the name of a page in the index is held as bytes (see ObjectNames)}; for tests */
    boolean nameHeldAsBytes(PageKey key) {
        long stamp = lock.readLock();
        try {
            int id = names.find(
                    key.origin(), key.key(), key.version(), ObjectNames.hash(key.origin(), key.key(), key.version()));
            return id >= 0 && names.heldAsBytes(id);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Where a live page is, for tests: its segment and record, or {@code null}. */
    record Found(Segment segment, int record) {}

    Found find(PageKey key) {
        long stamp = lock.readLock();
        try {
            long ref = probe(key, ObjectNames.hash(key.origin(), key.key(), key.version()));
            return ref == 0 ? null : new Found(bySlot[slotOf(ref)], recordOf(ref));
        } finally {
            lock.unlockRead(stamp);
        }
    }
}
