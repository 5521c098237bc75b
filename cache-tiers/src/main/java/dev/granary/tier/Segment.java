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
    /**
     * A read-only descriptor of the file, for verifying pages and checking the file's length without touching the
     * mapping (see {@link #crc}); {@code -1} where raw descriptors are not available. Closed when the mapping goes.
     */
    private final int fd;
    /** When the file's length was last checked ({@link #intact}); racy by design: a lost update costs one check. */
    private volatile long lengthCheckedAt;
    private volatile boolean truncated;
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

    private Segment(long id, Path file, long size, Arena arena, MemorySegment map, int fd, Consumer<Segment> onFree) {
        this.id = id;
        this.fd = fd;
        this.lengthCheckedAt = System.nanoTime(); // its length was right when it was mapped
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
        Path path = openAs == null ? file : openAs;
        int fd = -1;
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment map = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            fd = NativeFiles.openReadOnly(path);
            return new Segment(id, file, size, arena, map, fd, onFree);
        } catch (IOException | RuntimeException e) {
            NativeFiles.close(fd);
            arena.close();
            throw e;
        }
    }

    /** Bytes read per {@code pread} while verifying; larger pages are read in several. */
    private static final int SCRATCH = 256 << 10;
    /** Scratch buffers for {@link #crc}: an optimisation only, a thread that finds none allocates its own. */
    private static final java.util.concurrent.atomic.AtomicReferenceArray<MemorySegment> SCRATCHES =
            new java.util.concurrent.atomic.AtomicReferenceArray<>(2 * Runtime.getRuntime().availableProcessors());

    /**
     * Computes the CRC32C of {@code length} bytes of the file at {@code offset} by reading the file, not the mapping:
     * a page of a mapping past the end of a truncated file is a {@code SIGBUS}, and inside the CRC32C intrinsic the
     * JVM cannot turn that into an exception: it dies. Reading also brings the page into the page cache in large
     * requests, which a cold page needs before it is served anyway.
     *
     * @throws java.io.EOFException if the file ends before the page does (it was truncated)
     * @throws IOException          if the read fails
     */
    int crc(long offset, int length) throws IOException {
        if (fd < 0) {
            return crcThroughChannel(offset, length);
        }
        MemorySegment scratch = takeScratch();
        try {
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            long done = 0;
            while (done < length) {
                int chunk = (int) Math.min(SCRATCH, length - done);
                MemorySegment into = scratch.asSlice(0, chunk);
                long n = NativeFiles.pread(fd, into, offset + done);
                if (n < chunk) {
                    truncated = true;
                    throw new java.io.EOFException(file + " ends before byte " + (offset + length) + " of a page"
                            + " (expected: a segment file of " + size + " bytes; it was truncated)");
                }
                crc.update(into.asByteBuffer());
                done += chunk;
            }
            return (int) crc.getValue();
        } finally {
            giveBack(scratch);
        }
    }

    /** Where raw descriptors are not available: the same check, through a channel opened for it. */
    private int crcThroughChannel(long offset, int length) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocate(length);
            while (buffer.hasRemaining()) {
                if (channel.read(buffer, offset + buffer.position()) < 0) {
                    truncated = true;
                    throw new java.io.EOFException(file + " ends before byte " + (offset + length) + " of a page"
                            + " (expected: a segment file of " + size + " bytes; it was truncated)");
                }
            }
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            crc.update(buffer.flip());
            return (int) crc.getValue();
        }
    }

    private static MemorySegment takeScratch() {
        for (int i = 0; i < SCRATCHES.length(); i++) {
            MemorySegment s = SCRATCHES.getAndSet(i, null);
            if (s != null) {
                return s;
            }
        }
        return Arena.ofAuto().allocate(SCRATCH, 4096);
    }

    private static void giveBack(MemorySegment scratch) {
        for (int i = 0; i < SCRATCHES.length(); i++) {
            if (SCRATCHES.compareAndSet(i, null, scratch)) {
                return;
            }
        }
    }

    /**
     * {@return false if the file has been found shorter than the mapping} Checked with one {@code lseek} at most every
     * {@code interval} nanoseconds per segment, so a truncated file stops being served within that time instead of
     * faulting under readers; a check costs about a microsecond, the timer check on every hit tens of nanoseconds.
     *
     * @param now      {@link System#nanoTime()}
     * @param interval nanoseconds between checks
     */
    boolean intact(long now, long interval) {
        if (truncated) {
            return false;
        }
        if (now - lengthCheckedAt < interval) {
            return true;
        }
        lengthCheckedAt = now;
        return intactNow();
    }

    /** {@return false if the file is now shorter than the mapping}: checks at once */
    boolean intactNow() {
        if (fd >= 0 && !truncated) {
            try {
                if (NativeFiles.size(fd) < size) {
                    truncated = true;
                }
            } catch (IOException e) {
                truncated = true;
            }
        } else if (fd < 0 && !truncated) {
            try {
                truncated = Files.size(file) < size;
            } catch (IOException e) {
                truncated = true; // deleted under the tier: nothing to serve from it either
            }
        }
        return !truncated;
    }

    /** {@return whether the file was found shorter than its mapping} */
    boolean truncated() {
        return truncated;
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
        long payload = payloadOffset(headerEnd, payloadStart, headerLength, payloadLength);
        if (payload < 0) {
            return -1;
        }
        lastHeader = headerEnd;
        reservedPayload = payload;
        headerEnd += headerLength;
        payloadStart = payload;
        return payload;
    }

    /**
     * The append rule: where a record's payload goes given the cursors, or {@code -1} if header and payload do not
     * both fit between them. Shared with the tier's dry run ({@link DiskTierSimulation}), so its packing is this one.
     */
    static long payloadOffset(long headerEnd, long payloadStart, int headerLength, int payloadLength) {
        long payload = (payloadStart - payloadLength) & -SegmentFormat.alignment(payloadLength);
        return payload < headerEnd + headerLength ? -1 : payload;
    }

    /** {@return the end of the record headers}; guarded by the tier's allocation lock */
    long headerEnd() {
        return headerEnd;
    }

    /** {@return the start of the payloads}; guarded by the tier's allocation lock */
    long payloadStart() {
        return payloadStart;
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
        NativeFiles.close(fd);
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
