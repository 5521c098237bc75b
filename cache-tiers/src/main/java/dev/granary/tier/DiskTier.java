// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.TierStats;
import dev.granary.internal.ByteSizes;
import dev.granary.internal.FlightEvents;
import dev.granary.internal.TierCounters;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.RegionPolicy;
import dev.granary.spi.Tier;
import dev.granary.spi.TierSimulation;
import dev.granary.spi.Workload;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.channels.ClosedByInterruptException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;

/**
 * The local-disk tier (L3): pages appended into memory-mapped segment files, kept across restarts and crashes, each
 * verified by its CRC32C before it is served.
 *
 * {@snippet :
 * Tier disk = DiskTier.builder()
 *         .directory(Path.of("/nvme/granary"))   // created 0700 if missing; locked against other processes
 *         .capacity(500L << 30)                   // bytes of segment files on disk: a hard bound
 *         .build();                               // recovers what an earlier run left there
 * }
 *
 * <h2>Layout and recovery</h2>
 * Pages are appended log-structured into fixed-size segment files ({@link Builder#segmentSize}, by default chosen from
 * the capacity, up to 64 MiB), each mapped with FFM (sparse but for its header area, decision 0014). Every page has a
 * record header naming it completely (origin, key, object version, extent) with the CRC32C of its bytes. Opening a
 * directory scans the record headers of every segment and rebuilds the index; pages are served again only under their
 * exact {@link PageKey}, so only for object versions the origin still reports. A page's bytes are checked against its
 * CRC the first time it is read after opening: a mismatch is a miss, counted in {@link TierStats#corruptions()}, and
 * the page is dropped. Only then: bytes changed in a segment file after a page's first read are served as they are,
 * until the tier is reopened (re-verifying every hit would cost several times the hit). The format is described in
 * {@code docs/disk-format.md}.
 *
 * <h2>Crashes</h2>
 * A record header is written after its payload and ends with its own CRC, and a scan stops at the first header that
 * is not valid; so a process killed at any moment leaves a directory that opens without error and never serves a torn
 * page. Nothing is {@code fsync}ed on the read path: after a power loss, recently written pages may be lost, and any
 * that reached the disk torn fail their CRC.
 *
 * <h2>Capacity and eviction</h2>
 * The bytes of segment files on disk never exceed the capacity: a new segment is created only after enough whole
 * segments were evicted, chosen by the {@link RegionPolicy} (default {@link SegmentLruPolicy}). An evicted segment's
 * file is deleted once no reader holds a page of it; until then it still counts, and if readers hold so much that
 * nothing can be evicted, pages are refused rather than the bound exceeded.
 *
 * <h2>Failures</h2>
 * If a segment cannot be created (a full disk: less free room than a segment, an I/O error) or a write fails (a disk
 * that filled up after the segment was created: segment files are sparse, decision 0014), the tier stops admitting
 * pages, logs once, counts it in {@link TierStats#failures()} and {@link #failure()}, and tries again after
 * {@link Builder#retryAfter}; pages it holds keep being served, and the cache reads what it misses from the next tier
 * or the origin.
 *
 * <p>A segment file truncated while the tier runs (or a device failing under the mapping) is found when a page of it
 * is first verified (verification reads the file, not the mapping), by a length check of its segment every 10 ms
 * on hits, or when the tier's own access faults; the segment is then dropped and the read is a miss. Copies the cache
 * makes from a damaged mapping fail as {@link IOException}s. A zero-copy lease, though, is a view of the mapping
 * itself: a reader touching it after its file was truncated gets an {@link InternalError} from the JVM, as with
 * Lucene's {@code MMapDirectory}. Never truncate a running tier's files ({@code docs/disk-format.md}).
 *
 * <h2>Sharing</h2>
 * By default one tier holds a directory: it is locked ({@code flock} on the directory itself; {@code granary.lock}
 * names the holder) against a second tier in this or any other process, which gets a {@link DirectoryInUseException}
 * naming the holder (a job can catch it to fall back to a scratch directory). With {@link Builder#shared}, any number of processes on the host open it at once: each sees the
 * pages the others write at its next miss, the capacity bounds the whole directory, eviction is least recently used
 * across processes and never takes a segment a live process appends to, concurrent misses of one page read the origin
 * once ({@link #awaitFill}), and a process killed at any moment leaves the others running
 * ({@code docs/disk-format.md}, "Shared directories").
 *
 * <h2>Safety</h2>
 * The directory is {@code 0700} and files are {@code 0600} (or {@code 2770}/{@code 0660} for a
 * {@linkplain Builder#group group}); file names are segment numbers, never derived from object keys.
 *
 * <h2>Thread safety</h2>
 * All methods are safe from any thread. Hits take no lock; appends reserve their place under one lock and copy
 * outside it.
 */
public final class DiskTier implements Tier {

