// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The libc calls the disk tier needs and Java does not offer in the form it needs: {@code posix_fallocate(3)}, so a
 * segment file owns its disk blocks before it is mapped (a write into a mapped hole on a full disk is a
 * {@code SIGBUS}, not an exception); {@code madvise(2)}, to tell the kernel that reads of a mapping are random;
 * {@code pread(2)} and {@code lseek(2)} on a raw descriptor, to verify a page and check a file's length without
 * touching the mapping (a mapped page past the end of a truncated file is a {@code SIGBUS} that kills the JVM inside
 * an intrinsic such as CRC32C) and without {@code FileChannel}'s habit of closing itself when a reading thread is
 * interrupted; {@code flock(2)}, to lock a directory through a descriptor of the directory itself;
 * {@code open(2)} with {@code O_DIRECT} and {@code posix_fadvise(2)}, for payloads written past the page cache
 * (decision 0015); and {@code sync_file_range(2)}, to start the writeback of written payloads early (decision 0016).
 *
 * <p>Where the calls cannot be linked, allocation falls back to writing zeros (slower, same guarantee), advice is
 * skipped, and {@link #openReadOnly} returns {@code -1} (callers fall back to {@code FileChannel}). Thread-safe and
 * stateless.
 */
@SuppressWarnings("restricted") // FFM downcalls to libc (runs with --enable-native-access)
final class NativeFiles {

    private static final int O_RDONLY = 0;
    private static final int O_WRONLY = 1;
    private static final int O_RDWR = 2;
    /** The two flags whose values differ between Linux's architectures: x86_64 (the generic values), aarch64. */
    private static final boolean ARM64 = "aarch64".equals(System.getProperty("os.arch"));

    private static final int O_DIRECTORY = ARM64 ? 0x4000 : 0x10000;
    private static final int O_DIRECT = ARM64 ? 0x10000 : 0x4000;
    private static final int EINVAL = 22;
    private static final int POSIX_FADV_RANDOM = 1;
    private static final int O_CLOEXEC = 0x80000;
    private static final int SEEK_END = 2;
    static final int LOCK_SH = 1;
    static final int LOCK_EX = 2;
    static final int LOCK_NB = 4;
    private static final int EINTR = 4;
    private static final int MADV_RANDOM = 1;
    private static final int MADV_WILLNEED = 3;
    /** Linux 5.14+: fault a range in and map it, in one call. Older kernels answer EINVAL, which is ignored. */
    private static final int MADV_POPULATE_READ = 22;

    private static final int MADV_POPULATE_WRITE = 23;
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle FALLOCATE;
    private static final MethodHandle MADVISE;
    private static final MethodHandle PREAD;
    private static final MethodHandle PWRITE;
    /** {@code pwrite} without capturing errno: the common case, with no arena to allocate per call. */
    private static final MethodHandle PWRITE_FAST;

    private static final MethodHandle LSEEK;
    private static final MethodHandle FLOCK;
    /** {@code fcntl(fd, cmd, struct flock *)}: open-file-description locks ({@link #ofdTryLock}). */
    private static final MethodHandle FCNTL;

    private static final MethodHandle FCHMOD;
    private static final MethodHandle FADVISE;
    /** {@code sync_file_range(2)} (Linux): starts writeback of a range without waiting for it. */
    private static final MethodHandle SYNC_FILE_RANGE;

    private static final int SYNC_FILE_RANGE_WRITE = 2;
    /** Captures errno of {@link #PREAD} and {@link #FLOCK}. */
    private static final StructLayout CAPTURED = Linker.Option.captureStateLayout();

    private static final VarHandle ERRNO = CAPTURED.varHandle(PathElement.groupElement("errno"));

    static {
        MethodHandle open = null;
        MethodHandle close = null;
        MethodHandle fallocate = null;
        MethodHandle madvise = null;
        MethodHandle pread = null;
        MethodHandle pwrite = null;
        MethodHandle pwriteFast = null;
        MethodHandle lseek = null;
        MethodHandle flock = null;
        MethodHandle fcntl = null;
        MethodHandle fchmod = null;
        MethodHandle fadvise = null;
        MethodHandle syncFileRange = null;
        try {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            open = libc.find("open")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
                            Linker.Option.firstVariadicArg(2)))
                    .orElse(null);
            close = libc.find("close")
                    .map(s ->
                            linker.downcallHandle(s, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT)))
                    .orElse(null);
            fallocate = libc.find("posix_fallocate")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG)))
                    .orElse(null);
            madvise = libc.find("madvise")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT)))
                    .orElse(null);
            Linker.Option errno = Linker.Option.captureCallState("errno");
            pread = libc.find("pread")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG),
                            errno))
                    .orElse(null);
            pwrite = libc.find("pwrite")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG),
                            errno))
                    .orElse(null);
            pwriteFast = libc.find("pwrite")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG)))
                    .orElse(null);
            lseek = libc.find("lseek")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT)))
                    .orElse(null);
            flock = libc.find("flock")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
                            errno))
                    .orElse(null);
            fcntl = libc.find("fcntl")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.ADDRESS),
                            errno,
                            Linker.Option.firstVariadicArg(2)))
                    .orElse(null);
            fchmod = libc.find("fchmod")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT),
                            errno))
                    .orElse(null);
            fadvise = libc.find("posix_fadvise")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT)))
                    .orElse(null);
            syncFileRange = libc.find("sync_file_range")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_INT,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_INT)))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) {
            // not on a platform with these calls: the fallbacks below apply
        }
        OPEN = open;
        CLOSE = close;
        FALLOCATE = open != null && close != null ? fallocate : null;
        MADVISE = madvise;
        boolean files = open != null && close != null;
        PREAD = files && lseek != null ? pread : null;
        LSEEK = files && pread != null ? lseek : null;
        PWRITE = PREAD != null && pwriteFast != null ? pwrite : null;
        PWRITE_FAST = PWRITE != null ? pwriteFast : null;
        FLOCK = files ? flock : null;
        FCNTL = files ? fcntl : null;
        FCHMOD = files ? fchmod : null;
        FADVISE = files ? fadvise : null;
        SYNC_FILE_RANGE = files ? syncFileRange : null;
    }

    private NativeFiles() {}

    /** The granularity in which a sparse segment's header area gets its disk blocks (decision 0014). */
    static final long HEADER_CHUNK = 64 << 10;

    /**
     * Sizes an existing empty segment file to {@code size} bytes, sparse but for its first {@link #HEADER_CHUNK}
     * bytes, which get real blocks (decision 0014): payloads are written there with {@code pwrite}, which reports a
     * full disk as an error, and headers are stored through the mapping only where blocks were allocated ahead of
     * them ({@link Segment#reserve}). Refuses, as a full disk, when the file system has less than {@code size} bytes
     * free for this user, so that a full disk still shows when a segment is created, as with preallocation; a disk
     * that fills later fails the {@code pwrite}. Where positional writes are not available, the whole file is
     * allocated ({@link #allocate(Path, long)}): pages are then stored through the mapping.
     *
     * @throws IOException with the OS's reason (such as "No space left on device") if the file cannot be sized
     */
    static void allocateSparse(Path file, long size) throws IOException {
        if (PWRITE == null) {
            allocate(file, size);
            return;
        }
        long usable = Files.getFileStore(file).getUsableSpace();
        if (usable < size) {
            throw new IOException(file + ": cannot allocate " + size + " bytes: No space left on device (ENOSPC: "
                    + usable + " bytes free)");
        }
        try (RandomAccessFile sized = new RandomAccessFile(file.toFile(), "rw")) {
            sized.setLength(size); // ftruncate: a length, no blocks
        }
        int fd = openReadWrite(file);
        try {
            allocate(fd, 0, Math.min(size, HEADER_CHUNK));
        } finally {
            close(fd);
        }
    }

    /**
     * Gives {@code length} bytes of an open file at {@code offset} real disk blocks ({@code posix_fallocate}); where
     * the file system cannot, writes zeros there, so the range must hold nothing yet.
     *
     * @throws IOException with the OS's reason (such as "No space left on device") if the blocks cannot be had
     */
    static void allocate(int fd, long offset, long length) throws IOException {
        if (length <= 0) {
            return;
        }
        if (FALLOCATE != null) {
            int rc;
            try {
                rc = (int) FALLOCATE.invokeExact(fd, offset, length);
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IOException("posix_fallocate failed", t);
            }
            if (rc == 0) {
                return;
            }
            if (rc != 95 /* EOPNOTSUPP */ && rc != 22 /* EINVAL: filesystem without fallocate */) {
                throw new IOException("cannot allocate " + length + " bytes at " + offset + ": " + describe(rc));
            }
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment zeros = arena.allocate(Math.min(length, 1 << 20), 4096);
            for (long done = 0; done < length; ) {
                long n = Math.min(zeros.byteSize(), length - done);
                pwrite(fd, zeros.asSlice(0, n), offset + done);
                done += n;
            }
        }
    }

    /**
     * Gives an existing empty file {@code size} bytes of real (not sparse) disk blocks, all zero.
     *
     * @throws IOException with the OS's reason (such as "No space left on device") if the blocks cannot be had
     */
    static void allocate(Path file, long size) throws IOException {
        if (FALLOCATE != null) {
            int rc;
            try (Arena arena = Arena.ofConfined()) {
                int fd = (int) OPEN.invokeExact(arena.allocateFrom(file.toString()), O_WRONLY);
                if (fd < 0) {
                    throw new IOException(file + ": cannot open to allocate " + size + " bytes");
                }
                try {
                    rc = (int) FALLOCATE.invokeExact(fd, 0L, size);
                } finally {
                    int ignored = (int) CLOSE.invokeExact(fd);
                }
            } catch (IOException | RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new IOException(file + ": posix_fallocate failed", t);
            }
            if (rc == 0) {
                return;
            }
            if (rc != 95 /* EOPNOTSUPP */ && rc != 22 /* EINVAL: filesystem without fallocate */) {
                throw new IOException(file + ": cannot allocate " + size + " bytes: " + describe(rc));
            }
        }
        writeZeros(file, size);
    }

    private static void writeZeros(Path file, long size) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ByteBuffer zeros = ByteBuffer.allocateDirect(1 << 20);
            long position = 0;
            while (position < size) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), size - position));
                position += channel.write(zeros, position);
            }
            channel.force(false);
        }
    }

    /** Advises the kernel that a mapping is read at random (no read-ahead around faults); false if not possible. */
    static boolean adviseRandom(MemorySegment mapping) {
        if (MADVISE == null) {
            return false;
        }
        try {
            return (int) MADVISE.invokeExact(mapping, mapping.byteSize(), MADV_RANDOM) == 0;
        } catch (Throwable t) {
            return false;
        }
    }

    /**
     * Asks the kernel to start reading a range of a mapping into the page cache now, in large requests, regardless of
     * {@code MADV_RANDOM}; returns without waiting. The range must start on an OS page boundary.
     */
    static void willNeed(MemorySegment range) {
        if (MADVISE != null) {
            try {
                int ignored = (int) MADVISE.invokeExact(range, range.byteSize(), MADV_WILLNEED);
            } catch (Throwable t) {
                // advice only
            }
        }
    }

    /**
     * Maps a range of a mapping into the process in one call, waiting for pages still being read (after
     * {@link #willNeed}); a reader then takes no page faults in it. Advice only: ignored where unsupported.
     */
    static void populate(MemorySegment range) {
        if (MADVISE != null) {
            try {
                int ignored = (int) MADVISE.invokeExact(range, range.byteSize(), MADV_POPULATE_READ);
            } catch (Throwable t) {
                // advice only
            }
        }
    }

    /**
     * Maps a range of a shared file mapping into the process writable, in one call: the stores that follow take no
     * page faults there. The range must start on an OS page boundary and have disk blocks (a hole would be allocated
     * by the call). Advice only: ignored where unsupported ({@code MADV_POPULATE_WRITE} is Linux 5.14+).
     */
    static void populateWritable(MemorySegment range) {
        if (MADVISE != null) {
            try {
                int ignored = (int) MADVISE.invokeExact(range, range.byteSize(), MADV_POPULATE_WRITE);
            } catch (Throwable t) {
                // advice only
            }
        }
    }

    /**
     * Opens a file for {@link #pread} and {@link #size}: a raw descriptor, which (unlike a {@code FileChannel}) an
     * interrupted thread cannot close under the other readers.
     *
     * @return the descriptor, or {@code -1} if these calls are not available here
     * @throws IOException if the file cannot be opened
     */
    static int openReadOnly(Path file) throws IOException {
        return PREAD == null ? -1 : open(file, O_RDONLY | O_CLOEXEC);
    }

    /**
     * Opens a file for {@link #pread}, {@link #pwrite} and {@link #size}, like {@link #openReadOnly} but writable.
     *
     * @return the descriptor, or {@code -1} if these calls are not available here
     * @throws IOException if the file cannot be opened
     */
    static int openReadWrite(Path file) throws IOException {
        return PWRITE == null ? -1 : open(file, O_RDWR | O_CLOEXEC);
    }

    /**
     * Writes all of {@code from} (native memory) at {@code position}, retrying on {@code EINTR} and short writes.
     *
     * @throws IOException with the OS's reason if the write fails (such as {@code EIO} or {@code ENOSPC})
     */
    static void pwrite(int fd, MemorySegment from, long position) throws IOException {
        try {
            // The common case: one call writes everything. Only a short or failed write takes the slow path, which
            // writes the rest again (the same bytes at the same place: pwrite is idempotent) and captures errno.
            long n = (long) PWRITE_FAST.invokeExact(fd, from, from.byteSize(), position);
            if (n == from.byteSize()) {
                return;
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("pwrite failed", t);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURED);
            long done = 0;
            long total = from.byteSize();
            while (done < total) {
                long n = (long) PWRITE.invokeExact(state, fd, from.asSlice(done), total - done, position + done);
                if (n < 0) {
                    int errno = (int) ERRNO.get(state, 0L);
                    if (errno == EINTR) {
                        continue;
                    }
                    throw new IOException("pwrite of " + (total - done) + " bytes at " + (position + done) + " failed: "
                            + describe(errno));
                }
                if (n == 0) {
                    throw new IOException(
                            "pwrite of " + (total - done) + " bytes at " + (position + done) + " wrote nothing");
                }
                done += n;
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("pwrite failed", t);
        }
    }

    /**
     * Opens a file for writing with {@code O_DIRECT}: writes go from the caller's memory to the device, not through
     * the page cache (decision 0015). Such a write must be aligned in memory address, length and file offset to the
     * file system's direct-I/O alignment, or the kernel refuses it ({@code EINVAL}, see {@link #pwriteDirect}).
     *
     * @return the descriptor, or {@code -1} if positional writes are not available here or the file system refuses
     *     direct I/O
     */
    static int openDirect(Path file) {
        if (PWRITE == null) {
            return -1;
        }
        try {
            return open(file, O_RDWR | O_CLOEXEC | O_DIRECT);
        } catch (IOException e) {
            return -1; // EINVAL: a file system without direct I/O; the writes stay buffered
        }
    }

    /**
     * Advises the kernel that reads through a descriptor are random ({@code POSIX_FADV_RANDOM}): a {@link #pread}
     * reads what it asks for and no read-ahead window beyond it. Advice only: ignored where unsupported.
     */
    static void adviseRandomReads(int fd) {
        if (FADVISE != null && fd >= 0) {
            try {
                int ignored = (int) FADVISE.invokeExact(fd, 0L, 0L, POSIX_FADV_RANDOM);
            } catch (Throwable t) {
                // advice only
            }
        }
    }

    /**
     * Asks the kernel to start writing the dirty pages of {@code length} bytes of an open file at {@code offset} to
     * the device, and returns without waiting for them ({@code sync_file_range(2)} with
     * {@code SYNC_FILE_RANGE_WRITE}; decision 0016). It makes nothing durable (no metadata, no device cache flush):
     * it only turns dirty pages into clean ones sooner than the kernel's flusher would. It can wait while the
     * device's queue is full. Advice only: where the call is missing or fails, nothing happens.
     *
     * @return whether the kernel took the request
     */
    static boolean startWriteback(int fd, long offset, long length) {
        if (SYNC_FILE_RANGE == null || fd < 0 || length <= 0) {
            return false;
        }
        try {
            return (int) SYNC_FILE_RANGE.invokeExact(fd, offset, length, SYNC_FILE_RANGE_WRITE) == 0;
        } catch (Throwable t) {
            return false; // advice only
        }
    }

    /**
     * Writes all of {@code from} at {@code position} through a descriptor opened by {@link #openDirect}, retrying on
     * {@code EINTR}. The memory, its length and the position must be aligned as direct I/O requires.
     *
     * @return {@code true} if everything was written; {@code false} if the kernel refused the write as direct I/O
     *     ({@code EINVAL}: not aligned as this file system needs) or wrote only part of it — the caller then writes
     *     it all again through a buffered descriptor (the same bytes at the same place)
     * @throws IOException with the OS's reason if the write fails otherwise (such as {@code EIO} or {@code ENOSPC})
     */
    static boolean pwriteDirect(int fd, MemorySegment from, long position) throws IOException {
        long total = from.byteSize();
        try {
            long n = (long) PWRITE_FAST.invokeExact(fd, from, total, position);
            if (n == total) {
                return true;
            }
            if (n >= 0) {
                return false; // short: the rest may not be aligned any more
            }
            // Failed: once more, capturing errno this time (a write that fails leaves the file as it was).
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment state = arena.allocate(CAPTURED);
                while (true) {
                    n = (long) PWRITE.invokeExact(state, fd, from, total, position);
                    if (n == total) {
                        return true;
                    }
                    if (n >= 0) {
                        return false;
                    }
                    int errno = (int) ERRNO.get(state, 0L);
                    if (errno == EINVAL) {
                        return false;
                    }
                    if (errno != EINTR) {
                        throw new IOException("pwrite (O_DIRECT) of " + total + " bytes at " + position + " failed: "
                                + describe(errno));
                    }
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("pwrite failed", t);
        }
    }

    /**
     * Opens a directory read-only, for {@link #flock}.
     *
     * @return the descriptor, or {@code -1} if {@code flock} is not available here
     * @throws IOException if the directory cannot be opened
     */
    static int openDirectory(Path directory) throws IOException {
        return FLOCK == null ? -1 : open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }

    private static int open(Path path, int flags) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) OPEN.invokeExact(arena.allocateFrom(path.toString()), flags);
            if (fd < 0) {
                throw new IOException(path + ": cannot open");
            }
            return fd;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(path + ": cannot open", t);
        }
    }

    static void close(int fd) {
        if (fd >= 0 && CLOSE != null) {
            try {
                int ignored = (int) CLOSE.invokeExact(fd);
            } catch (Throwable t) {
                // nothing to do: the descriptor is gone either way
            }
        }
    }

    /**
     * Reads up to {@code into.byteSize()} bytes at {@code position}, retrying on {@code EINTR}.
     *
     * @return the bytes read; fewer than asked (possibly 0) only at the end of the file
     * @throws IOException with the OS's reason if the read fails (such as {@code EIO})
     */
    static long pread(int fd, MemorySegment into, long position) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURED);
            long done = 0;
            while (done < into.byteSize()) {
                long n = (long)
                        PREAD.invokeExact(state, fd, into.asSlice(done), into.byteSize() - done, position + done);
                if (n == 0) {
                    break;
                }
                if (n < 0) {
                    int errno = (int) ERRNO.get(state, 0L);
                    if (errno == EINTR) {
                        continue;
                    }
                    throw new IOException("pread of " + (into.byteSize() - done) + " bytes at " + (position + done)
                            + " failed: " + describe(errno));
                }
                done += n;
            }
            return done;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("pread failed", t);
        }
    }

    /** {@return the current length of an open file} (one {@code lseek(fd, 0, SEEK_END)}: no path lookup) */
    static long size(int fd) throws IOException {
        long size;
        try {
            size = (long) LSEEK.invokeExact(fd, 0L, SEEK_END);
        } catch (Throwable t) {
            throw new IOException("lseek failed", t);
        }
        if (size < 0) {
            throw new IOException("lseek failed on descriptor " + fd);
        }
        return size;
    }

    /**
     * Applies {@code flock(2)} to a descriptor, retrying on {@code EINTR}.
     *
     * @return whether the lock was taken; {@code false} if {@code LOCK_NB} was given and another holds it
     * @throws IOException with the OS's reason on any other failure
     */
    static boolean flock(int fd, int operation) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURED);
            while (true) {
                int rc = (int) FLOCK.invokeExact(state, fd, operation);
                if (rc == 0) {
                    return true;
                }
                int errno = (int) ERRNO.get(state, 0L);
                if (errno == 11 /* EWOULDBLOCK */) {
                    return false;
                }
                if (errno != EINTR) {
                    throw new IOException("flock failed: " + describe(errno));
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("flock failed", t);
        }
    }

    // ---- open-file-description locks (Linux 3.15+): byte-range locks owned by one open file, not by the process ----

    private static final int F_OFD_GETLK = 36;
    private static final int F_OFD_SETLK = 37;
    private static final short F_WRLCK = 1;
    private static final short F_UNLCK = 2;
    /** {@code struct flock} on Linux x86_64 and aarch64: type, whence, start, len, pid. */
    private static final StructLayout FLOCK_STRUCT = MemoryLayout.structLayout(
            ValueLayout.JAVA_SHORT.withName("type"),
            ValueLayout.JAVA_SHORT.withName("whence"),
            MemoryLayout.paddingLayout(4),
            ValueLayout.JAVA_LONG.withName("start"),
            ValueLayout.JAVA_LONG.withName("len"),
            ValueLayout.JAVA_INT.withName("pid"),
            MemoryLayout.paddingLayout(4));

    /** {@return whether open-file-description locks can be called here} */
    static boolean ofdLocks() {
        return FCNTL != null;
    }

    /**
     * Takes an exclusive open-file-description lock on {@code length} bytes at {@code start} without waiting. Such a
     * lock belongs to the open file (the descriptor), not to the process: two descriptors of one file conflict even
     * in one process, closing another descriptor of the file does not drop it, and the kernel drops it when the
     * descriptor is closed — or its process dies, however it dies.
     *
     * @return whether the lock was taken; {@code false} if another open file holds a conflicting lock
     * @throws IOException with the OS's reason on any other failure
     */
    static boolean ofdTryLock(int fd, long start, long length) throws IOException {
        return ofd(fd, F_OFD_SETLK, F_WRLCK, start, length) != CONFLICT;
    }

    /** Drops an open-file-description lock this descriptor holds on the range (a no-op if it holds none). */
    static void ofdUnlock(int fd, long start, long length) throws IOException {
        ofd(fd, F_OFD_SETLK, F_UNLCK, start, length);
    }

    /** {@return whether another open file holds a lock on the range} (this descriptor's own locks never conflict) */
    static boolean ofdLocked(int fd, long start, long length) throws IOException {
        return ofd(fd, F_OFD_GETLK, F_WRLCK, start, length) == CONFLICT;
    }

    private static final int CONFLICT = -2;

    private static int ofd(int fd, int command, short type, long start, long length) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURED);
            MemorySegment lock = arena.allocate(FLOCK_STRUCT);
            while (true) {
                lock.set(ValueLayout.JAVA_SHORT, 0, type);
                lock.set(ValueLayout.JAVA_SHORT, 2, (short) 0); // SEEK_SET
                lock.set(ValueLayout.JAVA_LONG, 8, start);
                lock.set(ValueLayout.JAVA_LONG, 16, length);
                lock.set(ValueLayout.JAVA_INT, 24, 0); // must be 0 for open-file-description locks
                int rc = (int) FCNTL.invokeExact(state, fd, command, lock);
                if (rc == 0) {
                    if (command == F_OFD_GETLK) {
                        return lock.get(ValueLayout.JAVA_SHORT, 0) == F_UNLCK ? 0 : CONFLICT;
                    }
                    return 0;
                }
                int errno = (int) ERRNO.get(state, 0L);
                if (errno == 11 /* EAGAIN */ || errno == 13 /* EACCES */) {
                    return CONFLICT;
                }
                if (errno != EINTR) {
                    throw new IOException(
                            "fcntl lock of bytes [" + start + ", " + (start + length) + ") failed: " + describe(errno));
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("fcntl failed", t);
        }
    }

    /**
     * Sets a file's mode bits through an open descriptor, including set-group-ID (which {@code PosixFilePermission}
     * cannot express); applied as given, regardless of the umask.
     */
    static void chmod(Path file, int mode) throws IOException {
        if (FCHMOD == null) {
            throw new IOException(file + ": cannot set mode " + Integer.toOctalString(mode) + " (fchmod unavailable)");
        }
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURED);
            int rc = (int) FCHMOD.invokeExact(state, fd, mode);
            if (rc != 0) {
                throw new IOException(file + ": cannot set mode " + Integer.toOctalString(mode) + ": "
                        + describe((int) ERRNO.get(state, 0L)));
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(file + ": fchmod failed", t);
        } finally {
            close(fd);
        }
    }

    private static String describe(int errno) {
        return switch (errno) {
            case 28 -> "No space left on device (ENOSPC)";
            case 27 -> "File too large (EFBIG)";
            case 5 -> "I/O error (EIO)";
            case 122 -> "Disk quota exceeded (EDQUOT)";
            case 1 -> "Operation not permitted (EPERM)";
            case 13 -> "Permission denied (EACCES)";
            case 22 -> "Invalid argument (EINVAL)";
            default -> "errno " + errno;
        };
    }
}
