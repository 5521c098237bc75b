// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

/**
 * The system calls the disk benchmarks' ceilings make — a plain program writing files the way the disk tier does,
 * without the tier: {@code open}, {@code close}, {@code pwrite}, {@code posix_fallocate}, {@code sync_file_range}
 * ({@code SYNC_FILE_RANGE_WRITE}) and {@code madvise(MADV_RANDOM)}, through FFM on Linux libc (as {@link PageCache}
 * reaches {@code fadvise} and {@code mincore}), with the same downcalls the tier's own {@code NativeFiles} uses: a
 * {@code pwrite} that captures no errno unless it comes up short. Needs {@code --enable-native-access=ALL-UNNAMED}.
 * Linux only; stateless and thread-safe.
 */
@SuppressWarnings("restricted") // FFM downcalls: the JVMs that run this get --enable-native-access
final class RawFiles {

    private static final int O_WRONLY = 1;
    private static final int O_RDWR = 2;
    private static final int O_CLOEXEC = 0x80000;
    private static final int EINTR = 4;
    private static final int MADV_RANDOM = 1;
    private static final int SYNC_FILE_RANGE_WRITE = 2;
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle PWRITE;
    /** {@code pwrite} without capturing errno: the common case, with no arena per call. */
    private static final MethodHandle PWRITE_FAST;

    private static final MethodHandle FALLOCATE;
    private static final MethodHandle SYNC_FILE_RANGE;
    private static final MethodHandle MADVISE;

    static {
        Linker linker = Linker.nativeLinker();
        var libc = linker.defaultLookup();
        Linker.Option errno = Linker.Option.captureCallState("errno");
        OPEN = linker.downcallHandle(
                libc.findOrThrow("open"),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
                Linker.Option.firstVariadicArg(2),
                errno);
        CLOSE = linker.downcallHandle(
                libc.findOrThrow("close"), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
        FunctionDescriptor pwrite = FunctionDescriptor.of(
                ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_INT,
                ValueLayout.ADDRESS,
                ValueLayout.JAVA_LONG,
                ValueLayout.JAVA_LONG);
        PWRITE = linker.downcallHandle(libc.findOrThrow("pwrite"), pwrite, errno);
        PWRITE_FAST = linker.downcallHandle(libc.findOrThrow("pwrite"), pwrite);
        // Returns the error number itself (not -1 + errno).
        FALLOCATE = linker.downcallHandle(
                libc.findOrThrow("posix_fallocate"),
                FunctionDescriptor.of(
                        ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
        SYNC_FILE_RANGE = linker.downcallHandle(
                libc.findOrThrow("sync_file_range"),
                FunctionDescriptor.of(
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT));
        MADVISE = linker.downcallHandle(
                libc.findOrThrow("madvise"),
                FunctionDescriptor.of(
                        ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT));
    }

    private RawFiles() {}

    /** {@return a descriptor of {@code file} opened for reading and writing} */
    static int openReadWrite(Path file) throws IOException {
        return open(file, O_RDWR | O_CLOEXEC);
    }

    private static int open(Path file, int flags) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(file.toString()), flags);
            if (fd < 0) {
                throw new IOException(file + ": open failed, errno " + (int) ERRNO.get(state, 0L));
            }
            return fd;
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(file + ": cannot open", t);
        }
    }

    /** Closes a descriptor; nothing for {@code -1}. */
    static void close(int fd) {
        if (fd < 0) {
            return;
        }
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            // the descriptor is gone either way
        }
    }

    /** Writes all of {@code from} (native memory) at {@code position}, retrying on {@code EINTR} and short writes. */
    static void pwrite(int fd, MemorySegment from, long position) throws IOException {
        try {
            long n = (long) PWRITE_FAST.invokeExact(fd, from, from.byteSize(), position);
            if (n == from.byteSize()) {
                return;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment state = arena.allocate(CAPTURE);
                long done = 0;
                while (done < from.byteSize()) {
                    MemorySegment rest = from.asSlice(done);
                    long m = (long) PWRITE.invokeExact(state, fd, rest, rest.byteSize(), position + done);
                    if (m < 0) {
                        int errno = (int) ERRNO.get(state, 0L);
                        if (errno == EINTR) {
                            continue;
                        }
                        throw new IOException(
                                "pwrite of " + from.byteSize() + " bytes at " + position + " failed, errno " + errno);
                    }
                    if (m == 0) {
                        throw new IOException(
                                "pwrite of " + from.byteSize() + " bytes at " + position + " wrote nothing");
                    }
                    done += m;
                }
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("pwrite failed", t);
        }
    }

    /** Gives an existing empty file {@code size} bytes of real disk blocks ({@code posix_fallocate}). */
    static void allocate(Path file, long size) throws IOException {
        int fd = open(file, O_WRONLY);
        int rc;
        try {
            rc = (int) FALLOCATE.invokeExact(fd, 0L, size);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(file + ": posix_fallocate failed", t);
        } finally {
            close(fd);
        }
        if (rc != 0) {
            throw new IOException(file + ": cannot allocate " + size + " bytes, error " + rc);
        }
    }

    /**
     * Asks the kernel to start writing the dirty pages of a range to the device, without waiting for them
     * ({@code sync_file_range(SYNC_FILE_RANGE_WRITE)}), as the disk tier does every {@code writebackEvery} bytes.
     *
     * @return whether the kernel took the request
     */
    static boolean startWriteback(int fd, long offset, long length) {
        if (fd < 0 || length <= 0) {
            return false;
        }
        try {
            return (int) SYNC_FILE_RANGE.invokeExact(fd, offset, length, SYNC_FILE_RANGE_WRITE) == 0;
        } catch (Throwable t) {
            return false; // advice only
        }
    }

    /** Advises the kernel that a mapping is read at random ({@code MADV_RANDOM}); false if it refuses. */
    static boolean adviseRandom(MemorySegment mapping) {
        try {
            return (int) MADVISE.invokeExact(mapping, mapping.byteSize(), MADV_RANDOM) == 0;
        } catch (Throwable t) {
            return false;
        }
    }
}
