// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.internal.FlightEvents;
import dev.granary.internal.TierCounters;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.RegionPolicy;
import dev.granary.spi.Workload;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.ClosedByInterruptException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The appender of a {@link DiskTier}: its live segments, and everything that adds pages to them or makes room for
 * them. A put reserves a record's place in the active segment, writes the payload ({@code pwrite} from the page's
 * memory, or {@code O_DIRECT}, decision 0015) and then the record header, publishes the page in the index, and hands
 * what it wrote to writeback (decision 0016); a full segment is replaced by a new one, after whole segments were
 * evicted to stay within the capacity. A medium that fails stops admissions for a while ({@link #failure}).
 *
 * <p>Sharing a directory changes some of this (whose segments may be evicted, by which order, what the capacity
 * counts, the order of header stores): every such difference is a call to the tier's {@link Peers}, which does
 * nothing, or answers as if no other process existed, for a tier alone in its directory.
 *
 * <h2>Locks, outermost first</h2>
 * <ol>
 *   <li>{@link #writers}: held shared by each put while it copies, exclusively by {@link #close}, so the directory is
 *       unlocked only once copies in progress are done;</li>
 *   <li>the allocation lock ({@link #lock}): the segment list, the active segment, segment numbers, each segment's
 *       append cursors and reservations, eviction, and in shared mode everything {@link SharedPeers} does to
 *       segments; a put holds it only to reserve its place, and writes outside it;</li>
 *   <li>the directory's change lock ({@link Peers#lock}), taken under the allocation lock to create or evict a
 *       segment file. At open only, the tier's constructor takes it first, before anything else can see the tier;</li>
 *   <li>the {@link DiskIndex}'s lock, taken inside any of these.</li>
 * </ol>
 * Writers wait for their turn to store a header ({@link Peers#awaitTurn}) outside the allocation lock.
 *
 * <h2>Memory ordering</h2>
 * A segment's cursors, append generation and direct-write and writeback settings are set under the allocation lock
 * before it takes appends; a writer reads them after that lock handed it its reservation. The bytes on disk and the
 * number of mapped segments are atomic; the failure, the clocks, the workload and the closed flag are volatile.
 */
final class SegmentAppender {

    private static final System.Logger LOG = System.getLogger(DiskTier.class.getName());
    /** At open, a tier that keeps no recency across opens evicts the oldest segments first. */
    private static final RegionPolicy OLDEST_FIRST = List::getFirst;

    /**
     * What the appender was built with ({@link DiskTier.Builder}).
     *
     * @param retryNanos     how long admissions stop after the medium failed
     * @param directMin      payloads of at least this many bytes are written direct (decision 0015); 0: none
     * @param writebackEvery payloads written are handed to writeback every this many bytes of a segment (decision
     *                       0016); 0: never
     */
    record Settings(
            long capacity,
            long segmentSize,
            RegionPolicy policy,
            DiskTier.SegmentFiles files,
            long retryNanos,
            boolean randomAccess,
            int directMin,
            long writebackEvery) {}

    /** The tier, named by the pages handed to its eviction listener. */
    private final DiskTier tier;

    private final String tierName;
    private final Path segmentsDirectory;
    private final DiskDirectory.Access access;
    private final long capacity;
    private final long segmentSize;
    private final RegionPolicy policy;
    private final DiskTier.SegmentFiles files;
    private final long retryNanos;
    private final boolean randomAccess;
    private final int directMin;
    private final long writebackEvery;
    private final DiskIndex index;
    private final TierCounters counters;
    private final Peers peers;

    /** Payloads written with {@code O_DIRECT} so far. */
    private final LongAdder directWrites = new LongAdder();
    /** Ranges handed to writeback so far. */
    private final LongAdder writebacks = new LongAdder();

    private final ReentrantLock allocation = new ReentrantLock();
    /** Writers copying into segments hold it shared; close takes it exclusively before it unlocks the directory. */
    private final ReentrantReadWriteLock writers = new ReentrantReadWriteLock();
    /** Live segments, oldest first, including the active one; guarded by {@link #allocation}. */
    private final List<Segment> segments = new ArrayList<>();

    private final List<Segment> segmentsView = Collections.unmodifiableList(segments);
    /** The segment appends go to; guarded by {@link #allocation}. */
    private Segment active;
    /**
     * A segment that just filled, with a reference for the put that found it full, which hands its rest to writeback
     * after its own write, outside the allocation lock; guarded by {@link #allocation}.
     */
    private Segment filled;
    /** Guarded by {@link #allocation}. */
    private long nextId;

    private final AtomicLong bytesOnDisk = new AtomicLong();
    private final AtomicInteger mapped = new AtomicInteger();
    private final AtomicBoolean oversizeLogged = new AtomicBoolean();
    /** The coarse clock of {@link RegionPolicy.Region#lastAccess()}: advances with every new segment. */
    private volatile long clock = 1;

    private volatile Workload workload = Workload.UNDRIVEN;
    /** While driven: segments found mostly dead at the latest workload change, dropped when no wholly dead one is. */
    private volatile List<Segment> sparse = List.of();

    private volatile Consumer<Page> evictionListener;
    private volatile String failure;
    private volatile long failedAt;
    private volatile boolean closed;
    /** Guarded by {@link #allocation}. */
    private boolean closeDone;
    /** One object for every put to hand the index, rather than a method reference made per call. */
    @SuppressWarnings("UnnecessaryLambda")
    private final BooleanSupplier isClosed = () -> closed;

    SegmentAppender(
            DiskTier tier,
            String tierName,
            Path segmentsDirectory,
            DiskDirectory.Access access,
            Settings settings,
            DiskIndex index,
            TierCounters counters,
            Peers peers) {
        this.tier = tier;
        this.tierName = tierName;
        this.segmentsDirectory = segmentsDirectory;
        this.access = access;
        this.capacity = settings.capacity();
        this.segmentSize = settings.segmentSize();
        this.policy = settings.policy();
        this.files = settings.files();
        this.retryNanos = settings.retryNanos();
        this.randomAccess = settings.randomAccess();
        this.directMin = settings.directMin();
        this.writebackEvery = settings.writebackEvery();
        this.index = index;
        this.counters = counters;
        this.peers = peers;
    }

    // ------------------------------------------------------------------------------------------------ writes

    /**
     * Adds a sealed page that is not one of the tier's own: asks the policy, reserves the page's place, writes it
     * and publishes it.
     *
     * @return whether the tier holds the page now (or held it already)
     */
    boolean append(Page page) {
        PageKey key = page.key();
        if (index.contains(key)) {
            return true;
        }
        int length = page.length();
        SegmentFormat.Names names = SegmentFormat.Names.of(key);
        int headerLength = names.headerLength();
        if (headerLength > SegmentFormat.MAX_RECORD_HEADER || !Segment.fits(segmentSize, headerLength, length)) {
            counters.rejected();
            if (oversizeLogged.compareAndSet(false, true)) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "disk tier '" + tierName + "': a page of " + length + " bytes ("
                                + headerLength + " bytes of header) does not fit a segment of " + segmentSize
                                + " bytes and"
                                + " is not cached here; set DiskTier.builder().segmentSize(...) to a multiple of the"
                                + " page size");
            }
            return false;
        }
        if (!policy.admit(key, length)) {
            counters.rejected();
            return false;
        }
        Segment segment;
        long payload;
        long header;
        if (!writers.readLock().tryLock()) {
            return false; // closing
        }
        try {
            Segment full = null;
            try {
                allocation.lock();
                try {
                    segment = closed ? null : reserve(headerLength, length);
                    if (segment != null) {
                        payload = segment.reservedPayload();
                        header = segment.lastHeader();
                        segment.tryRetain(); // the writer's reference: a live segment always has the tier's own
                    } else {
                        payload = -1;
                        header = -1;
                    }
                } finally {
                    full = filled;
                    filled = null;
                    allocation.unlock();
                }
                if (segment == null) {
                    counters.rejected();
                    return false;
                }
                return write(page, key, names, segment, payload, header);
            } finally {
                if (full != null) {
                    // After this put's own write: sync_file_range can wait for room in the device's queue, and in
                    // shared mode the writers of the next headers of the new segment wait for this one's turn.
                    finishWriteback(full);
                }
            }
        } finally {
            writers.readLock().unlock();
        }
    }

    /** Hands what is left of a segment that filled to writeback, outside the allocation lock, and lets it go. */
    private void finishWriteback(Segment full) {
        try {
            if (full.finishWriteback()) {
                writebacks.increment();
            }
        } finally {
            full.release();
        }
    }

    /**
     * Writes a page into its reserved place with positional writes from the page's own memory (no mapping touched),
     * header last, and publishes it.
     */
    private boolean write(
            Page page, PageKey key, SegmentFormat.Names names, Segment segment, long payload, long header) {
        boolean written = false;
        boolean turn = false;
        boolean buffered = false;
        try {
            MemorySegment bytes = page.segment();
            // Write first, then checksum: a source that is a mapping of a truncated file fails the write with an
            // error code (EFAULT), where the CRC32C intrinsic touching it would take the JVM down.
            if (segment.write(bytes, payload)) {
                directWrites.increment();
            } else {
                buffered = true;
            }
            int crc = SegmentFormat.crc(bytes);
            byte[] record = SegmentFormat.recordHeader(
                    names, segment.id, segment.generation(), payload, key, crc, SegmentFormat.FLAG_PAGE);
            peers.awaitTurn(segment, header);
            turn = true;
            segment.writeHeader(record, header);
            written = true;
            return publish(segment, key, payload, crc);
        } catch (IOException | InternalError e) { // the medium failed under the file, or the source's mapping did
            failed("cannot write to " + segment.file, e);
            allocation.lock();
            try {
                if (active == segment) {
                    active = null; // no more appends to a file that failed
                }
            } finally {
                allocation.unlock();
            }
            return false;
        } finally {
            if (!written) {
                if (!turn) {
                    peers.awaitTurn(segment, header);
                }
                skip(segment, names, payload, header, key);
            }
            peers.passTurn(segment, header, names.headerLength());
            // Once the page is published and the next header's writer let go: the hand-off can wait for room in
            // the device's queue (decision 0016).
            if (written && buffered && segment.wrote(payload)) {
                writebacks.increment();
            }
            segment.release();
        }
    }

    /** Makes a written page visible, unless its segment was evicted meanwhile or an equal page won. */
    private boolean publish(Segment segment, PageKey key, long payload, int crc) {
        long stamp = workload.clock();
        DiskIndex.Added added = index.add(segment, key, payload, crc, true, DiskPage.clampStamp(stamp), isClosed);
        if (added == DiskIndex.Added.STORED) {
            segment.stamp(stamp);
        }
        return added != DiskIndex.Added.REFUSED;
    }

    /** Marks a reserved record that will not be written, so a scan passes over it. Best effort. */
    private static void skip(Segment segment, SegmentFormat.Names names, long payload, long header, PageKey key) {
        try {
            byte[] record = SegmentFormat.recordHeader(
                    names, segment.id, segment.generation(), payload, key, 0, SegmentFormat.FLAG_SKIP);
            segment.writeHeader(record, header);
        } catch (IOException | RuntimeException | InternalError e) {
            // the scan stops at this hole: later records of the segment are lost, never misread
        }
    }

    // ------------------------------------------------------------------------------------------------ room

    /**
     * Reserves room for a record in the active segment, opening a new one (after evicting to stay within capacity)
     * when it is full. Called under {@link #allocation}.
     *
     * @return the segment, with its {@code lastHeader} and {@code reservedPayload} set; {@code null} if there is no
     *     room that can be made, or the medium failed
     */
    private Segment reserve(int headerLength, int length) {
        if (!admitting()) {
            return null;
        }
        if (active != null && active.reserve(headerLength, length) >= 0) {
            return active;
        }
        if (active != null) {
            index.seal(active); // full: its rows lose their spare room
            if (writebackEvery > 0 && active.tryRetain()) {
                filled = active; // its rest goes to writeback once this put has written its own page
            }
        }
        active = null; // full: from now on a candidate for eviction like the others
        return openSegment(headerLength, length);
    }

    /**
     * Opens a new segment to append to, under the directory's change lock (shared mode): after catching up with the
     * directory and evicting until the segment files plus the new one fit the capacity. Under {@link #allocation}.
     */
    @SuppressWarnings("NonAtomicVolatileUpdate") // the clock moves under the allocation lock only; hits read it
    private Segment openSegment(int headerLength, int length) {
        try {
            peers.lock();
        } catch (IOException e) {
            return null; // interrupted: not a failure of the medium
        }
        Segment fresh;
        try {
            peers.catchUpLocked();
            if (!makeRoom(segmentSize, policy)) {
                return null;
            }
            long id = peers.nextSegment(nextId);
            nextId = id + 1;
            fresh = createSegment(id);
            peers.changed();
        } catch (IOException | UncheckedIOException | InternalError e) {
            if (closed || e instanceof ClosedByInterruptException) {
                // The tier is closing, or the filling thread was interrupted (its cache closed, its reader gave up):
                // not a failure of the medium, so neither logged nor a reason to stop admitting pages.
                return null;
            }
            failed("cannot create a segment file in " + segmentsDirectory, e);
            return null;
        } finally {
            peers.unlock();
        }
        if (failure != null) {
            LOG.log(System.Logger.Level.INFO, "disk tier '" + tierName + "': admitting pages again after: " + failure);
            failure = null;
        }
        clock++;
        fresh.touched(clock); // new pages are recent: not the next victim
        fresh.stamp(workload.clock());
        segments.add(fresh);
        active = fresh;
        fresh.reserve(headerLength, length); // fits an empty segment: checked by the caller
        return fresh;
    }

    /**
     * Evicts whole segments until {@code more} bytes fit within the capacity, choosing among the segments no live
     * process may still append to ({@link Peers#evictable}). While a loader drives (and the workload is this
     * process's alone), a segment is evicted only if it is dead (none of its pages read by the loader in its previous
     * epoch nor this one), or else among those found mostly dead, the oldest first — else none, keeping the resident
     * set stable; otherwise {@code chooser} decides. Under {@link #allocation} (and the directory lock if shared).
     *
     * @return whether they fit: not if every segment left is appended to, or held by readers while a loader drives
     */
    private boolean makeRoom(long more, RegionPolicy chooser) {
        if (bytesOnDisk.get() + more <= capacity) {
            return true;
        }
        List<Segment> candidates = peers.evictable(segments, active);
        Workload w = peers.evictionWorkload(workload);
        while (bytesOnDisk.get() + more > capacity) {
            if (candidates.isEmpty()) {
                return false; // every byte is in segments being appended to, or evicted ones readers still hold
            }
            if (w.driven()) {
                Segment victim = null;
                for (Segment candidate : candidates) {
                    if (w.isDead(candidate.stamp())) {
                        victim = candidate;
                        break;
                    }
                }
                if (victim == null) {
                    for (Segment candidate : sparse) {
                        if (candidates.contains(candidate)) {
                            victim = candidate;
                            break;
                        }
                    }
                }
                if (victim == null) {
                    return false;
                }
                candidates.remove(victim);
                long before = bytesOnDisk.get();
                evict(victim);
                if (bytesOnDisk.get() >= before) {
                    return false; // readers still hold it: its room comes back when they let go, not by evicting more
                }
                continue;
            }
            RegionPolicy.Region chosen = chooser.victim(List.copyOf(candidates));
            if (!(chosen instanceof Segment victim) || !candidates.remove(victim)) {
                throw new IllegalStateException("region policy " + chooser + " chose " + chosen
                        + " (expected: one of the candidates it was given)");
            }
            evict(victim);
        }
        return true;
    }

    /** Drops a whole segment: its pages leave the index now, its file goes once readers release them. */
    private void evict(Segment segment) {
        peers.left(segment);
        segments.remove(segment);
        if (segment == active) {
            active = null;
        }
        Consumer<Page> listener = evictionListener;
        // Only verified pages are handed on (an unverified one may be damaged), and named in eviction events.
        boolean events = FlightEvents.evictionsRecorded();
        DiskIndex.Killed killed = index.kill(segment, true, listener != null || events);
        for (int i = 0; i < killed.pages(); i++) {
            counters.evicted();
        }
        for (Object[] handed : killed.verified()) {
            int record = (Integer) handed[0];
            PageKey key = (PageKey) handed[1];
            FlightEvents.evicted(tierName, key);
            if (listener == null) {
                continue;
            }
            if (!segment.tryRetain()) {
                break;
            }
            DiskPage page = new DiskPage(tier, segment, record, key, segment.payload(record), segment.crc(record));
            try {
                listener.accept(page);
            } catch (RuntimeException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "disk tier '" + tierName + "': eviction listener failed on " + key,
                        e);
            }
            page.release();
        }
        segment.release(); // the tier's own reference
        if (peers.countsFiles()) {
            bytesOnDisk.addAndGet(-segment.size); // unlinked now; other processes still mapping it keep its blocks
        }
    }

    private Segment createSegment(long id) throws IOException {
        Path file = segmentsDirectory.resolve(DiskDirectory.fileName(id));
        Path temporary = segmentsDirectory.resolve(DiskDirectory.fileName(id) + ".tmp");
        bytesOnDisk.addAndGet(segmentSize);
        Segment segment = null;
        try {
            Files.deleteIfExists(temporary);
            Files.createFile(temporary, DiskDirectory.FILE_PERMISSIONS);
            files.allocate(temporary, segmentSize);
            segment = Segment.map(id, file, segmentSize, this::freed, temporary);
            mapped.incrementAndGet();
            segment.headersAllocated(Math.min(NativeFiles.HEADER_CHUNK, segmentSize)); // the rest as headers grow
            advise(segment); // before the first touch: without it, a fault reads a whole read-ahead window
            segment.enableDirectWrites(directMin);
            segment.enableWriteback(writebackEvery);
            segment.write(
                    MemorySegment.ofArray(
                            SegmentFormat.segmentHeader(id, segmentSize, System.currentTimeMillis(), peers.owner())),
                    0);
            segment.populateHeaders();
            access.apply(temporary, false);
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE);
            index.register(segment);
            return segment;
        } catch (IOException | RuntimeException | InternalError e) {
            if (segment != null) {
                segment.kill(false);
                segment.release(); // unmaps; counted back by freed()
            }
            bytesOnDisk.addAndGet(-segmentSize);
            try {
                Files.deleteIfExists(temporary);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * While a loader drives, a new segment is opened only in place of a dead one (see {@link Workload}); the segment
     * policy decides again once no loader drives. Segments carry the stamp of their latest write or read.
     */
    void workload(Workload workload) {
        this.workload = workload;
        List<Segment> found = new ArrayList<>();
        if (workload.driven()) {
            // A segment that is mostly dead pages (typically the one being appended to when a loader started, its
            // front full of another dataset) would otherwise keep its dead bytes for as long as its few live pages
            // are read: drop it when no wholly dead segment is left, and let its live pages be fetched again.
            List<Segment> live;
            allocation.lock();
            try {
                live = List.copyOf(segments);
            } finally {
                allocation.unlock();
            }
            for (Segment segment : live) {
                if (segment != active && !workload.isDead(segment.stamp()) && segment.mostlyDead(workload)) {
                    found.add(segment);
                }
            }
        }
        this.sparse = List.copyOf(found);
    }

    Workload workload() {
        return workload;
    }

    /** {@return the coarse clock of segment recency} */
    long clock() {
        return clock;
    }

    void evictionListener(Consumer<Page> listener) {
        this.evictionListener = listener;
    }

    // ------------------------------------------------------------------------------------------------ opening

    /** Called as recovery maps a segment, before it can be freed: counts the mapping and its bytes. */
    void mapped(Segment segment) {
        mapped.incrementAndGet();
        bytesOnDisk.addAndGet(segment.size);
    }

    /**
     * Adds a segment found on disk (at open, or in shared mode created by another process) to the live ones and
     * registers it with the index. Under {@link #allocation}, or at open.
     */
    void add(Segment segment) {
        segments.add(segment);
        index.register(segment);
    }

    /**
     * After the recovery scan, under the directory lock (shared mode): continues segment numbers above those found,
     * lets the peers follow what they append, resumes appends to the newest segment, and evicts down to the capacity
     * (the directory may hold more than it: a smaller capacity than it was filled with, or other processes').
     */
    void opened(long nextIdFound) throws IOException {
        allocation.lock();
        try {
            nextId = Math.max(nextId, nextIdFound);
            peers.recovered();
            resumeNewest();
            makeRoom(0, peers.keepsRecency() ? policy : OLDEST_FIRST);
            peers.changed();
        } finally {
            allocation.unlock();
        }
    }

    /**
     * Lets the newest recovered segment take appends again if much of it is free, so a restart does not strand a
     * partly filled segment. Its new records carry a higher generation than any before (set by the scan), so a
     * record a crash left beyond a never-written slot cannot reappear after them.
     */
    private void resumeNewest() {
        if (segments.isEmpty()) {
            return;
        }
        Segment newest = segments.getLast();
        if (newest.size == segmentSize && newest.freeBytes() >= segmentSize / 8 && peers.mayResume(newest)) {
            newest.enableDirectWrites(directMin);
            newest.enableWriteback(writebackEvery);
            active = newest;
        }
    }

    void advise(Segment segment) {
        if (randomAccess) {
            segment.adviseRandom();
        }
    }

    /** Called when a segment's last reference goes: it is unmapped, and deleted if it was evicted. */
    void freed(Segment segment) {
        mapped.decrementAndGet();
        if (segment.deletedWhenFree() && !peers.countsFiles()) { // else counted at eviction
            bytesOnDisk.addAndGet(-segment.size);
        }
    }

    // ------------------------------------------------------------------------------------------------ for the peers

    void lock() {
        allocation.lock();
    }

    void unlock() {
        allocation.unlock();
    }

    /** {@return the live segments, oldest first, unmodifiable}; under {@link #lock} */
    List<Segment> segmentsLocked() {
        return segmentsView;
    }

    /** Maps a segment file another process created, counted and advised as the tier's own. */
    Segment map(long id, Path file, long size) throws IOException {
        Segment segment = Segment.map(id, file, size, this::freed, null);
        mapped.incrementAndGet();
        advise(segment);
        return segment;
    }

    /**
     * Takes a live segment out of the tier: its pages leave the index, its file is unlinked with {@code delete}, and
     * the tier's reference goes (the mapping, once readers release theirs).
     *
     * @return whether it was live
     */
    boolean drop(Segment segment, boolean delete) {
        allocation.lock();
        try {
            if (!segments.remove(segment)) {
                return false;
            }
            peers.left(segment);
            if (active == segment) {
                active = null;
            }
            index.kill(segment, delete, false);
            segment.release(); // the tier's own reference
            return true;
        } finally {
            allocation.unlock();
        }
    }

    /** Sets the bytes of segment files on disk (shared mode: those of the directory, as just listed). */
    void recount(long bytes) {
        bytesOnDisk.set(bytes);
    }

    // ------------------------------------------------------------------------------------------------ failures

    private boolean admitting() {
        return failure == null || System.nanoTime() - failedAt >= retryNanos;
    }

    /** The medium failed: counted, logged once, and no page is admitted for {@code retryNanos}. */
    void failed(String what, Throwable cause) {
        counters.failed();
        failedAt = System.nanoTime();
        String why = cause.getMessage() == null ? cause.toString() : cause.getMessage();
        if (failure == null) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + tierName + "': " + what + ": " + why
                            + "; the tier stops admitting pages for " + Duration.ofNanos(retryNanos)
                            + " and keeps serving"
                            + " the pages it holds (see DiskTier.failure())");
        }
        failure = what + ": " + why;
    }

    /** {@return why the tier stopped admitting pages, if it did and has not recovered; else null} */
    String failure() {
        return failure;
    }

    // ------------------------------------------------------------------------------------------------ the rest

    /** {@return a dry run of the tier's admissions on a copy of its segments ({@link DiskTier#simulation})} */
    DiskTierSimulation simulation() {
        DiskTierSimulation sim;
        Map<Segment, DiskTierSimulation.Seg> copies = new java.util.LinkedHashMap<>();
        allocation.lock();
        try {
            sim = new DiskTierSimulation(
                    capacity, segmentSize, policy, admitting() && !closed, bytesOnDisk.get(), workload);
            for (Segment segment : segments) {
                copies.put(
                        segment,
                        sim.addSegment(
                                segment.size,
                                segment.headerEnd(),
                                segment.payloadStart(),
                                segment.stamp(),
                                segment == active));
            }
        } finally {
            allocation.unlock();
        }
        for (Map.Entry<Segment, DiskTierSimulation.Seg> e : copies.entrySet()) {
            DiskTierSimulation.Seg seg = e.getValue();
            index.forEachPage(e.getKey(), (key, stamp) -> sim.addPage(key, seg, stamp));
        }
        return sim;
    }

    /** The keys in the index, segment by segment. */
    List<PageKey> keys() {
        List<Segment> live;
        allocation.lock();
        try {
            live = List.copyOf(segments);
        } finally {
            allocation.unlock();
        }
        List<PageKey> keys = new ArrayList<>();
        for (Segment segment : live) {
            index.forEachPage(segment, (key, stamp) -> keys.add(key));
        }
        return keys;
    }

    long bytesOnDisk() {
        return bytesOnDisk.get();
    }

    long capacity() {
        return capacity;
    }

    /** {@return how many pages were written with {@code O_DIRECT} so far} */
    long directWrites() {
        return directWrites.sum();
    }

    /** {@return how many ranges of written pages were handed to writeback so far} */
    long writebacks() {
        return writebacks.sum();
    }

    boolean closed() {
        return closed;
    }

    /** {@return the closed flag, for the index: it refuses pages once the tier closed} */
    BooleanSupplier isClosed() {
        return isClosed;
    }

    /** {@return whether the appender is closed and every segment unmapped} */
    boolean isReleased() {
        return closed && mapped.get() == 0;
    }

    /**
     * Closes: no put starts from now on, and those in progress finish their copies; then, the first time, every
     * segment leaves the index (its file stays), the tier's peers let go of the directory, and {@code then} runs
     * while no put can copy (the tier unlocks its directory there).
     */
    void close(Runnable then) {
        closed = true; // new puts refuse from here on
        writers.writeLock().lock(); // and puts in progress finish their copies before the directory is unlocked
        try {
            allocation.lock();
            try {
                if (closeDone) {
                    return;
                }
                closeDone = true;
                active = null;
                releaseSegments();
                peers.close(); // gives up the owner slot and every claim: the others may now evict our segments
            } finally {
                allocation.unlock();
            }
            then.run();
        } finally {
            writers.writeLock().unlock();
        }
    }

    /** Releases what an open that failed part way had mapped. */
    void closeAfterFailedOpen() {
        closed = true;
        releaseSegments();
    }

    /** Drops every segment's pages from the index and the tier's reference to each segment (kept on disk). */
    private void releaseSegments() {
        index.killAll(); // every registered segment at once; the loop below only kills any never registered
        for (Segment segment : segments) {
            index.kill(segment, false, false);
            segment.release();
        }
        segments.clear();
    }
}
