// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.internal.TierCounters;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Workload;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * A shared tier's view of the other processes using its directory ({@link Peers}; decision 0009,
 * {@code docs/disk-format.md}, "Shared directories"): it follows the set of segment files through the generation
 * word of {@code granary.shared}, and the records other live processes append to their newest segments; it orders
 * eviction across processes by the files' modification times, keeps the segment another live process appends to from
 * eviction, makes this tier store its record headers in the order of their places, and claims fills across processes.
 *
 * <h2>State and locks</h2>
 * What is known of each segment another process created (its owner, where its next record would start, how long it
 * is followed) is a {@link Watch} kept here, not in the {@link Segment}. The watches, the segment list they mirror
 * ({@link SegmentAppender#segmentsLocked}) and every change of either are guarded by the appender's allocation lock.
 * Lock-free: {@link #catchUp} (one load of the generation word) and the look for new records on a miss (one load per
 * followed segment, over {@link #following}, an array replaced whole under the allocation lock and read volatile; a
 * watch's {@link Watch#at} is volatile for it).
 */
final class SharedPeers implements Peers {

    /** How long a shared segment's modification time may lag its reads: the resolution of eviction order. */
    private static final long TOUCH_MILLIS = 1_000;
    /** How often the owners of followed segments are checked, and how long a segment is followed after its owner
     *  moved on to a new one (writes reserved in it before may still be landing). */
    private static final long SWEEP_NANOS = 100_000_000L;

    private static final long GRACE_NANOS = 1_000_000_000L;
    /** How long a write waits for the headers reserved before its own ({@link Segment#awaitTurn}). */
    private static final long TURN_NANOS = 10_000_000_000L;

    private final SharedDirectory shared;
    private final Path segmentsDirectory;
    private final DiskIndex index;
    private final TierCounters counters;
    private final long fillWaitNanos;
    /** The tier's appender, whose segments these are; set once by {@link #attach}, before the tier is published. */
    private SegmentAppender appender;
    /** The directory generation the segment list reflects. */
    private volatile long seenGeneration = -1;
    /** What is known of the segments other processes created, by segment; guarded by the allocation lock. */
    private final Map<Segment, Watch> watches = new HashMap<>();
    /** The segments that may still get records, watched on misses; replaced whole under the allocation lock. */
    private volatile Watch[] following = new Watch[0];
    /** When the owners of followed segments were last checked (System.nanoTime). */
    private volatile long sweptAt;
    /** Segment numbers whose header did not check out; the next opener deletes them. */
    private final Set<Long> unreadable = ConcurrentHashMap.newKeySet();
    /** The claim slot each of this tier's fills in progress holds. */
    private final ConcurrentHashMap<PageKey, Integer> claims = new ConcurrentHashMap<>();

    private final LongAdder peerFills = new LongAdder();
    private final LongAdder peerWaitTimeouts = new LongAdder();

    /**
     * A segment another process created (or found at open), as this process follows it. Guarded by the allocation
     * lock, but for {@link #at}, which misses read without it.
     */
    private static final class Watch {

        final Segment segment;
        /** The tier that created the segment (from its header): only it appends to it; 0 for none. */
        final long owner;
        /** Where the next record would start: a non-zero word there means new records. */
        volatile long at;
        /**
         * Followed until then (System.nanoTime) once no longer its owner's newest segment; 0 while it is (and before
         * the first look); -1 once no longer followed.
         */
        long until;

        Watch(Segment segment, long owner) {
            this.segment = segment;
            this.owner = owner;
        }
    }

    private SharedPeers(
            SharedDirectory shared,
            Path segmentsDirectory,
            DiskIndex index,
            TierCounters counters,
            long fillWaitNanos) {
        this.shared = shared;
        this.segmentsDirectory = segmentsDirectory;
        this.index = index;
        this.counters = counters;
        this.fillWaitNanos = fillWaitNanos;
    }

    /** Opens the directory's {@code granary.shared} and takes an owner slot ({@link SharedDirectory#open}). */
    static SharedPeers open(
            Path directory, DiskDirectory.Access access, DiskIndex index, TierCounters counters, long fillWaitNanos)
            throws IOException {
        return new SharedPeers(
                SharedDirectory.open(directory, access.fileMode()),
                directory.resolve(DiskDirectory.SEGMENTS),
                index,
                counters,
                fillWaitNanos);
    }

    @Override
    public void attach(SegmentAppender appender) {
        this.appender = appender;
    }

    @Override
    public boolean shared() {
        return true;
    }

    // ------------------------------------------------------------------------------------------------ the directory

    @Override
    public void lock() throws IOException {
        shared.lock();
    }

    @Override
    public void unlock() {
        shared.unlock();
    }

    @Override
    public void catchUpLocked() {
        relist(true);
    }

    @Override
    public long nextSegment(long floor) {
        return shared.nextSegment(floor);
    }

    @Override
    public long owner() {
        return shared.owner();
    }

    @Override
    public void changed() {
        shared.changed();
        seenGeneration = shared.generation();
    }

    @Override
    public void dropped() {
        shared.changed(); // the file is gone: the other processes drop it at their next lookup
    }

    // ------------------------------------------------------------------------------------------------ opening

    @Override
    public boolean appendedByAnother(Segment segment) {
        try {
            long owner = SegmentFormat.owner(segment.map);
            return owner != 0 && shared.alive(owner);
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Notes each segment's owner and follows the segments other live processes append to: scanned again from their
     * start, since their appends carry the generation of their creation, which the recovery scan's resume generation
     * would hide. The appender then evicts down to the capacity among the segments no live process appends to and
     * tells the others the directory changed; appends of this tier always go to a segment of its own.
     */
    @Override
    public void recovered() throws IOException {
        for (Segment segment : appender.segmentsLocked()) {
            Watch watch = new Watch(segment, SegmentFormat.owner(segment.map));
            watch.at = segment.headerEnd();
            watches.put(segment, watch);
            if (watch.owner != 0 && shared.alive(watch.owner)) {
                segment.cursors(SegmentFormat.SEGMENT_HEADER, segment.size, 0);
                tail(watch, false);
            } else {
                watch.until = -1;
            }
        }
        refollow(System.nanoTime());
    }

    /** Never: a restarted process starts a segment of its own (its owner id is new), it never resumes one. */
    @Override
    public boolean mayResume(Segment segment) {
        return false;
    }

    /** The files' modification times order the segments across processes and restarts. */
    @Override
    public boolean keepsRecency() {
        return true;
    }

    // ------------------------------------------------------------------------------------------------ eviction

    /**
     * All segments but the active one and each other live owner's newest (which it appends to), ranked by their files'
     * modification times — set by appends, and by reads at most once a second per segment and process — read once
     * however many segments go.
     */
    @Override
    public List<Segment> evictable(List<Segment> segments, Segment active) {
        List<Segment> candidates = new ArrayList<>();
        Set<Watch> followed = Set.of(following);
        for (Segment segment : segments) {
            Watch watch = watches.get(segment);
            if (segment == active || (watch != null && watch.until == 0 && followed.contains(watch))) {
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
        return candidates;
    }

    /** None: the epoch-aware resident set is one process's view; a shared directory is evicted LRU across them. */
    @Override
    public Workload evictionWorkload(Workload own) {
        return Workload.UNDRIVEN;
    }

    /** The directory's files: an evicted one is unlinked at once; other processes still mapping it keep its blocks. */
    @Override
    public boolean countsFiles() {
        return true;
    }

    /** Stops following a segment that leaves the tier; under the allocation lock. */
    @Override
    public void left(Segment segment) {
        watches.remove(segment);
        Watch[] watched = following;
        for (int i = 0; i < watched.length; i++) {
            if (watched[i].segment == segment) {
                Watch[] fewer = new Watch[watched.length - 1];
                System.arraycopy(watched, 0, fewer, 0, i);
                System.arraycopy(watched, i + 1, fewer, i, watched.length - i - 1);
                following = fewer;
                return;
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ reads

    /** Lists the directory again if its set of segment files changed since the last look (one load). */
    @Override
    public void catchUp() {
        long generation;
        try {
            generation = shared.generation();
        } catch (IllegalStateException closedMeanwhile) {
            return; // the tier closed under this lookup: nothing to follow any more
        }
        if (generation != seenGeneration && !appender.closed()) {
            appender.lock();
            try {
                if (!appender.closed()) {
                    relist(false);
                }
            } finally {
                appender.unlock();
            }
        }
    }

    @Override
    public boolean caughtUpOnMiss() {
        return !appender.closed() && followOthers(false);
    }

    /**
     * A read of a segment sets its file's modification time (at most once a second per segment and process), so that
     * every process sharing the directory evicts the segment read least recently by any of them. Appends set it too
     * (the kernel does, on every write).
     */
    @Override
    public void read(Segment segment) {
        segment.touchFile(System.currentTimeMillis(), TOUCH_MILLIS);
    }

    /**
     * Makes the segment list match the directory: segments another process created are mapped, scanned and indexed
     * (and followed while their owner may append); segments another process evicted leave the index (their mappings
     * stay until the last lease of them goes: the bytes are still valid, the file is only unlinked). Called under the
     * allocation lock.
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
            appender.failed("cannot list " + segmentsDirectory, e);
            return;
        }
        Set<Long> known = new HashSet<>();
        for (Segment segment : List.copyOf(appender.segmentsLocked())) {
            if (listed.containsKey(segment.id)) {
                known.add(segment.id);
            } else {
                // Evicted by another process (or deleted by hand): its pages go, its mapping when the leases do.
                appender.drop(segment, false);
            }
        }
        unreadable.retainAll(listed.keySet());
        for (var e : listed.entrySet()) {
            if (!known.contains(e.getKey()) && !unreadable.contains(e.getKey())) {
                adopt(e.getKey(), e.getValue());
            }
        }
        long total = 0;
        for (Segment segment : appender.segmentsLocked()) {
            total += segment.size;
        }
        appender.recount(total);
        seenGeneration = generation;
        refollow(System.nanoTime());
    }

    /** Maps, checks, scans and indexes a segment another process created; under the allocation lock. */
    private void adopt(long id, Path file) {
        Segment segment;
        try {
            long size = Files.size(file);
            if (size < SegmentFormat.SEGMENT_HEADER || size > (1L << 40)) {
                unreadable.add(id);
                return;
            }
            segment = appender.map(id, file, size);
        } catch (IOException e) {
            return; // evicted between the listing and now
        }
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
        Watch watch = new Watch(segment, SegmentFormat.owner(segment.map));
        segment.cursors(SegmentFormat.SEGMENT_HEADER, segment.size, 0);
        watch.at = SegmentFormat.SEGMENT_HEADER;
        appender.add(segment);
        watches.put(segment, watch);
        tail(watch, false);
    }

    /**
     * Indexes the records appended to followed segments since the last look. Lock-free unless a followed segment has
     * a new record (one load each), or the owners are due for a check.
     *
     * @param force look even without a sign of new records (a fill waiting for another process's page)
     * @return whether a new page may have been indexed
     */
    private boolean followOthers(boolean force) {
        Watch[] watched = following;
        long now = System.nanoTime();
        boolean sweep = now - sweptAt >= SWEEP_NANOS;
        boolean news = false;
        try {
            for (Watch watch : watched) {
                if (watch.segment.hasRecordAt(watch.at)) {
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
        appender.lock();
        try {
            if (appender.closed()) {
                return false;
            }
            long before = index.size();
            for (Watch watch : following.clone()) {
                tail(watch, false);
            }
            if (sweep) {
                sweptAt = now;
                refollow(now);
            }
            return index.size() != before || news;
        } finally {
            appender.unlock();
        }
    }

    /**
     * Scans a segment from where the last scan of it ended and indexes what it finds (unverified: the first read of
     * each page checks its CRC). With {@code last}, the owner is known to be gone: what is there now is all there
     * will be. Under the allocation lock.
     */
    private void tail(Watch watch, boolean last) {
        Segment segment = watch.segment;
        SegmentFormat.ScanEnd end;
        try {
            end = SegmentFormat.scan(
                    segment.map,
                    segment.id,
                    segment.headerEnd(),
                    segment.payloadStart(),
                    segment.generation(),
                    r -> index.add(segment, r.key(), r.payloadOffset(), r.payloadCrc(), false, 0, appender.isClosed()),
                    position -> {});
        } catch (InternalError e) {
            discardLocked(segment);
            return;
        }
        segment.cursors(end.headerEnd(), end.payloadStart(), end.generation());
        watch.at = end.headerEnd();
        if (last && end.damage() != null) {
            counters.corrupted(); // a writer killed mid-record: the pages after it are lost, as in a recovery
        }
    }

    /** Drops a segment whose mapping faulted while following it; under the allocation lock. */
    private void discardLocked(Segment segment) {
        left(segment);
        if (appender.drop(segment, false)) {
            counters.corrupted();
        }
    }

    /**
     * Decides which segments of other processes to follow: those of a live owner that are its newest, or stopped
     * being so less than a second ago. A segment whose owner died gets one last scan. Under the allocation lock.
     */
    private void refollow(long now) {
        List<Segment> segments = appender.segmentsLocked();
        Map<Long, Long> newest = new HashMap<>();
        for (Segment segment : segments) {
            Watch watch = watches.get(segment);
            if (watch != null && watch.owner != 0) {
                newest.merge(watch.owner, segment.id, Math::max);
            }
        }
        Map<Long, Boolean> alive = new HashMap<>();
        List<Watch> watched = new ArrayList<>();
        for (Segment segment : segments) {
            Watch watch = watches.get(segment);
            if (watch == null || watch.owner == 0 || watch.owner == shared.owner()) {
                continue;
            }
            boolean live = alive.computeIfAbsent(watch.owner, o -> {
                try {
                    return shared.alive(o);
                } catch (IOException e) {
                    return false;
                }
            });
            boolean wasFollowed = watch.until >= 0;
            if (!live) {
                if (wasFollowed) {
                    tail(watch, true);
                    watch.until = -1;
                }
                continue;
            }
            if (newest.get(watch.owner) == segment.id) {
                watch.until = 0;
            } else if (watch.until == 0) {
                watch.until = now + GRACE_NANOS;
            }
            if (watch.until == 0 || now - watch.until < 0) {
                watched.add(watch);
            } else if (wasFollowed) {
                tail(watch, false);
                watch.until = -1;
            }
        }
        following = watched.toArray(new Watch[0]);
    }

    // ------------------------------------------------------------------------------------------------ header order

    @Override
    public void awaitTurn(Segment segment, long header) {
        segment.awaitTurn(header, TURN_NANOS);
    }

    @Override
    public void passTurn(Segment segment, long header, int headerLength) {
        segment.passTurn(header, headerLength);
    }

    // ------------------------------------------------------------------------------------------------ fills

    /**
     * Claims the page for this process (a byte-range lock the kernel drops if the process dies) and returns
     * {@code null}; or, if another process claims it, waits — parking, at most until the deadline or the fill wait —
     * for that process's page to appear in the directory, and returns it. If the other process gives up or dies, its
     * claim goes and this one fills the page. After the wait times out, returns {@code null} without a claim: the
     * caller fills the page as well.
     */
    @Override
    public Page awaitFill(PageKey key, long deadlineNanos, Function<PageKey, Page> look) {
        if (appender.closed()) {
            return null;
        }
        int slot = SharedDirectory.claimSlot(key);
        long until = Math.min(deadlineNanos, System.nanoTime() + fillWaitNanos);
        long pause = 50_000;
        try {
            while (!appender.closed()) {
                if (shared.tryClaim(slot)) {
                    // A holder may have finished just before (after this fill's own look): look once more.
                    Page page = peekFollowing(key, look);
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
                Page page = peekFollowing(key, look);
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
    private Page peekFollowing(PageKey key, Function<PageKey, Page> look) {
        catchUp();
        followOthers(true);
        return look.apply(key);
    }

    @Override
    public void fillDone(PageKey key) {
        Integer slot = claims.remove(key);
        if (slot != null) {
            shared.release(slot);
        }
    }

    @Override
    public long[] sharingCounts() {
        return new long[] {peerFills.sum(), peerWaitTimeouts.sum()};
    }

    /** Gives up the owner slot and every claim: the others may now evict this tier's segments. */
    @Override
    public void close() {
        following = new Watch[0];
        watches.clear();
        claims.clear();
        shared.close();
    }

    @Override
    public String toString() {
        return "SharedPeers[owner " + shared.owner() + ", following " + following.length + "]";
    }
}
