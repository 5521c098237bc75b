// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.PageKey;
import dev.granary.spi.RegionPolicy;
import dev.granary.spi.Workload;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.zip.CRC32C;

/**
 * One segment file of a {@link DiskTier}, mapped into memory for as long as anything references it.
 *
 * <h2>References</h2>
 * The tier holds one reference while the segment is live; every page object handed to a reader (a lease) holds one;
 * a writer holds one while it writes. When the count reaches zero the mapping is unmapped, and, if the segment was
 * evicted, its file is deleted: memory a reader holds is never unmapped underneath it.
 *
 * <h2>Who changes what</h2>
 * Every mutable field but the page rows is private and changed only through this class's methods, each documenting
 * who calls it and under which lock:
 * <ul>
 *   <li>the append cursors, the header area's blocks and the append generation ({@link #reserve}, {@link #cursors}):
 *       the tier's allocation lock ({@link SegmentAppender}, and {@link SharedPeers} for segments it follows);</li>
 *   <li>direct writes and writeback ({@link #enableDirectWrites}, {@link #enableWriteback}): set under the
 *       allocation lock before the segment takes appends, read by writers that got the segment through that lock;
 *       the writeback mark moves by compare-and-set;</li>
 *   <li>the page rows and their registration ({@link #rows}, {@link #records}, {@link #live}, {@link #index},
 *       {@link #slot}) and the dead flag: the {@link DiskIndex}'s lock (readers look at them under its optimistic
 *       reads). The index owns them and writes them itself; they live here so that a lookup that finds its page reads
 *       one row of its segment, with no further indirection;</li>
 *   <li>the order of header stores in shared mode ({@link #awaitTurn}): a lock of the segment's own;</li>
 *   <li>the reference count: atomic; the length check, the recency clocks and the file's touch time: volatile and
 *       racy by design (a lost update costs one more check or touch).</li>
 * </ul>
 * What only a shared directory needs of a followed segment (its owner, where its next record would start, how long
 * it is followed) is kept by {@link SharedPeers}, not here.
 */
final class Segment implements RegionPolicy.Region {