    static final FileAttribute<Set<PosixFilePermission>> FILE_PERMISSIONS =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));
    static final Set<PosixFilePermission> DIRECTORY_PERMISSIONS = PosixFilePermissions.fromString("rwx------");
    static final String FORMAT_FILE = "FORMAT";
    static final String SEGMENTS = "segments";
    private static final System.Logger LOG = System.getLogger(DiskTier.class.getName());

    private final String name;
    private final Path directory;
    private final Path segmentsDirectory;
    private final long capacity;
    private final long segmentSize;
    private final RegionPolicy policy;
    private final SegmentFiles files;
    private final long retryNanos;
    private final boolean randomAccess;
    /** Payloads of at least this many bytes are written direct (decision 0015); {@code 0}: none. */
    private final int directMin;
    /** Payloads written with {@code O_DIRECT} so far. */
    private final LongAdder directWrites = new LongAdder();
    /** Payloads written are handed to writeback every this many bytes of a segment (decision 0016); 0: never. */
    private final long writebackEvery;
    /** Ranges handed to writeback so far. */
    private final LongAdder writebacks = new LongAdder();
    /**
     * A segment that just filled, with a reference for the put that found it full, which hands its rest to writeback
     * after its own write, outside the allocation lock; guarded by {@link #allocation}.
     */
    private Segment filled;

    private final long lengthCheckNanos;
    private final DirectoryLock lock;
    /** The pages on disk, in primitive arrays ({@link DiskIndex}); page objects exist only while leased. */
    private final DiskIndex index = new DiskIndex();

    private final ReentrantLock allocation = new ReentrantLock();
    /** Writers copying into segments hold it shared; close takes it exclusively before it unlocks the directory. */
    private final ReentrantReadWriteLock writers = new ReentrantReadWriteLock();
    /** Live segments, oldest first, including the active one; guarded by {@link #allocation}. */
    private final List<Segment> segments = new ArrayList<>();
    /** The segment appends go to; guarded by {@link #allocation}. */
    private Segment active;
    /** Guarded by {@link #allocation}. */
    private long nextId;

    private final AtomicLong bytesOnDisk = new AtomicLong();
    private final AtomicInteger mapped = new AtomicInteger();
    private final TierCounters counters = new TierCounters();
    private final AtomicBoolean oversizeLogged = new AtomicBoolean();
    private final AtomicBoolean corruptionLogged = new AtomicBoolean();
    private final Recovery recovery;
    /**
     * The coarse clock of {@link RegionPolicy.Region#lastAccess()}: advances with every new segment. Written under
     * {@link #allocation} only, read without it.
     */
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
    /** Scratch mode ({@link Builder#deleteOnClose}); and whether this tier made the directory (then it may remove it). */
    private final boolean deleteOnClose;

    private final boolean createdDirectory;
    /** Who may use the directory: the owner only, or a group ({@link Builder#group}). */
    private final DiskDirectory.Access access;
    /** Shared mode ({@link Builder#shared}): what the processes sharing the directory coordinate through; else null. */
    private final SharedDirectory shared;
    /** Shared mode: the directory generation the segment list reflects. */
    private volatile long seenGeneration = -1;
    /** Shared mode: other processes' segments that may still get records, watched on misses. */
    private volatile Segment[] following = new Segment[0];
    /** Shared mode: when the owners of followed segments were last checked (System.nanoTime). */
    private volatile long sweptAt;
    /** Shared mode: segment numbers whose header did not check out; the next opener deletes them. */
    private final Set<Long> unreadable = ConcurrentHashMap.newKeySet();
    /** Shared mode: the claim slot each of this tier's fills in progress holds. */
    private final ConcurrentHashMap<PageKey, Integer> claims = new ConcurrentHashMap<>();

    private final long fillWaitNanos;
    private final LongAdder peerFills = new LongAdder();
    private final LongAdder peerWaitTimeouts = new LongAdder();

    private DiskTier(Builder b, long segmentSize) throws IOException {
        this.name = b.name;
        this.directory = b.directory.toAbsolutePath().normalize();
        this.segmentsDirectory = directory.resolve(SEGMENTS);
        this.capacity = b.capacity;
        this.segmentSize = segmentSize;
        this.policy = b.policy;
        this.files = b.files;
        this.retryNanos = b.retryAfter.toNanos();
        this.randomAccess = b.randomAccess;
        this.directMin = b.directWrites ? b.directMin : 0;
        this.writebackEvery = b.writebackEvery;
        this.lengthCheckNanos = b.lengthCheck.toNanos();
        this.deleteOnClose = b.deleteOnClose;
        this.access = new DiskDirectory.Access(b.group);
        this.fillWaitNanos = b.fillWait.toNanos();
        this.createdDirectory = !Files.exists(directory, LinkOption.NOFOLLOW_LINKS);
        DiskDirectory.prepare(directory, access);
        this.lock = DirectoryLock.acquire(directory, b.shared, access);
        SharedDirectory sharing = null;
        try {
            sharing = b.shared ? SharedDirectory.open(directory, access.fileMode()) : null;
        } catch (IOException | RuntimeException | Error e) {
            lock.close();
            throw e;
        }
        this.shared = sharing;
        try {
            if (shared != null) {
                shared.lock(); // opening (format upgrade, recovery, deleting leftovers) changes the directory
            }
            try {
                DiskDirectory.checkFormat(directory, name, access, b.inspecting ? 0 : capacity);
                this.recovery = recover();
            } finally {
                if (shared != null) {
                    shared.unlock();
                }
            }
            FlightEvents.diskRecovered(
                    name,
                    directory,
                    recovery.segments(),
                    recovery.pages(),
                    recovery.damagedSegments(),
                    recovery.damagedTails(),
                    recovery.took());
        } catch (IOException | RuntimeException | Error e) {
            closeSegmentsAfterFailedOpen();
            if (shared != null) {
                shared.close();
            }
            lock.close();
            throw e;
        }
    }

    /** {@return a builder; {@link Builder#directory} and {@link Builder#capacity} are required} */
    public static Builder builder() {
        return new Builder();
    }

    // ------------------------------------------------------------------------------------------------ reads

    @Override
    public String name() {
        return name;
    }

    @Override
    public Page get(PageKey key) {
        DiskPage page = lease(key);
        if (page == null) {
            counters.miss();
            return null;
        }
        if (!ready(page)) {
            page.release();
            counters.miss();
            return null;
        }
        counters.hit(page.length());
        long stamp = workload.clock();
        if (shared != null) {
            touchShared(page.segment);
        } else {
            page.segment.touched(clock);
        }
        page.segment.stamp(stamp);
        page.stamp(stamp);
        return page;
    }

    @Override
    public Page peek(PageKey key) {
        DiskPage page = lease(key);
        if (page == null) {
            return null;
        }
        if (!ready(page)) {
            page.release();
            return null;
        }
        return page;
    }

    /** Leases a page from the index; in shared mode, first catches up with what other processes changed. */
    private DiskPage lease(PageKey key) {
        if (shared == null) {
            return index.lease(this, key);
        }
        follow();
        DiskPage page = index.lease(this, key);
        if (page == null && !closed && followOthers(false)) {
            page = index.lease(this, key);
        }
        return page;
    }

    // ------------------------------------------------------------------------------------------------ sharing

    /** How long a shared segment's modification time may lag its reads: the resolution of eviction order. */
    private static final long SHARED_TOUCH_MILLIS = 1_000;
    /** How often the owners of followed segments are checked, and how long a segment is followed after its owner
     *  moved on to a new one (writes reserved in it before may still be landing). */
    private static final long FOLLOW_SWEEP_NANOS = 100_000_000L;

    private static final long FOLLOW_GRACE_NANOS = 1_000_000_000L;

    /**
     * Shared mode: a read of a segment sets its file's modification time (at most once a second per segment and
     * process), so that every process sharing the directory evicts the segment read least recently by any of them.
     * Appends set it too (the kernel does, on every write).
     */
    private void touchShared(Segment segment) {
        long now = System.currentTimeMillis();
        if (now - segment.sharedTouchAt >= SHARED_TOUCH_MILLIS) {
            segment.sharedTouchAt = now;
            try {
                Files.setLastModifiedTime(segment.file, FileTime.fromMillis(now));
            } catch (IOException e) {
                // evicted by another process meanwhile: nothing to order
            }
        }
    }

    /** Shared mode: lists the directory again if its set of segment files changed since the last look (one load). */
    private void follow() {
        long generation;
        try {
            generation = shared.generation();
        } catch (IllegalStateException closedMeanwhile) {
            return; // the tier closed under this lookup: nothing to follow any more
        }
        if (generation != seenGeneration && !closed) {
            allocation.lock();
            try {
                if (!closed) {
                    relist(false);
                }
            } finally {
                allocation.unlock();
            }
        }
    }

    /**
     * Shared mode: makes the segment list match the directory: segments another process created are mapped, scanned
     * and indexed (and followed while their owner may append); segments another process evicted leave the index
     * (their mappings stay until the last lease of them goes: the bytes are still valid, the file is only unlinked).
     * Called under {@link #allocation}.
     *
     * @param directoryLocked whether the caller holds the directory lock: then a segment file still being created
     *     ({@code .tmp}) can only be one whose creator died, and it is deleted
     */
    private void relist(boolean directoryLocked) {
        long generation = shared.generation();
        TreeMap<Long, Path> listed = new TreeMap<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(segmentsDirectory)) {
            for (Path entry : entries) {
                String fileName = entry.getFileName().toString();
                long id = DiskDirectory.parseId(fileName);
                if (id >= 0) {
                    listed.put(id, entry);
                } else if (directoryLocked && DiskDirectory.isTemporarySegment(fileName)) {
                    // A segment whose creator died creating it: every process creates segments only under the
                    // directory lock, which this one holds, so no live process is writing this file. Counted by no
                    // one, it would hold a segment's worth of disk beyond the capacity until the next open.
                    Files.deleteIfExists(entry);
                }
            }
        } catch (IOException e) {
            failed("cannot list " + segmentsDirectory, e);
            return;
        }
        Set<Long> known = new HashSet<>();
        for (Segment segment : List.copyOf(segments)) {
            if (listed.containsKey(segment.id)) {
                known.add(segment.id);
            } else {
                // Evicted by another process (or deleted by hand): its pages go, its mapping when the leases do.
                unfollow(segment);
                segments.remove(segment);
                if (segment == active) {
                    active = null;
                }
                index.kill(segment, false, false);
                segment.release();
            }
        }
        unreadable.retainAll(listed.keySet());
        for (var e : listed.entrySet()) {
            if (!known.contains(e.getKey()) && !unreadable.contains(e.getKey())) {
                adopt(e.getKey(), e.getValue());
            }
        }
        long total = 0;
        for (Segment segment : segments) {
            total += segment.size;
        }
        bytesOnDisk.set(total);
        seenGeneration = generation;
        refollow(System.nanoTime());
    }

    /** Maps, checks, scans and indexes a segment another process created; under {@link #allocation}. */
    private void adopt(long id, Path file) {
        Segment segment;
        try {
            long size = Files.size(file);
            if (size < SegmentFormat.SEGMENT_HEADER || size > (1L << 40)) {
                unreadable.add(id);
                return;
            }
            segment = Segment.map(id, file, size, this::freed, null);
        } catch (IOException e) {
            return; // evicted between the listing and now
        }
        mapped.incrementAndGet();
        advise(segment);
        String damage;
        try {
            damage = SegmentFormat.checkSegmentHeader(segment.map, id, segment.size);
        } catch (InternalError e) {
            damage = e.getMessage();
        }
        if (damage != null) {
            // Deleted by the next process that opens the directory (under its lock), not behind the others' backs.
            unreadable.add(id);
            segment.kill(false);
            segment.release();
            return;
        }
        segment.owner = SegmentFormat.owner(segment.map);
        segment.cursors(SegmentFormat.SEGMENT_HEADER, segment.size);
        segment.followAt = SegmentFormat.SEGMENT_HEADER;
        segment.generation = 0;
        segments.add(segment);
        index.register(segment);
        tail(segment, false);
    }

    /**
     * Shared mode: indexes the records appended to followed segments since the last look. Lock-free unless a
     * followed segment has a new record (one load each), or the owners are due for a check.
     *
     * @param force look even without a sign of new records (a fill waiting for another process's page)
     * @return whether a new page may have been indexed
     */
    private boolean followOthers(boolean force) {
        Segment[] watched = following;
        long now = System.nanoTime();
        boolean sweep = now - sweptAt >= FOLLOW_SWEEP_NANOS;
        boolean news = false;
        try {
            for (Segment segment : watched) {
                if (segment.hasNewRecord()) {
                    news = true;
                    break;
                }
            }
        } catch (InternalError | IllegalStateException e) {
            // A file shorter than its mapping, or a segment dropped (and unmapped) since the snapshot: the look under
            // the lock, over the segments followed now, sorts it out.
            news = true;
        }
        if (!news && !sweep && !(force && watched.length > 0)) {
            return false;
        }
        allocation.lock();
        try {
            if (closed) {
                return false;
            }
            long before = index.size();
            for (Segment segment : following.clone()) {
                tail(segment, false);
            }
            if (sweep) {
                sweptAt = now;
                refollow(now);
            }
            return index.size() != before || news;
        } finally {
            allocation.unlock();
        }
    }

    /**
     * Scans a segment from where the last scan of it ended and indexes what it finds (unverified: the first read of
     * each page checks its CRC). With {@code last}, the owner is known to be gone: what is there now is all there
     * will be. Under {@link #allocation}.
     */
    private void tail(Segment segment, boolean last) {
        SegmentFormat.ScanEnd end;
        try {
            end = SegmentFormat.scan(
                    segment.map,
                    segment.id,
                    segment.headerEnd(),
                    segment.payloadStart(),
                    segment.generation,
                    r -> index.add(segment, r.key(), r.payloadOffset(), r.payloadCrc(), false, 0, this::isClosed),
                    position -> {});
        } catch (InternalError e) {
            discardLocked(segment);
            return;
        }
        segment.cursors(end.headerEnd(), end.payloadStart());
        segment.generation = end.generation();
        segment.followAt = end.headerEnd();
        if (last && end.damage() != null) {
            counters.corrupted(); // a writer killed mid-record: the pages after it are lost, as in a recovery
        }
    }

    /** Stops following a segment that leaves the tier; under {@link #allocation}. */
    private void unfollow(Segment segment) {
        Segment[] watched = following;
        for (int i = 0; i < watched.length; i++) {
            if (watched[i] == segment) {
                Segment[] fewer = new Segment[watched.length - 1];
                System.arraycopy(watched, 0, fewer, 0, i);
                System.arraycopy(watched, i + 1, fewer, i, watched.length - i - 1);
                following = fewer;
                return;
            }
        }
    }

    /** Drops a segment whose mapping faulted while following it; under {@link #allocation}. */
    private void discardLocked(Segment segment) {
        unfollow(segment);
        if (segments.remove(segment)) {
            index.kill(segment, false, false);
            segment.release();
            counters.corrupted();
        }
    }

    /**
     * Decides which segments of other processes to follow: those of a live owner that are its newest, or stopped
     * being so less than a second ago. A segment whose owner died gets one last scan. Under {@link #allocation}.
     */
    private void refollow(long now) {
        Map<Long, Long> newest = new HashMap<>();
        for (Segment segment : segments) {
            if (segment.owner != 0) {
                newest.merge(segment.owner, segment.id, Math::max);
            }
        }
        Map<Long, Boolean> alive = new HashMap<>();
        List<Segment> watched = new ArrayList<>();
        for (Segment segment : segments) {
            if (segment.owner == 0 || segment.owner == shared.owner()) {
                continue;
            }
            boolean live = alive.computeIfAbsent(segment.owner, o -> {
                try {
                    return shared.alive(o);
                } catch (IOException e) {
                    return false;
                }
            });
            boolean wasFollowed = segment.followUntil >= 0;
            if (!live) {
                if (wasFollowed) {
                    tail(segment, true);
                    segment.followUntil = -1;
                }
                continue;
            }
            if (newest.get(segment.owner) == segment.id) {
                segment.followUntil = 0;
            } else if (segment.followUntil == 0) {
                segment.followUntil = now + FOLLOW_GRACE_NANOS;
            }
            if (segment.followUntil == 0 || now - segment.followUntil < 0) {
                watched.add(segment);
            } else if (wasFollowed) {
                tail(segment, false);
                segment.followUntil = -1;
            }
        }
        following = watched.toArray(new Segment[0]);
    }

    /** {@return whether other processes see this tier's pages: shared mode} */
    @Override
    public boolean shared() {
        return shared != null;
    }

    /**
     * {@inheritDoc}
     *
     * <p>In shared mode: claims the page for this process (a byte-range lock the kernel drops if the process dies)
     * and returns {@code null}; or, if another process claims it, waits — parking, at most until the deadline or
     * {@link Builder#fillWait} — for that process's page to appear in the directory, and returns it. If the other
     * process gives up or dies, its claim goes and this one fills the page. After the wait times out, returns
     * {@code null} without a claim: the caller fills the page as well.
     */
    @Override
    public Page awaitFill(PageKey key, long deadlineNanos) {
        if (shared == null || closed) {
            return null;
        }
        int slot = SharedDirectory.claimSlot(key);
        long until = Math.min(deadlineNanos, System.nanoTime() + fillWaitNanos);
        long pause = 50_000;
        try {
            while (!closed) {
                if (shared.tryClaim(slot)) {
                    // A holder may have finished just before (after this fill's own look): look once more.
                    Page page = peekFollowing(key);
                    if (page != null) {
                        shared.release(slot);
                        peerFills.increment();
                        return page;
                    }
                    if (claims.putIfAbsent(key, slot) != null) {
                        shared.release(slot); // a second fill of the key in this process: the first one's claim holds
                    }
                    return null;
                }
                Page page = peekFollowing(key);
                if (page != null) {
                    peerFills.increment();
                    return page;
                }
                if (System.nanoTime() - until >= 0) {
                    peerWaitTimeouts.increment();
                    return null;
                }
                LockSupport.parkNanos(pause);
                pause = Math.min(2 * pause, 2_000_000);
                if (Thread.currentThread().isInterrupted()) {
                    return null;
                }
            }
        } catch (IOException e) {
            return null; // cannot coordinate: fill without a claim
        }
        return null;
    }

    /** A page this process sees now, having caught up with the directory; retained, or null. */
    private Page peekFollowing(PageKey key) {
        follow();
        followOthers(true);
        DiskPage page = index.lease(this, key);
        if (page != null && !ready(page)) {
            page.release();
            return null;
        }
        return page;
    }

    /** Ends the claim {@link #awaitFill} took for {@code key}, if it took one. */
    @Override
    public void fillDone(PageKey key) {
        Integer slot = claims.remove(key);
        if (slot != null) {
            shared.release(slot);
        }
    }

    /** {@return how many fills took a page another process filled, and how many waits for one timed out} */
    long[] sharingCounts() {
        return new long[] {peerFills.sum(), peerWaitTimeouts.sum()};
    }

    /**
     * Checks a retained page before it is served. A page not read since the tier opened is verified against its CRC
     * by reading the file ({@link Segment#crc}), never the mapping: if the file was truncated under the tier, a mapped
     * page past its end is a {@code SIGBUS} the JVM cannot survive inside the CRC intrinsic, while a read just comes up
     * short. A verified page is probed, and its segment's file length re-checked at most every
     * {@link Builder#LENGTH_CHECK} (10 ms), so a segment file truncated while the tier runs is found and dropped instead
     * of faulting under readers. A fault of the medium under the mapping (an {@link InternalError} from the JVM) makes
     * the page a miss, never an error.
     *
     * @return whether the page may be served; if not, it was dropped from the index (the caller still releases it)
     */
    private boolean ready(DiskPage page) {
        try {
            if (!page.verified()) {
                return verify(page);
            }
            long now = System.nanoTime();
            if (!page.segment.intact(now, lengthCheckNanos)) {
                discard(
                        page.segment,
                        "its file is shorter than the " + page.segment.size + " bytes mapped (it was" + " truncated)");
                return false;
            }
            if (page.length() > 4096) {
                probe(page, now);
            }
            return true;
        } catch (InternalError e) {
            faulted(page, e);
            return false;
        }
    }

    /**
     * Called when touching a page's mapping faulted (here, or where {@link MemoryTier} copies it up): drops the whole
     * segment if its file was truncated, else the page, and counts it.
     */
    void faulted(DiskPage page, Throwable e) {
        if (!page.segment.intactNow()) {
            discard(
                    page.segment,
                    "its file is shorter than the " + page.segment.size + " bytes mapped (it was" + " truncated)");
            return;
        }
        failed("cannot read page " + page.key() + " from " + page.segment.file, e);
        drop(page);
    }

    /** Touching a page's first byte takes longer than this only if the kernel had to read it from the device. */
    private static final long COLD_NANOS = 20_000;

    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    /**
     * Makes a cold page larger than one OS page come in with one large read rather than one 4 KiB read per fault.
     * Under {@code MADV_RANDOM} (which keeps 4 KiB samples from dragging in read-ahead) a fault reads only its own
     * 4 KiB, so a reader walking a cold 1 MiB page would wait for 256 reads one after another. Whether the page is
     * cold is found out cheaply: touch its first byte and time it; a fault that went to the device takes tens of
     * microseconds, a resident page tens of nanoseconds. Only then is the kernel asked ({@code MADV_WILLNEED}) to
     * read the rest in one go: a system call on every hit would cost 20-25 % of a warm 128 KiB-1 MiB read (measured).
     */
    private static void probe(DiskPage page, long start) {
        byte ignored = (byte) BYTE.getOpaque(page.segment.map, page.payloadOffset);
        if (System.nanoTime() - start > COLD_NANOS) {
            willNeed(page);
        }
    }

    /**
     * Reads a cold page in as one request and maps it in one call: {@code WILLNEED} starts one large read of the
     * whole range, {@code POPULATE_READ} waits for it and maps every page, so the reader takes no fault per 4 KiB.
     * Both are system calls: past the end of a truncated file they fail ({@code EFAULT}) rather than fault.
     */
    private static void willNeed(DiskPage page) {
        MemorySegment range = span(page);
        NativeFiles.willNeed(range);
        NativeFiles.populate(range);
    }

    private static MemorySegment span(DiskPage page) {
        long span = Math.min((page.length() + 4095) & -4096L, page.segment.map.byteSize() - page.payloadOffset);
        return page.segment.map.asSlice(page.payloadOffset, span);
    }

    /**
     * Checks a page's bytes against the CRC its record carries, reading them from the file; drops the page from the
     * index if they differ, and its whole segment if the file ends before the page does.
     */
    private boolean verify(DiskPage page) {
        int actual;
        try {
            actual = page.segment.crc(page.payloadOffset, page.length());
        } catch (EOFException e) {
            discard(page.segment, e.getMessage());
            return false;
        } catch (IOException e) {
            failed("cannot read page " + page.key() + " from " + page.segment.file, e);
            drop(page);
            return false;
        }
        if (actual == page.crc) {
            page.markVerified();
            if (page.length() > 4096) {
                // The read left the page in the page cache: map it in one call, so the reader takes no fault per 4 KiB.
                NativeFiles.populate(span(page));
            }
            return true;
        }
        counters.corrupted();
        if (corruptionLogged.compareAndSet(false, true)) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + name + "': page " + page.key() + " in "
                            + page.segment.file
                            + " does not match its checksum; dropped and read again from below (further"
                            + " damage is counted in stats().corruptions() without a log line)");
        }
        drop(page);
        return false;
    }

    /**
     * Drops a whole segment whose file was damaged under the tier (truncated): its pages leave the index, its file is
     * deleted, and it is counted once in {@link TierStats#corruptions()}. Pages readers hold stay mapped.
     */
    private void discard(Segment segment, String why) {
        boolean live;
        allocation.lock();
        try {
            live = segments.remove(segment);
            if (live) {
                if (shared != null) {
                    unfollow(segment);
                }
                if (active == segment) {
                    active = null;
                }
                index.kill(segment, true, false);
                segment.release(); // the tier's own reference
            }
        } finally {
            allocation.unlock();
        }
        if (live) {
            counters.corrupted();
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + name + "': dropping segment " + segment.file + ": " + why
                            + "; its pages are read again from below");
            if (shared != null) {
                shared.changed(); // the file is gone: the other processes drop it at their next lookup
            }
        }
    }

    @Override
    public boolean remove(PageKey key) {
        return index.remove(key);
    }

    @Override
    public void evictionListener(Consumer<Page> listener) {
        this.evictionListener = listener;
    }

    private void drop(DiskPage page) {
        index.remove(page.segment, page.record);
    }

    // ------------------------------------------------------------------------------------------------ writes

    @Override
    public boolean put(Page page) {
        if (!page.isSealed()) {
            throw new IllegalArgumentException(
                    "page " + page.key() + " is not sealed (expected: a filled, sealed" + " page)");
        }
        if (closed) {
            return false;
        }
        PageKey key = page.key();
        if (page instanceof DiskPage own && own.tier == this) {
            // One of ours, perhaps moved out (exclusive tiering) and offered back: index it again if its segment
            // is still live; the caller's reference keeps the mapping meanwhile.
            return index.republish(own.segment, own.record, key, this::isClosed);
        }
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
                        "disk tier '" + name + "': a page of " + length + " bytes ("
                                + headerLength + " bytes of header) does not fit a segment of " + segmentSize
                                + " bytes and"
                                + " is not cached here; set DiskTier.builder().segmentSize(...) to a multiple of the page"
                                + " size");
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
                        payload = segment.reservedPayload;
                        header = segment.lastHeader;
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
                    names, segment.id, segment.generation, payload, key, crc, SegmentFormat.FLAG_PAGE);
            if (shared != null) {
                segment.awaitTurn(header, TURN_NANOS);
                turn = true;
            }
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
                if (shared != null && !turn) {
                    segment.awaitTurn(header, TURN_NANOS);
                }
                skip(segment, names, payload, header, key);
            }
            if (shared != null) {
                segment.passTurn(header, names.headerLength());
            }
            // Once the page is published and the next header's writer let go: the hand-off can wait for room in
            // the device's queue (decision 0016).
            if (written && buffered && segment.wrote(payload)) {
                writebacks.increment();
            }
            segment.release();
        }
    }

    /** Shared mode: how long a write waits for the headers reserved before its own ({@link Segment#awaitTurn}). */
    private static final long TURN_NANOS = 10_000_000_000L;

    /** Makes a written page visible, unless its segment was evicted meanwhile or an equal page won. */
    private boolean publish(Segment segment, PageKey key, long payload, int crc) {
        long stamp = workload.clock();
        DiskIndex.Added added = index.add(segment, key, payload, crc, true, clampStamp(stamp), this::isClosed);
        if (added == DiskIndex.Added.STORED) {
            segment.stamp(stamp);
        }
        return added != DiskIndex.Added.REFUSED;
    }

    private boolean isClosed() {
        return closed;
    }

    static int clampStamp(long clock) {
        return (int) Math.min(clock, Integer.MAX_VALUE);
    }

    /** Marks a reserved record that will not be written, so a scan passes over it. Best effort. */
    private void skip(Segment segment, SegmentFormat.Names names, long payload, long header, PageKey key) {
        try {
            byte[] record = SegmentFormat.recordHeader(
                    names, segment.id, segment.generation, payload, key, 0, SegmentFormat.FLAG_SKIP);
            segment.writeHeader(record, header);
        } catch (IOException | RuntimeException | InternalError e) {
            // the scan stops at this hole: later records of the segment are lost, never misread
        }
    }

    /**
     * Reserves room for a record in the active segment, opening a new one (after evicting to stay within capacity)
     * when it is full. Called under {@link #allocation}.
     *
     * @return the segment, with its {@code lastHeader} and {@code reservedPayload} set; {@code null} if there is no
     *     room that can be made, or the medium failed
     */
    @SuppressWarnings("NonAtomicVolatileUpdate") // clock: written under allocation only, so no update is lost
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
        if (shared != null) {
            return reserveShared(headerLength, length);
        }
        Workload w = workload;
        while (bytesOnDisk.get() + segmentSize > capacity) {
            if (segments.isEmpty()) {
                return null; // every byte is in evicted segments that readers still hold
            }
            if (w.driven()) {
                // A loader drives: make room only from a dead segment (none of its pages read by the loader in its
                // previous epoch nor this one), the oldest first; else refuse, keeping the resident set stable.
                Segment victim = null;
                for (Segment candidate : segments) {
                    if (w.isDead(candidate.stamp())) {
                        victim = candidate;
                        break;
                    }
                }
                if (victim == null) {
                    for (Segment candidate : sparse) {
                        if (segments.contains(candidate)) {
                            victim = candidate;
                            break;
                        }
                    }
                }
                if (victim == null) {
                    return null;
                }
                long before = bytesOnDisk.get();
                evict(victim);
                if (bytesOnDisk.get() >= before) {
                    return null; // readers still hold it: its room comes back when they let go, not by evicting more
                }
                continue;
            }
            RegionPolicy.Region chosen = policy.victim(List.copyOf(segments));
            if (!(chosen instanceof Segment victim) || !segments.contains(victim)) {
                throw new IllegalStateException("region policy " + policy + " chose " + chosen
                        + " (expected: one of the candidates it was given)");
            }
            evict(victim);
        }
        Segment fresh;
        try {
            fresh = createSegment(nextId++);
        } catch (IOException | UncheckedIOException | InternalError e) {
            if (closed || e instanceof ClosedByInterruptException) {
                // The tier is closing, or the filling thread was interrupted (its cache closed, its reader gave up):
                // not a failure of the medium, so neither logged nor a reason to stop admitting pages.
                return null;
            }
            failed("cannot create a segment file in " + segmentsDirectory, e);
            return null;
        }
        if (failure != null) {
            LOG.log(System.Logger.Level.INFO, "disk tier '" + name + "': admitting pages again after: " + failure);
            failure = null;
        }
        clock++;
        fresh.touched(clock); // new pages are recent: not the next victim
        fresh.stamp(w.clock());
        segments.add(fresh);
        active = fresh;
        fresh.reserve(headerLength, length); // fits an empty segment: checked by the caller
        return fresh;
    }

    /**
     * Shared mode: opens a segment of this tier's own under the directory lock, after listing the directory again and
     * evicting (least recently used across processes) until the directory's segment files fit the capacity. Under
     * {@link #allocation}.
     */
    private Segment reserveShared(int headerLength, int length) {
        Segment fresh;
        try {
            shared.lock();
        } catch (IOException e) {
            return null; // interrupted: not a failure of the medium
        }
        try {
            relist(true);
            if (!makeRoom(segmentSize)) {
                return null;
            }
            fresh = createSegment(shared.nextSegment(nextId));
            nextId = fresh.id + 1;
            shared.changed();
            seenGeneration = shared.generation();
        } catch (IOException | UncheckedIOException | InternalError e) {
            if (closed || e instanceof ClosedByInterruptException) {
                return null;
            }
            failed("cannot create a segment file in " + segmentsDirectory, e);
            return null;
        } finally {
            shared.unlock();
        }
        if (failure != null) {
            LOG.log(System.Logger.Level.INFO, "disk tier '" + name + "': admitting pages again after: " + failure);
            failure = null;
        }
        fresh.owner = shared.owner();
        fresh.stamp(workload.clock());
        segments.add(fresh);
        active = fresh;
        fresh.reserve(headerLength, length); // fits an empty segment: checked by the caller
        return fresh;
    }

    /**
     * While a loader drives, a new segment is opened only in place of a dead one (see {@link Workload}); the segment
     * policy decides again once no loader drives. Segments carry the stamp of their latest write or read.
     */
    @Override
    public void workload(Workload workload) {
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

    /** Drops a whole segment: its pages leave the index now, its file goes once readers release them. */
    private void evict(Segment segment) {
        if (shared != null) {
            unfollow(segment);
        }
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
            FlightEvents.evicted(name, key);
            if (listener == null) {
                continue;
            }
            if (!segment.tryRetain()) {
                break;
            }
            DiskPage page = new DiskPage(this, segment, record, key, segment.payload(record), segment.crc(record));
            try {
                listener.accept(page);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "disk tier '" + name + "': eviction listener failed on " + key, e);
            }
            page.release();
        }
        segment.release(); // the tier's own reference
    }

    private Segment createSegment(long id) throws IOException {
        Path file = segmentsDirectory.resolve(fileName(id));
        Path temporary = segmentsDirectory.resolve(fileName(id) + ".tmp");
        bytesOnDisk.addAndGet(segmentSize);
        Segment segment = null;
        try {
            Files.deleteIfExists(temporary);
            Files.createFile(temporary, FILE_PERMISSIONS);
            files.allocate(temporary, segmentSize);
            segment = Segment.map(id, file, segmentSize, this::freed, temporary);
            mapped.incrementAndGet();
            segment.headersAllocated(Math.min(NativeFiles.HEADER_CHUNK, segmentSize)); // the rest as headers grow
            advise(segment); // before the first touch: without it, a fault reads a whole read-ahead window
            segment.enableDirectWrites(directMin);
            segment.enableWriteback(writebackEvery);
            segment.write(
                    MemorySegment.ofArray(SegmentFormat.segmentHeader(
                            id, segmentSize, System.currentTimeMillis(), shared == null ? 0 : shared.owner())),
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

    private void advise(Segment segment) {
        if (randomAccess) {
            segment.adviseRandom();
        }
    }

    /** Called when a segment's last reference goes: it is unmapped, and deleted if it was evicted. */
    private void freed(Segment segment) {
        mapped.decrementAndGet();
        if (segment.deletedWhenFree() && shared == null) { // shared mode counts the directory's files instead
            bytesOnDisk.addAndGet(-segment.size);
        }
    }

    private boolean admitting() {
        return failure == null || System.nanoTime() - failedAt >= retryNanos;
    }

    private void failed(String what, Throwable cause) {
        counters.failed();
        failedAt = System.nanoTime();
        String why = cause.getMessage() == null ? cause.toString() : cause.getMessage();
        if (failure == null) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + name + "': " + what + ": " + why
                            + "; the tier stops admitting pages for " + Duration.ofNanos(retryNanos)
                            + " and keeps serving"
                            + " the pages it holds (see DiskTier.failure())");
        }
        failure = what + ": " + why;
    }

    // ------------------------------------------------------------------------------------------------ the rest

    /**
     * {@return whether the pages stay in the directory for the next process: {@code true} unless in scratch mode
     * ({@link Builder#deleteOnClose}), whose directory goes at close}
     */
    @Override
    public boolean durable() {
        return !deleteOnClose;
    }

    @Override
    public void invalidate(String origin, String key) {
        index.removeObject(origin, key);
    }

    /**
     * {@inheritDoc}
     *
     * <p>The disk tier's copy packs records into segments by the tier's own arithmetic (record headers, payload
     * alignment, whole segments against the capacity) and evicts whole dead segments as the tier does under a loader;
     * the region policy's {@code admit} is asked. A tier that stopped admitting after a failure of its medium is
     * simulated as refusing every page.
     */
    @Override
    public TierSimulation simulation() {
        DiskTierSimulation sim;
        Map<Segment, DiskTierSimulation.Seg> copies = new LinkedHashMap<>();
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

    @Override
    public TierStats stats() {
        return counters.snapshot(name, bytesOnDisk.get(), capacity);
    }

    /** {@return why the tier stopped admitting pages, if it did and has not recovered} */
    public Optional<String> failure() {
        return Optional.ofNullable(failure);
    }

    /** {@return what opening the directory found} */
    public Recovery recovery() {
        return recovery;
    }

    /** {@return the number of pages in the index}; for tests and benchmarks */
    int pageCount() {
        return index.size();
    }

    /** {@return the index}; for tests */
    DiskIndex index() {
        return index;
    }

    /** {@return the directory the tier keeps its files in} */
    public Path directory() {
        return directory;
    }

    /** {@return whether the tier is closed and every segment is unmapped}; for leak checks in tests */
    boolean isReleased() {
        return closed && mapped.get() == 0;
    }

    /** The keys in the index, for tests that check every page against its source. */
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

    /** Where a page's bytes lie in its segment file, for tests that damage them. */
    record Location(Path file, long headerOffset, long payloadOffset, int length) {}

    Location locate(PageKey key) {
        DiskIndex.Found found = index.find(key);
        if (found == null) {
            return null;
        }
        Segment s = found.segment();
        long payload = s.payload(found.record());
        long[] header = {-1};
        SegmentFormat.scan(
                s.map,
                s.id,
                r -> {
                    if (r.payloadOffset() == payload) {
                        header[0] = r.headerOffset();
                    }
                },
                position -> {});
        return new Location(s.file, header[0], payload, key.length());
    }

    /**
     * Closes the tier: pages leave the index and the directory is unlocked; the segment files stay for the next
     * open (unless {@link Builder#deleteOnClose}), and each is unmapped once no reader holds a page of it. Idempotent.
     */
    @Override
    public void close() {
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
                following = new Segment[0];
                if (shared != null) {
                    claims.clear();
                    shared.close(); // gives up the owner slot and every claim: the others may now evict our segments
                }
            } finally {
                allocation.unlock();
            }
            // Scratch mode: Granary's files go while the directory is still locked, the directory itself after.
            boolean emptied = deleteOnClose
                    && ScratchDirectory.deleteContents(directory, name).isEmpty();
            lock.close();
            if (emptied && createdDirectory) {
                ScratchDirectory.deleteDirectory(directory, name);
            }
        } finally {
            writers.writeLock().unlock();
        }
    }

    @Override
    public String toString() {
        return "DiskTier[" + name + ", " + directory + ", used=" + bytesOnDisk.get() + "/" + capacity + ", pages="
                + index.size() + "]";
    }

    // ------------------------------------------------------------------------------------------------ opening

    /** Scans the segments ({@link SegmentRecovery}), indexes the pages found, and resumes appends to the newest. */
    private Recovery recover() throws IOException {
        long start = System.nanoTime();
        long[] pages = {0};
        SegmentRecovery.Result found = new SegmentRecovery(
                        segmentsDirectory,
                        name,
                        this::freed,
                        segment -> {
                            mapped.incrementAndGet();
                            bytesOnDisk.addAndGet(segment.size);
                        },
                        this::advise,
                        counters::corrupted,
                        this::appendedByAnother)
                .scan(recovered -> {
                    Segment s = recovered.segment();
                    segments.add(s); // at once: if the scan fails further on, closing after the failed open releases it
                    index.register(s);
                    s.resize(recovered.records().size);
                    pages[0] += index.addRecovered(s, recovered.records(), recovered.expectedMore());
                });
        nextId = Math.max(nextId, found.nextId());
        if (shared != null) {
            allocation.lock();
            try {
                openShared();
            } finally {
                allocation.unlock();
            }
        } else {
            resumeNewest();
            // A smaller capacity than the directory was filled with: evict the oldest until within it.
            allocation.lock();
            try {
                while (bytesOnDisk.get() > capacity && !segments.isEmpty()) {
                    evict(segments.getFirst());
                }
            } finally {
                allocation.unlock();
            }
        }
        return new Recovery(
                found.files(),
                pages[0],
                found.damagedSegments(),
                found.damagedTails(),
                Duration.ofNanos(System.nanoTime() - start),
                found.dropped());
    }

    /** Shared mode: whether a live process other than this one may append to the segment (its creator is open). */
    private boolean appendedByAnother(Segment segment) {
        if (shared == null) {
            return false;
        }
        try {
            long owner = SegmentFormat.owner(segment.map);
            return owner != 0 && shared.alive(owner);
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Shared mode, after the scan (under the directory lock and {@link #allocation}): notes each segment's owner,
     * follows the segments other live processes append to (scanned again from their start: their appends carry the
     * generation of their creation, which the recovery scan's resume generation would hide), evicts down to the
     * capacity among segments no live process appends to, and tells the others the directory changed. Appends of
     * this tier always go to a segment of its own.
     */
    private void openShared() throws IOException {
        for (Segment segment : segments) {
            segment.owner = SegmentFormat.owner(segment.map);
            segment.followAt = segment.headerEnd();
            if (segment.owner != 0 && shared.alive(segment.owner)) {
                segment.cursors(SegmentFormat.SEGMENT_HEADER, segment.size);
                segment.generation = 0;
                tail(segment, false);
            } else {
                segment.followUntil = -1;
            }
        }
        refollow(System.nanoTime());
        makeRoom(0);
        shared.changed();
        seenGeneration = shared.generation();
    }

    /**
     * Evicts segments until {@code more} bytes fit within the capacity, choosing among the segments no live process
     * may still append to. Shared mode; under the directory lock and {@link #allocation}.
     *
     * @return whether they fit
     */
    private boolean makeRoom(long more) throws IOException {
        if (bytesOnDisk.get() + more <= capacity) {
            return true;
        }
        // The candidates and their files' modification times, read once however many segments go.
        List<Segment> candidates = new ArrayList<>();
        Set<Segment> followed = Set.of(following);
        for (Segment segment : segments) {
            if (segment == active || (segment.followUntil == 0 && followed.contains(segment))) {
                continue; // appended to by this or another live process (a live owner's newest segment)
            }
            try {
                // Eviction order across processes: the file's modification time, set by appends and reads.
                segment.touched(Files.getLastModifiedTime(segment.file).toMillis());
            } catch (IOException e) {
                segment.touched(0); // gone already: the first to go
            }
            candidates.add(segment);
        }
        while (bytesOnDisk.get() + more > capacity) {
            if (candidates.isEmpty()) {
                return false; // every segment is appended to by a live process
            }
            RegionPolicy.Region chosen = policy.victim(List.copyOf(candidates));
            if (!(chosen instanceof Segment victim) || !candidates.remove(victim)) {
                throw new IllegalStateException("region policy " + policy + " chose " + chosen
                        + " (expected: one of the candidates it was given)");
            }
            evict(victim);
            bytesOnDisk.addAndGet(-victim.size); // unlinked now; other processes still mapping it keep its blocks
        }
        return true;
    }

    /**
     * Lets the newest recovered segment take appends again if much of it is free, so a restart does not strand a
     * partly filled segment. Its new records carry a higher generation than any before ({@code s.generation}, set by
     * the scan), so a record a crash left beyond a never-written slot cannot reappear after them.
     */
    private void resumeNewest() {
        if (segments.isEmpty()) {
            return;
        }
        Segment newest = segments.getLast();
        if (newest.size == segmentSize && newest.freeBytes() >= segmentSize / 8) {
            newest.enableDirectWrites(directMin);
            newest.enableWriteback(writebackEvery);
            active = newest;
        }
    }

    private void closeSegmentsAfterFailedOpen() {
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

    /** {@return how many pages were written with {@code O_DIRECT} so far} For tests and benchmarks. */
    long directWrites() {
        return directWrites.sum();
    }

    /** {@return how many ranges of written pages were handed to writeback so far} For tests and benchmarks. */
    long writebacks() {
        return writebacks.sum();
    }

    static String fileName(long id) {
        return DiskDirectory.fileName(id);
    }

    /**
     * What opening a directory found.
     *
     * @param segments        segment files found
     * @param pages           pages recovered into the index
     * @param damagedSegments segment files deleted because their header was damaged
     * @param damagedTails    segments whose record scan ended on a damaged or torn record (the pages after it are
     *                        dropped; a process killed mid-write leaves one)
     * @param took            how long the scan took
     * @param dropped         what damage made the scan drop: each segment file deleted for a damaged header, and each
     *                        segment whose scan ended on a record that is not valid
     */
    public record Recovery(
            int segments, long pages, int damagedSegments, int damagedTails, Duration took, List<Dropped> dropped) {

        /** Copies the list. */
        public Recovery {
            dropped = List.copyOf(dropped);
        }

        /** {@return the page records damage made the scan drop, summed over {@link #dropped()}} */
        public long droppedPages() {
            return dropped.stream().mapToLong(Dropped::pages).sum();
        }
    }

    /**
     * Page records a recovery scan dropped because of damage. Either the segment file's header was damaged (the file
     * is deleted, with every record in it), or its record scan ended on a record that is not valid: a torn write of a
     * process killed mid-put leaves one with nothing after it, while damage to a record header in the middle (a stray
     * write, bit rot) drops the valid records after it too, since the log's order is no longer proven past it. Either
     * way the pages are read again from the origin when asked for, never served unchecked.
     *
     * @param segment      the segment file
     * @param damage       what the scan found, with the offset
     * @param wholeSegment whether the file was deleted for a damaged header
     * @param pages        valid-looking page records dropped (for a tail: those found after the damage)
     * @param bytes        their pages' bytes
     */
    public record Dropped(Path segment, String damage, boolean wholeSegment, long pages, long bytes) {}

    /**
     * A page in a segment file, as handed to one reader: made when the page is leased, garbage once released (the
     * index keeps no object per page). It holds one reference to its segment, which keeps the mapping alive.
     */
    static final class DiskPage extends Page {

        final DiskTier tier;
        final Segment segment;
        /** The page's record number in its segment's rows. */
        final int record;

        final long payloadOffset;
        final int crc;

        /** The caller has retained {@code segment} once for this page; the page releases it. */
        DiskPage(DiskTier tier, Segment segment, int record, PageKey key, long payloadOffset, int crc) {
            super(key, segment.map.asSlice(payloadOffset, key.length()));
            this.tier = tier;
            this.segment = segment;
            this.record = record;
            this.payloadOffset = payloadOffset;
            this.crc = crc;
            seal();
        }

        /** {@return whether the bytes were checked against the CRC since the tier opened} Racy: see DiskIndex. */
        boolean verified() {
            return segment.verified(record);
        }

        void markVerified() {
            segment.markVerified(record);
        }

        /** Records the workload clock of a read; racy (a lost update only delays a stamp). */
        void stamp(long clock) {
            segment.stampRecord(record, clampStamp(clock));
        }

        @Override
        protected void deallocate() {
            segment.release();
        }

        @Override
        public String toString() {
            return "DiskPage[" + key() + " in " + segment.file + " at " + payloadOffset + "]";
        }
    }

    /**
     * How a new segment file gets its length and disk blocks (default: sparse but for its first header chunk,
     * {@link NativeFiles#allocateSparse}); a seam for tests that simulate a full or failing disk.
     */
    @FunctionalInterface
    interface SegmentFiles {
        void allocate(Path file, long size) throws IOException;
    }

    /** Configures a {@link DiskTier}. Setters validate at once. Not thread-safe. */
    public static final class Builder {

        private static final long MIN_SEGMENT = 16 << 10;
        private static final long MAX_SEGMENT = 1L << 30;
        private Path directory;
        private long capacity = -1;
        /** -1 until set: then chosen from the capacity at {@link #build}. */
        private long segmentSize = -1;

        private RegionPolicy policy = new SegmentLruPolicy();
        private String name = "disk";
        private Duration retryAfter = Duration.ofSeconds(30);
        private boolean randomAccess = true;
        private boolean directWrites;
        private int directMin = DIRECT_MIN;
        private long writebackEvery = WRITEBACK_EVERY;
        private SegmentFiles files = NativeFiles::allocateSparse;
        /** How often a segment's file length is re-checked on the hit path (see {@code ready}). */
        static final Duration LENGTH_CHECK = Duration.ofMillis(10);

        private Duration lengthCheck = LENGTH_CHECK;
        private boolean deleteOnClose;
        private boolean shared;
        private String group;
        private Duration fillWait = Duration.ofSeconds(10);

        private Builder() {}

        /**
         * Shared mode: any number of processes on this host (and tiers in one process) open the directory at once, and
         * each sees the pages the others write. Every one of them must open it with {@code shared(true)}: an unshared
         * tier holds its directory alone, and is refused while shared ones hold it (and the other way round).
         *
         * <p>What sharing gives ({@code docs/disk-format.md}, "Shared directories"): a page another process wrote is
         * found at this tier's next miss on it after its record is complete; the capacity bounds the directory's
         * files, whoever wrote them, and eviction takes the segment read least recently by any process — never one a
         * live process is appending to, and a process still reading an evicted segment keeps valid bytes (the file is
         * unlinked, not reused); when several processes miss one page at once, one reads it from the origin and the
         * others wait for it ({@link #fillWait}). A process killed at any moment leaves the others running and a
         * directory the next one opens. Each process appends to segments of its own, and under a loader the
         * directory is evicted least-recently-used, not by the loader's epochs. Not with {@link #deleteOnClose}.
         * Default {@code false}: one process, one directory — a second one gets an error naming the holder.
         *
         * @param shared whether to share the directory with other processes
         * @return this builder
         */
        public Builder shared(boolean shared) {
            this.shared = shared;
            return this;
        }

        /**
         * Lets the members of a group use the directory, for processes of different users sharing it: the directory
         * is given to the group and made {@code 2770} (set-group-ID, so files made in it belong to the group too),
         * its files {@code 0660}, whatever the umask. Every process sharing the directory should set the same group.
         * Default: none — the directory is {@code 0700} and its files {@code 0600}, private to their owner.
         *
         * @param group the name of a group on this host that the process belongs to
         * @return this builder
         * @throws IllegalArgumentException if null or blank (checked against the host's groups at {@link #build})
         */
        public Builder group(String group) {
            if (group == null || group.isBlank()) {
                throw new IllegalArgumentException("disk tier group: " + (group == null ? "null" : "'" + group + "'")
                        + " (expected: the name of a group on this host, such as \"ml\")");
            }
            this.group = group;
            return this;
        }

        /**
         * Shared mode: how long a fill waits for a page another process is reading from the origin before reading it
         * itself; it also stops waiting at the cache's read deadline, and at once when the other process dies or
         * gives up. Default 10 seconds.
         *
         * @param wait zero or more
         * @return this builder
         * @throws IllegalArgumentException if null or negative
         */
        public Builder fillWait(Duration wait) {
            if (wait == null || wait.isNegative()) {
                throw new IllegalArgumentException("fill wait: " + wait + " (expected: a duration >= 0)");
            }
            this.fillWait = wait;
            return this;
        }

        /**
         * Scratch mode: when the tier closes (with its cache), delete its files, and its directory if this tier created
         * it — the operator's "clear the cache when the job completes". Only Granary's own files are deleted: a file
         * someone else put in the directory is kept, with the directory (a warning names it); a directory that existed
         * before the tier opened it (a mount point, one the operator made) is emptied of Granary's files but kept.
         * A process killed before close leaves the directory as any other run does; the next tier opened with
         * {@code deleteOnClose} on it removes it at its own close. Default {@code false}: pages persist across runs.
         *
         * @param delete whether to delete on close
         * @return this builder
         */
        public Builder deleteOnClose(boolean delete) {
            this.deleteOnClose = delete;
            return this;
        }

        /**
         * Sets the directory the tier keeps its files in: created ({@code 0700}) if missing; if it exists it must be
         * empty or a directory a {@code DiskTier} wrote. Required.
         *
         * @param directory a local directory, ideally on NVMe
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder directory(Path directory) {
            if (directory == null) {
                throw new IllegalArgumentException(
                        "disk tier directory: null (expected: a path such as" + " Path.of(\"/nvme/granary\"))");
            }
            this.directory = directory;
            return this;
        }

        /**
         * Sets the bound on the bytes of segment files on disk. Required; at least two segments.
         *
         * @param bytes the capacity, at least 32 KiB (two segments of the smallest size)
         * @return this builder
         * @throws IllegalArgumentException if below 32 KiB
         */
        public Builder capacity(long bytes) {
            if (bytes < 2 * MIN_SEGMENT) {
                throw new IllegalArgumentException("disk tier capacity: " + bytes + " bytes (expected: at least "
                        + ByteSizes.format(2 * MIN_SEGMENT) + ", two segments of the smallest size "
                        + ByteSizes.format(MIN_SEGMENT) + ")");
            }
            this.capacity = bytes;
            return this;
        }

        /**
         * Sets the size of segment files: the unit of eviction, and the largest page the tier holds (less its header).
         * Default: chosen from the capacity ({@link #defaultSegmentSize}), 64 MiB for a capacity of 512 MiB or more.
         *
         * @param bytes a multiple of 4096, from 16 KiB to 1 GiB
         * @return this builder
         * @throws IllegalArgumentException if out of range or not a multiple of 4096
         */
        public Builder segmentSize(long bytes) {
            if (bytes < MIN_SEGMENT || bytes > MAX_SEGMENT || bytes % 4096 != 0) {
                throw new IllegalArgumentException("segment size: " + bytes + " bytes (expected: a multiple of 4 KiB,"
                        + " " + ByteSizes.range(MIN_SEGMENT, MAX_SEGMENT) + ")");
            }
            this.segmentSize = bytes;
            return this;
        }

        /**
         * Sets the policy that chooses which segment to evict. Default {@link SegmentLruPolicy}.
         *
         * @param policy the policy, used by this tier only
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder policy(RegionPolicy policy) {
            if (policy == null) {
                throw new IllegalArgumentException(
                        "region policy: null (expected: a policy such as new" + " SegmentLruPolicy())");
            }
            this.policy = policy;
            return this;
        }

        /**
         * Sets the name shown in stats and logs. Default {@code "disk"}.
         *
         * @param name a non-blank name
         * @return this builder
         * @throws IllegalArgumentException if null or blank
         */
        public Builder name(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException(
                        "tier name: " + (name == null ? "null" : "'" + name + "'") + " (expected: a non-blank name)");
            }
            this.name = name;
            return this;
        }

        /**
         * Sets how long the tier stops admitting pages after its medium failed (a full disk, an I/O error) before it
         * tries again. Default 30 seconds.
         *
         * @param pause zero or more
         * @return this builder
         * @throws IllegalArgumentException if null or negative
         */
        public Builder retryAfter(Duration pause) {
            if (pause == null || pause.isNegative()) {
                throw new IllegalArgumentException("retry pause: " + pause + " (expected: a duration >= 0)");
            }
            this.retryAfter = pause;
            return this;
        }

        /**
         * Tells the kernel that pages are read at random ({@code madvise(MADV_RANDOM)}), so a cold read faults in the
         * page it needs rather than a read-ahead window around it. Default true: samples are read in shuffled order.
         *
         * @param random whether to advise random access
         * @return this builder
         */
        public Builder randomAccess(boolean random) {
            this.randomAccess = random;
            return this;
        }

        /**
         * Writes large pages to the device directly ({@code O_DIRECT}) instead of copying them into the page cache
         * first (decision 0015): a page of at least 64 KiB held in page-aligned native memory (as the memory tier's
         * are), whose place in its segment is page-aligned (as a page of 4 KiB or more is). Smaller pages, heap
         * memory and file systems without direct I/O (the kernel refuses the open or the write) are written through
         * the page cache as before; so is everything with {@link #randomAccess randomAccess(false)}.
         *
         * <p>What it gives: in a cold epoch with many fills at once it halves the disk tier's CPU (the copy into the
         * page cache was most of it; measured 0.79 against 0.40 CPU-s per 250 MiB), and it leaves the page cache to
         * other data, since the page is in the memory tier already. What it costs: each write returns when the
         * device has the bytes, not the page cache, and writes into one segment file wait for each other, so the
         * tier's write rate follows the device's latency (one writer of 128 KiB pages here: 0.39 of a buffered
         * append's durable rate). Turn it on where the node's CPU is the limit and the disk is local NVMe; leave it off
         * on network block storage, where a write can take a millisecond. Default false.
         *
         * @param direct whether to write large pages with {@code O_DIRECT}
         * @return this builder
         */
        public Builder directWrites(boolean direct) {
            this.directWrites = direct;
            return this;
        }

        /** With {@link #directWrites} on, pages of at least this many bytes are written direct. */
        static final int DIRECT_MIN = 64 << 10;

        /**
         * How much of a segment the tier writes before it asks the kernel to start writing those pages to the device
         * ({@code sync_file_range(2)}, which does not wait for them; decision 0016). Without it the pages the tier
         * writes stay dirty in the page cache until the kernel's flusher takes them: 30 seconds later, or once dirty
         * pages pass a tenth of the memory (gigabytes on a training node) and then all at once, competing with the
         * job's own writes, such as checkpoints, which the kernel throttles meanwhile; in a container they are charged
         * to its memory limit until written. With it, a filling segment holds about two intervals of dirty pages, the
         * device writes while the tier goes on filling, and what the tier wrote becomes clean page cache the kernel
         * can drop without writing. What it costs: the filling thread that crosses an interval submits that I/O (a
         * flusher thread's work otherwise; measured +0.04 to +0.18 CPU-s per GiB written, the most with 4 KiB pages)
         * and can wait while the device's queue is full. It makes nothing durable: the tier never needs that (a crash
         * loses at most pages not yet written, found by their checksums). Measured with one writer, the tier's durable
         * rate against a plain append of the same pages, off and on: 0.79 and 0.88-0.99 with 4 KiB pages, 0.85 and
         * 1.00-1.11 with 128 KiB, 0.90 and 1.12-1.15 with 1 MiB. Pages written with {@link #directWrites} are not in the page cache
         * and need none of this.
         *
         * @param bytes {@code 0} to leave writeback to the kernel, else at least 64 KiB; default 8 MiB
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes} is negative or between 1 byte and 64 KiB
         */
        public Builder writebackEvery(long bytes) {
            if (bytes != 0 && bytes < MIN_WRITEBACK) {
                throw new IllegalArgumentException("disk tier writebackEvery: " + bytes + " bytes (expected: 0 to"
                        + " leave writeback to the kernel, or at least " + ByteSizes.format(MIN_WRITEBACK) + ")");
            }
            this.writebackEvery = bytes;
            return this;
        }

        /** The default of {@link #writebackEvery}. */
        static final long WRITEBACK_EVERY = 8L << 20;

        private static final long MIN_WRITEBACK = 64 << 10;

        /** For tests: the smallest page written direct (default {@link #DIRECT_MIN}), so small pages can take it. */
        Builder directWriteMin(int bytes) {
            this.directMin = bytes;
            return this;
        }

        /**
         * The segment size used when none is set: the largest power of two from 16 KiB to 64 MiB of which the capacity
         * holds at least eight, else 16 KiB (a capacity from 32 to 128 KiB). Eight or more segments keep eviction, which
         * drops a whole segment, from dropping more than an eighth of the tier at once; 64 MiB keeps the number of
         * files and mappings low for large tiers (8,000 for 500 GiB). A page larger than a segment is not cached on
         * disk (logged once), so a small tier with large pages should set {@link #segmentSize} itself.
         *
         * @param capacity at least 32 KiB
         */
        static long defaultSegmentSize(long capacity) {
            long size = MAX_DEFAULT_SEGMENT;
            while (size > MIN_SEGMENT && size * 8 > capacity) {
                size >>= 1;
            }
            return size;
        }

        private static final long MAX_DEFAULT_SEGMENT = 64L << 20;

        /** Set by {@link DiskTierInspection}: the tier opens the directory to look at it, and records no capacity. */
        boolean inspecting;

        Builder inspecting() {
            this.inspecting = true;
            return this;
        }

        /** For tests: how often segment lengths are re-checked, so the checks can be taken out of the way. */
        Builder lengthCheck(Duration interval) {
            this.lengthCheck = interval;
            return this;
        }

        /** For tests: how segment files get their blocks, so a full or failing disk can be simulated. */
        Builder files(SegmentFiles files) {
            this.files = files;
            return this;
        }

        /**
         * Opens the directory: locks it, recovers the pages an earlier run left there, and builds the tier.
         *
         * @return a new tier
         * @throws DirectoryInUseException  if another tier, in this process or another, holds the directory (the
         *                                  message names the holder)
         * @throws IllegalStateException    if no directory or capacity was set, or the directory was written by a
         *                                  newer Granary
         * @throws IllegalArgumentException if the capacity is below two segments of the size set, or the directory
         *                                  is a file or holds files that are not Granary's
         * @throws UncheckedIOException     if the directory cannot be read or written
         */
        public DiskTier build() {
            if (directory == null) {
                throw new IllegalStateException(
                        "disk tier directory not set (expected: directory(path) before" + " build())");
            }
            if (capacity < 0) {
                throw new IllegalStateException(
                        "disk tier capacity not set (expected: capacity(bytes) before" + " build())");
            }
            if (shared && deleteOnClose) {
                throw new IllegalStateException("disk tier " + directory + ": shared(true) with deleteOnClose(true)"
                        + " (expected: one of them; a shared directory outlives any one process using it)");
            }
            long size = segmentSize < 0 ? defaultSegmentSize(capacity) : segmentSize;
            if (segmentSize >= 0 && capacity < 2 * segmentSize) {
                throw new IllegalArgumentException("disk tier capacity: " + capacity + " bytes (expected: at least two"
                        + " segments, " + ByteSizes.format(2 * segmentSize) + " with segmentSize "
                        + ByteSizes.format(segmentSize) + ")");
            }
            try {
                return new DiskTier(this, size);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot open disk tier directory " + directory + ": " + e, e);
            }
        }
    }
}
