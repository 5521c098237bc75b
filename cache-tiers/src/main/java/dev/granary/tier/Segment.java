// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.PageKey;
import dev.granary.spi.RegionPolicy;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * One segment file of a {@link DiskTier}, mapped into memory for as long as anything references it.
 *
 * <h2>References</h2>
 * The tier holds one reference while the segment is live; every page object of the segment holds one; a writer holds
 * one while it copies. When the count reaches zero the mapping is unmapped, and, if the segment was evicted, its file
 * is deleted: memory a reader holds is never unmapped underneath it.
 *
 * <h2>Thread safety</h2>
 * The append cursors ({@link #reserve}) are guarded by the tier's allocation lock; the page list and the dead flag by
 * this object's monitor; the reference count is atomic.
 */
final class Segment implements RegionPolicy.Region {

    final long id;
    final Path file;
    final long size;
    final MemorySegment map;
    private final Arena arena;
    private final AtomicInteger refs = new AtomicInteger(1);
    private final Consumer<Segment> onFree;
    /** Guarded by the tier's allocation lock. */
    private long headerEnd;
    /** Guarded by the tier's allocation lock. */
    private long payloadStart;
    private volatile long lastAccess;
    /** The workload clock when a page of the segment was last written or read; 0 for a recovered segment. */
    private volatile long stamp;
    /**
     * The append generation written into new records: 0 for a new segment, one more than its last record's for a
     * recovered one. Set before the segment takes appends; read by writers after the allocation lock handed it out.
     */
    int generation;
    /** The pages of this segment that are in the tier's index. */
    private final java.util.Set<DiskTier.DiskPage> pages = new java.util.HashSet<>(); // guarded by this
    private boolean dead; // guarded by this
    private volatile boolean deleteWhenFree;

    private Segment(long id, Path file, long size, Arena arena, MemorySegment map, Consumer<Segment> onFree) {
        this.id = id;
        this.file = file;
        this.size = size;
        this.arena = arena;
        this.map = map;
        this.onFree = onFree;
        this.headerEnd = SegmentFormat.SEGMENT_HEADER;
        this.payloadStart = size;
    }

    /**
     * Maps a segment file read-write.
     *
     * @param file   the file's name once complete
     * @param openAs the path to open now, if the file is still being created under a temporary name; else null
     */
    static Segment map(long id, Path file, long size, Consumer<Segment> onFree, Path openAs) throws IOException {
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(openAs == null ? file : openAs, StandardOpenOption.READ,
                StandardOpenOption.WRITE)) {
            MemorySegment map = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            return new Segment(id, file, size, arena, map, onFree);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** Sets the append cursors after a scan; the segment then takes no more appends unless told otherwise. */
    void cursors(long headerEnd, long payloadStart) {
        this.headerEnd = headerEnd;
        this.payloadStart = payloadStart;
    }

    /**
     * Reserves room for one record header and its payload.
     *
     * @return the payload offset, also in {@link #reservedPayload}, with the header at {@link #lastHeader}; {@code -1}
     *     if it does not fit
     */
    long reserve(int headerLength, int payloadLength) {
        long payload = (payloadStart - payloadLength) & -SegmentFormat.alignment(payloadLength);
        if (payload < headerEnd + headerLength) {
            return -1;
        }
        lastHeader = headerEnd;
        reservedPayload = payload;
        headerEnd += headerLength;
        payloadStart = payload;
        return payload;
    }

    /** The header offset of the last successful {@link #reserve}; guarded by the tier's allocation lock. */
    long lastHeader;
    /** The payload offset of the last successful {@link #reserve}; guarded by the tier's allocation lock. */
    long reservedPayload;

    /** {@return the bytes between the header area and the payloads}; guarded by the tier's allocation lock */
    long freeBytes() {
        return payloadStart - headerEnd;
    }

    /** {@return whether a page of this length could ever fit in an empty segment of this size} */
    static boolean fits(long segmentSize, int headerLength, int payloadLength) {
        long payload = (segmentSize - payloadLength) & -SegmentFormat.alignment(payloadLength);
        return payload >= SegmentFormat.SEGMENT_HEADER + headerLength;
    }

    /** Adds a page to the segment's list; the caller holds this segment's monitor and checked {@link #deadLocked}. */
    /** {@return whether fewer than half of the page bytes this segment holds are live under {@code workload}} */
    synchronized boolean mostlyDead(dev.granary.spi.Workload workload) {
        long live = 0;
        long total = 0;
        for (DiskTier.DiskPage page : pages) {
            total += page.length();
            if (!workload.isDead(page.stamp)) {
                live += page.length();
            }
        }
        return live * 2 < total;
    }

    void addLocked(DiskTier.DiskPage page) {
        pages.add(page);
    }

    /** {@return whether the segment was evicted or closed}; the caller holds this segment's monitor */
    boolean deadLocked() {
        return dead;
    }

    /** The page left the tier's index (invalidated, moved, damaged). */
    synchronized void pageRemoved(DiskTier.DiskPage page) {
        pages.remove(page);
    }

    /** Marks the segment dead and returns its pages, for the tier to drop from its index. */
    synchronized List<DiskTier.DiskPage> kill(boolean delete) {
        dead = true;
        deleteWhenFree = delete;
        List<DiskTier.DiskPage> all = new ArrayList<>(pages);
        pages.clear();
        if (delete) {
            // Unlink now: the mapping keeps the bytes for readers, and a later open of the directory (by this
            // process or another) must not find, recover or resume a segment that is on its way out.
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                System.getLogger(DiskTier.class.getName()).log(System.Logger.Level.WARNING,
                        "cannot delete evicted segment " + file + ": " + e);
            }
        }
        return all;
    }

    synchronized boolean isDead() {
        return dead;
    }

    /** {@return whether the file was deleted (evicted), its bytes still counted until the mapping goes} */
    boolean deletedWhenFree() {
        return deleteWhenFree;
    }

    boolean tryRetain() {
        int count = refs.get();
        while (count > 0) {
            int witness = refs.compareAndExchange(count, count + 1);
            if (witness == count) {
                return true;
            }
            count = witness;
        }
        return false;
    }

    void release() {
        int after = refs.decrementAndGet();
        if (after == 0) {
            free();
        } else if (after < 0) {
            throw new IllegalStateException("segment " + id + " released more often than retained");
        }
    }

    private void free() {
        arena.close();
        onFree.accept(this);
    }

    void touched(long clock) {
        if (lastAccess != clock) {
            lastAccess = clock;
        }
    }

    void stamp(long workloadClock) {
        if (stamp < workloadClock) {
            stamp = workloadClock;
        }
    }

    long stamp() {
        return stamp;
    }

    @Override
    public long id() {
        return id;
    }

    @Override
    public long lastAccess() {
        return lastAccess;
    }

    @Override
    public synchronized int pages() {
        return pages.size();
    }

    @Override
    public void forEachPage(Consumer<PageKey> action) {
        List<DiskTier.DiskPage> copy;
        synchronized (this) {
            copy = new ArrayList<>(pages);
        }
        for (DiskTier.DiskPage page : copy) {
            action.accept(page.key());
        }
    }

    @Override
    public String toString() {
        return "Segment[" + id + ", " + file.getFileName() + "]";
    }
}