    final long id;
    final Path file;
    final long size;
    final MemorySegment map;
    /**
     * A descriptor of the file, for writing pages ({@link #write}), verifying them and checking the file's length
     * without touching the mapping (see {@link #crc}); {@code -1} where raw descriptors are not available. Closed when
     * the mapping goes.
     */
    private final int fd;
    /** The path the file was opened by (its temporary name while being created), for {@link #enableDirectWrites}. */
    private final Path openedAs;
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
     * recovered one ({@link #cursors}). Set before the segment takes appends; read by writers after the allocation
     * lock handed it out.
     */
    private int generation;

    private volatile boolean deleteWhenFree;
    /**
     * Whether the mapping is advised {@code MADV_RANDOM} ({@link #adviseRandom}): then a store faults in one page of
     * the file; without the advice it reads a read-ahead window around it ({@code read_ahead_kb}, up to megabytes of
     * zeroes from a fallocated file), so {@link #writeHeader} writes with {@code pwrite} instead.
     */
    private volatile boolean random;
    /**
     * A second descriptor of the file, opened {@code O_DIRECT} by {@link #enableDirectWrites} for payloads written from
     * aligned native memory (decision 0015); {@code -1} for none. Set before the segment takes appends (under the
     * tier's allocation lock, which writers pass through), closed when the mapping goes.
     */
    private int directFd = -1;
    /** Payloads of at least this many bytes go direct; set with {@link #directFd}. */
    private int directMin = Integer.MAX_VALUE;
    /** Cleared for good when the kernel refuses a direct write ({@code EINVAL}): the rest stay buffered. */
    private volatile boolean directWorks = true;
    /**
     * Early writeback (decision 0016): every this many bytes of payloads written, a chunk of them is handed to the
     * device ({@link #wrote}); {@code 0} for never. Set by {@link #enableWriteback} before the segment takes appends
     * (under the tier's allocation lock, which writers pass through).
     */
    private long writebackEvery;
    /**
     * Every payload at or above this offset has been handed to writeback, or was written before the segment was
     * reopened; payloads are written downwards from the end of the file, so the mark only goes down.
     */
    private final AtomicLong writebackMark = new AtomicLong();

    private Segment(
            long id,
            Path file,
            Path openedAs,
            long size,
            Arena arena,
            MemorySegment map,
            int fd,
            Consumer<Segment> onFree) {
        this.id = id;
        this.openedAs = openedAs;
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
            fd = NativeFiles.openReadWrite(path);
            return new Segment(id, file, path, size, arena, map, fd, onFree);
        } catch (IOException | RuntimeException e) {
            NativeFiles.close(fd);
            arena.close();
            throw e;
        }
    }

    /** The alignment in memory, length and file offset that a write needs to go direct: one OS page. */
    static final int DIRECT_ALIGNMENT = 4096;

    /**
     * Lets payloads of at least {@code minBytes} go to the device directly ({@code O_DIRECT}) rather than be copied
     * into the page cache (decision 0015): for a segment about to take appends, where the mapping is
     * {@linkplain #adviseRandom advised random} (no read-around could then bring a payload's pages into the page
     * cache before they are written). Reads through the descriptor used for verifying are advised random too
     * ({@code POSIX_FADV_RANDOM}), for the same reason. A no-op where the file system refuses direct I/O, and for
     * {@code minBytes <= 0} (direct writes off). Under the tier's allocation lock, before any write that should go
     * direct.
     */
    void enableDirectWrites(int minBytes) {
        if (minBytes <= 0 || directFd >= 0 || fd < 0 || !random) {
            return;
        }
        int direct = NativeFiles.openDirect(openedAs);
        if (direct >= 0) {
            NativeFiles.adviseRandomReads(fd);
            directMin = Math.max(minBytes, DIRECT_ALIGNMENT);
            directFd = direct;
        }
    }

    /**
     * Has the payloads written into this segment from now on handed to the device every {@code bytes} bytes of them
     * ({@link #wrote}, decision 0016), rather than left dirty in the page cache until the kernel's flusher takes
     * them. A no-op for {@code bytes <= 0} (off) and where raw descriptors are not available. Under the tier's
     * allocation lock, before the segment takes appends.
     */
    void enableWriteback(long bytes) {
        if (bytes <= 0 || fd < 0) {
            return;
        }
        writebackMark.set(payloadStart); // a new segment's end; a resumed one's lowest payload
        writebackEvery = bytes;
    }

    /**
     * Called once a page whose payload was written at {@code payload} through the page cache is published: once the
     * payloads below the last hand-off reach two intervals, hands the first of them (from one interval above this
     * payload up to the
     * mark) to writeback ({@link NativeFiles#startWriteback}), and moves the mark down. The interval of lag gives
     * writers of pages reserved before this one (higher in the file) time to finish theirs; a page written after its
     * range was handed off is dirty again and left to the kernel's flusher. Lock-free: of the writers that cross a
     * mark at once, the one that moves it hands the chunk off.
     *
     * @return whether a chunk was handed to writeback
     */
    boolean wrote(long payload) {
        long every = writebackEvery;
        if (every <= 0) {
            return false;
        }
        long mark = writebackMark.get();
        long from = (payload + every) & -(long) DIRECT_ALIGNMENT;
        if (mark - from < every || !writebackMark.compareAndSet(mark, from)) {
            return false;
        }
        return NativeFiles.startWriteback(fd, from, mark - from);
    }

    /**
     * When the segment is full: hands everything not handed off yet, the last payloads and the record headers, to
     * writeback. The caller holds a reference.
     *
     * @return whether anything was handed to writeback
     */
    boolean finishWriteback() {
        if (writebackEvery <= 0) {
            return false;
        }
        long mark = writebackMark.getAndSet(0);
        return mark > 0 && NativeFiles.startWriteback(fd, 0, mark);
    }

    /**
     * Writes bytes into the file at {@code position} with {@code pwrite(2)}, not through the mapping: storing into a
     * fresh mapping takes a page fault per 4 KiB (each a zero-filled page of the file read in, then dirtied), which
     * held the tier's writes at 0.4-0.5 of a plain append; a positional write copies straight into the page cache.
     * The mapping sees the bytes at once (one page cache). Heap memory goes through a native scratch buffer.
     *
     * <p>With {@link #enableDirectWrites} on, a payload in native memory whose address, length and position are
     * multiples of {@link #DIRECT_ALIGNMENT} goes to the device instead, with no copy into the page cache; the kernel
     * drops any page cache over the range (ours or another process's mapping included), so the mapping then reads
     * the bytes from the device. Such a range shares no page with anything else in the file: headers are packed from
     * the front and never reach the lowest payload, and the range's own ends are page boundaries.
     *
     * @return whether the bytes went direct
     * @throws IOException if the write fails
     */
    boolean write(MemorySegment from, long position) throws IOException {
        long length = from.byteSize();
        if (directFd >= 0
                && length >= directMin
                && from.isNative()
                && ((from.address() | length | position) & (DIRECT_ALIGNMENT - 1)) == 0
                && directWorks) {
            if (NativeFiles.pwriteDirect(directFd, from, position)) {
                return true;
            }
            directWorks = false; // refused or short: this and every later write of the segment go buffered
        }
        writeBuffered(from, position);
        return false;
    }

    private void writeBuffered(MemorySegment from, long position) throws IOException {
        if (fd < 0) {
            try {
                MemorySegment.copy(from, 0, map, position, from.byteSize());
            } catch (InternalError e) {
                throw new IOException("cannot write to " + file + ": " + e.getMessage(), e);
            }
            return;
        }
        if (from.isNative()) {
            NativeFiles.pwrite(fd, from, position);
            return;
        }
        long total = from.byteSize();
        if (total <= SMALL_WRITE) {
            // A record header (a heap array of ~130 bytes, one per page): a pooled native buffer. An arena of the
            // call's own costs a malloc, zeroing and a free per page, a third of a 4 KiB page's write time.
            MemorySegment buffer = takeSmall();
            try {
                MemorySegment part = buffer.asSlice(0, total);
                MemorySegment.copy(from, 0, part, 0, total);
                NativeFiles.pwrite(fd, part, position);
            } finally {
                giveBackSmall(buffer);
            }
            return;
        }
        // Native memory of this call's own, freed when it returns: not the verification scratch pool, whose misses
        // allocate 256 KiB that only a GC frees (and that counts against MaxDirectMemorySize until it does).
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment scratch = arena.allocate(Math.min(SCRATCH, total), 64);
            long done = 0;
            while (done < total) {
                int chunk = (int) Math.min(SCRATCH, total - done);
                MemorySegment part = scratch.asSlice(0, chunk);
                MemorySegment.copy(from, done, part, 0, chunk);
                NativeFiles.pwrite(fd, part, position + done);
                done += chunk;
            }
        }
    }

    /**
     * Advises the kernel that the mapping is read at random ({@code madvise(MADV_RANDOM)}): a fault brings in the
     * page it needs, not a read-ahead window around it. Called before anything touches the mapping: the first fault
     * of a fresh segment without it read a window of {@code read_ahead_kb} (8 MiB here: 2 048 pages zero-filled from
     * the fallocated file, ~2 ms a segment) to store a 64-byte segment header.
     */
    void adviseRandom() {
        NativeFiles.adviseRandom(map);
        random = true;
    }

    /**
     * Stores a record header into the file through the mapping (with {@code pwrite} where the mapping is not
     * {@linkplain #adviseRandom advised random}): a copy of ~100-200 bytes instead of a second system
     * call per page (a {@code pwrite} of a header cost as much as a third of a 4 KiB page's whole write). Headers
     * are packed at the front of the segment, and each 64 KiB of them is mapped writable in one call as it gets its
     * blocks ({@link #reserve}), so these stores take no page faults (a fault per 4 KiB of headers, some 30 records,
     * was 11 % of a 4 KiB put's time here; payload stores faulted once per page). The bytes land in the same page
     * cache as the payload's {@code pwrite}, which has returned before this begins: killing the process cannot
     * reorder them, and a header it interrupts half-stored fails its CRC.
     *
     * @throws IOException if the store faults (the file was truncated under the tier, or its medium failed)
     */
    void writeHeader(byte[] header, long position) throws IOException {
        if (!random && fd >= 0) {
            writeBuffered(MemorySegment.ofArray(header), position);
            return;
        }
        try {
            MemorySegment.copy(header, 0, map, ValueLayout.JAVA_BYTE, position, header.length);
        } catch (InternalError e) {
            throw new IOException("cannot write to " + file + ": " + e.getMessage(), e);
        }
    }

    /** Bytes read per {@code pread} while verifying; larger pages are read in several. */
    private static final int SCRATCH = 256 << 10;
    /** Scratch buffers for {@link #crc}: an optimisation only, a thread that finds none allocates its own. */
    private static final AtomicReferenceArray<MemorySegment> SCRATCHES =
            new AtomicReferenceArray<>(2 * Runtime.getRuntime().availableProcessors());

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
            CRC32C crc = new CRC32C();
            long done = 0;
            while (done < length) {
                int chunk = (int) Math.min(SCRATCH, length - done);
                MemorySegment into = scratch.asSlice(0, chunk);
                long n = NativeFiles.pread(fd, into, offset + done);
                if (n < chunk) {
                    truncated = true;
                    throw new EOFException(file + " ends before byte " + (offset + length) + " of a page"
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
            ByteBuffer buffer = ByteBuffer.allocate(length);
            while (buffer.hasRemaining()) {
                if (channel.read(buffer, offset + buffer.position()) < 0) {
                    truncated = true;
                    throw new EOFException(file + " ends before byte " + (offset + length) + " of a page"
                            + " (expected: a segment file of " + size + " bytes; it was truncated)");
                }
            }
            CRC32C crc = new CRC32C();
            crc.update(buffer.flip());
            return (int) crc.getValue();
        }
    }

    /** Heap sources up to this size are written through {@link #SMALL_BUFFERS}. */
    private static final int SMALL_WRITE = 4096;
    /**
     * Native buffers of {@link #SMALL_WRITE} bytes for writing record headers: an optimisation only, a writer that
     * finds none takes a new one (4 KiB that the GC frees if the pool is full when it is given back).
     */
    private static final AtomicReferenceArray<MemorySegment> SMALL_BUFFERS =
            new AtomicReferenceArray<>(4 * Runtime.getRuntime().availableProcessors());

    private static MemorySegment takeSmall() {
        for (int i = 0; i < SMALL_BUFFERS.length(); i++) {
            MemorySegment s = SMALL_BUFFERS.getAndSet(i, null);
            if (s != null) {
                return s;
            }
        }
        return Arena.ofAuto().allocate(SMALL_WRITE, 64);
    }

    private static void giveBackSmall(MemorySegment buffer) {
        for (int i = 0; i < SMALL_BUFFERS.length(); i++) {
            if (SMALL_BUFFERS.compareAndSet(i, null, buffer)) {
                return;
            }
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

    /**
     * Sets the append cursors and the generation after a scan (recovery, or following another process's appends);
     * the segment then takes no more appends unless told otherwise, with records of {@code generation}. The header
     * area's blocks are taken to end at {@code headerEnd}: the file may be sparse beyond it (see
     * {@link #headerAllocated}). Under the tier's allocation lock (or, at open, by the only thread that sees the
     * segment).
     */
    void cursors(long headerEnd, long payloadStart, int generation) {
        this.headerEnd = headerEnd;
        this.payloadStart = payloadStart;
        this.headerAllocated = headerEnd;
        this.generation = generation;
    }

    /** {@return the append generation of the records this segment takes, or of the last ones a scan found} */
    int generation() {
        return generation;
    }

    /**
     * Where the header area's real disk blocks end: a segment file is sparse (decision 0014) but for its header area,
     * which is stored through the mapping and so must never meet a hole (on a full disk that store would be a
     * {@code SIGBUS}, not an error). Set when the segment is created; {@link #reserve} extends it ahead of the
     * headers. Guarded by the tier's allocation lock.
     */
    private long headerAllocated;

    /** Records that the file's first {@code end} bytes have real disk blocks; under the allocation lock. */
    void headersAllocated(long end) {
        this.headerAllocated = end;
    }

    /**
     * Maps the header area allocated so far into the process writable in one call, where record headers are stored
     * through the mapping ({@linkplain #adviseRandom advised}): 16 page faults fewer per 64 KiB of headers.
     */
    void populateHeaders() {
        populate(0, headerAllocated);
    }

    private void populate(long from, long to) {
        if (random) {
            NativeFiles.populateWritable(map.asSlice(from, to - from));
        }
    }

    /**
     * Reserves room for one record header and its payload.
     *
     * @return the payload offset, also {@link #reservedPayload()}, with the header at {@link #lastHeader()}; {@code -1}
     *     if it does not fit, or the header area cannot get disk blocks
     */
    long reserve(int headerLength, int payloadLength) {
        long payload = payloadOffset(headerEnd, payloadStart, headerLength, payloadLength);
        if (payload < 0) {
            return -1;
        }
        long end = headerEnd + headerLength;
        if (end > headerAllocated && fd >= 0) {
            // Blocks for the next chunk of headers, ahead of the stores: never past the payload just reserved, so
            // the range holds no written (or reserved) payload, and a fallback that writes zeros clobbers nothing.
            long to = Math.min((end + NativeFiles.HEADER_CHUNK - 1) & -NativeFiles.HEADER_CHUNK, payload);
            try {
                NativeFiles.allocate(fd, headerAllocated, to - headerAllocated);
            } catch (IOException e) {
                return -1; // as if full: the tier opens a new segment, whose creation reports the disk's state
            }
            // Mapped now, in one call, so the header stores take no faults. A chunk clipped to the payload below it
            // may leave the next one off a page boundary: the call then fails and the stores fault as before.
            populate(headerAllocated, to);
            headerAllocated = to;
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
    private long lastHeader;
    /** The payload offset of the last successful {@link #reserve}; guarded by the tier's allocation lock. */
    private long reservedPayload;

    /** {@return the header offset of the last successful {@link #reserve}}; under the tier's allocation lock */
    long lastHeader() {
        return lastHeader;
    }

    /** {@return the payload offset of the last successful {@link #reserve}}; under the tier's allocation lock */
    long reservedPayload() {
        return reservedPayload;
    }

    /** {@return the bytes between the header area and the payloads}; guarded by the tier's allocation lock */
    long freeBytes() {
        return payloadStart - headerEnd;
    }

    /** {@return whether a page of this length could ever fit in an empty segment of this size} */
    static boolean fits(long segmentSize, int headerLength, int payloadLength) {
        long payload = (segmentSize - payloadLength) & -SegmentFormat.alignment(payloadLength);
        return payload >= SegmentFormat.SEGMENT_HEADER + headerLength;
    }

    // ---- the pages of this segment: one row of four longs per record, guarded by the DiskIndex's lock ----
    // Records are only ever appended: a record number names one page of this file for the segment's whole life, and
    // a page leaving the index is only marked removed. So a page object (a lease) needs nothing but the segment and
    // the record number, and nothing here is per page but these 32 bytes. Rows, not columns: a lookup that finds
    // its record reads one cache line (offset, object and length to compare; payload and CRC to serve).

    /** Longs per record: offset; object << 32 | length; payload << 32 | CRC32C; stamp << 32 | verified. */
    static final int ROW = 4;
    /** The object id of a record that left the index. */
    static final int REMOVED = -1;

    /** The index this segment is registered with, and its slot there (0 when not registered). */
    DiskIndex index;

    int slot;
    /** Records added so far, and how many of them are in the index. */
    int records;

    int live;
    /**
     * The records, {@link #ROW} longs each. The last long (stamp, verified flag) is written without the lock: a lost
     * update only delays a stamp or verifies a page twice; the verified flag only ever goes from 0 to 1 for a record.
     */
    ChunkedLongs rows = new ChunkedLongs(0);

    /** Appends a record; {@return its record number} Under the index's write lock. */
    int append(int object, long offset, int length, long payload, int crc, int stamp, boolean checked) {
        int r = records;
        long b = (long) r * ROW;
        if (b + ROW > rows.length()) {
            // grow by half, but in whole chunks once past one: only the last chunk is ever copied
            long more = Math.min(Math.max(8L * ROW, rows.length() >> 1), ChunkedLongs.SIZE);
            rows.resize(rows.length() + more);
        }
        rows.set(b, offset);
        rows.set(b + 1, (long) object << 32 | (length & 0xFFFF_FFFFL));
        rows.set(b + 2, payload << 32 | (crc & 0xFFFF_FFFFL));
        rows.set(b + 3, (long) stamp << 32 | (checked ? 1 : 0));
        records = r + 1;
        live++;
        return r;
    }

    int object(int r) {
        return (int) (rows.get((long) r * ROW + 1) >> 32);
    }

    long offset(int r) {
        return rows.get((long) r * ROW);
    }

    int length(int r) {
        return (int) rows.get((long) r * ROW + 1);
    }

    long payload(int r) {
        return rows.get((long) r * ROW + 2) >>> 32;
    }

    int crc(int r) {
        return (int) rows.get((long) r * ROW + 2);
    }

    int stampOf(int r) {
        return (int) (rows.get((long) r * ROW + 3) >> 32);
    }

    boolean verified(int r) {
        return (rows.get((long) r * ROW + 3) & 1) != 0;
    }

    void markVerified(int r) {
        rows.merge((long) r * ROW + 3, 1, 1);
    }

    void stampRecord(int r, int stamp) {
        long b = (long) r * ROW + 3;
        if ((int) (rows.get(b) >> 32) != stamp) {
            rows.merge(b, 0xFFFF_FFFF_0000_0000L, (long) stamp << 32);
        }
    }

    boolean removed(int r) {
        return object(r) == REMOVED;
    }

    /** Sets a record's object id ({@link #REMOVED} when it leaves the index). Under the write lock. */
    void object(int r, int object) {
        rows.merge((long) r * ROW + 1, 0xFFFF_FFFF_0000_0000L, (long) object << 32);
    }

    /** Sizes the rows for exactly {@code capacity} records (at least {@link #records}). Under the write lock. */
    void resize(int capacity) {
        rows.resize((long) capacity * ROW);
    }

    /** Drops the rows' spare room once the segment takes no more appends. Under the write lock. */
    void trim() {
        if (rows.length() > (long) records * ROW) {
            resize(records);
        }
    }

    // ---- shared directories (DiskTier.Builder#shared): called by SharedPeers only ----

    /**
     * When this process last set the file's modification time ({@link #touchFile}), which orders segments for
     * eviction across processes; racy by design (a lost update costs one more touch).
     */
    private volatile long fileTouchedAt;

    /**
     * Sets the file's modification time to {@code nowMillis}, unless this process did less than {@code everyMillis}
     * ago: every process sharing the directory then evicts the segment read least recently by any of them. A file
     * gone meanwhile (evicted by another process) is left alone: there is nothing to order.
     */
    void touchFile(long nowMillis, long everyMillis) {
        if (nowMillis - fileTouchedAt >= everyMillis) {
            fileTouchedAt = nowMillis;
            try {
                Files.setLastModifiedTime(file, java.nio.file.attribute.FileTime.fromMillis(nowMillis));
            } catch (IOException e) {
                // evicted by another process meanwhile: nothing to order
            }
        }
    }

    /** Shared mode: the end of the record headers written so far, all of them, in order (see {@link #awaitTurn}). */
    private long headersDone = SegmentFormat.SEGMENT_HEADER;

    private final ReentrantLock turns = new ReentrantLock();
    private final Condition turn = turns.newCondition();

    /**
     * Shared mode: waits until every record header reserved before the one at {@code header} is written, so headers
     * reach the file in the order of their places. Another process reads a segment's records in that order and stops
     * at the first header not yet written; without the wait, a page written after a slower one would stay invisible
     * to the others until the slower one lands, and they would read it from the origin again. Waits at most
     * {@code maxNanos}: a writer stuck in the kernel must not stop the others for ever (its place stays a hole).
     */
    void awaitTurn(long header, long maxNanos) {
        turns.lock();
        try {
            long left = maxNanos;
            while (headersDone < header && left > 0) {
                left = turn.awaitNanos(left);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the header is written all the same; the caller's caller sees it
        } finally {
            turns.unlock();
        }
    }

    /** Shared mode: the header at {@code header} (or a skip record in its place) is written; the next may go. */
    void passTurn(long header, int headerLength) {
        turns.lock();
        try {
            headersDone = Math.max(headersDone, header + headerLength);
            turn.signalAll();
        } finally {
            turns.unlock();
        }
    }

    /**
     * {@return whether a record may have been appended at {@code at}, where the last scan of another process's
     * appends ended} Lock-free: one load of the mapping (the cursor it is checked against is read racily, as the
     * scan under the allocation lock that follows it sorts out).
     */
    boolean hasRecordAt(long at) {
        return at + 8 <= payloadStart && map.get(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, at) != 0;
    }

    private boolean dead;

    /** {@return whether the segment was evicted or closed}; under the index's lock */
    boolean deadLocked() {
        return dead;
    }

    /** {@return whether fewer than half of the page bytes this segment holds are live under {@code workload}} */
    boolean mostlyDead(Workload workload) {
        return index.mostlyDead(this, workload);
    }

    /**
     * Marks the segment dead: called by the index, which has taken its pages out (or by recovery and creation for a
     * segment never indexed). With {@code delete}, the file is unlinked at once.
     */
    void kill(boolean delete) {
        dead = true;
        deleteWhenFree = delete;
        if (delete) {
            // Unlink now: the mapping keeps the bytes for readers, and a later open of the directory (by this
            // process or another) must not find, recover or resume a segment that is on its way out.
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                System.getLogger(DiskTier.class.getName())
                        .log(System.Logger.Level.WARNING, "cannot delete evicted segment " + file + ": " + e);
            }
        }
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
        NativeFiles.close(directFd);
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
    public int pages() {
        DiskIndex i = index;
        return i == null ? 0 : i.livePages(this);
    }

    @Override
    public void forEachPage(Consumer<PageKey> action) {
        DiskIndex i = index;
        if (i != null) {
            i.forEachPage(this, (key, stamp) -> action.accept(key));
        }
    }

    @Override
    public String toString() {
        return "Segment[" + id + ", " + file.getFileName() + "]";
    }
}
