// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The two libc calls the disk tier needs and Java does not offer: {@code posix_fallocate(3)}, so a segment file owns
 * its disk blocks before it is mapped (a write into a mapped hole on a full disk is a {@code SIGBUS}, not an
 * exception), and {@code madvise(2)}, to tell the kernel that reads of a mapping are random.
 *
 * <p>Where the calls cannot be linked, allocation falls back to writing zeros (slower, same guarantee) and advice is
 * skipped. Thread-safe and stateless.
 */
final class NativeFiles {

    private static final int O_WRONLY = 1;
    private static final int MADV_RANDOM = 1;
    private static final int MADV_WILLNEED = 3;
    /** Linux 5.14+: fault a range in and map it, in one call. Older kernels answer EINVAL, which is ignored. */
    private static final int MADV_POPULATE_READ = 22;
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle FALLOCATE;
    private static final MethodHandle MADVISE;

    static {
        MethodHandle open = null;
        MethodHandle close = null;
        MethodHandle fallocate = null;
        MethodHandle madvise = null;
        try {
            Linker linker = Linker.nativeLinker();
            SymbolLookup libc = linker.defaultLookup();
            open = libc.find("open").map(s -> linker.downcallHandle(s, FunctionDescriptor.of(ValueLayout.JAVA_INT,
                    ValueLayout.ADDRESS, ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2))).orElse(null);
            close = libc.find("close").map(s -> linker.downcallHandle(s, FunctionDescriptor.of(ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT))).orElse(null);
            fallocate = libc.find("posix_fallocate").map(s -> linker.downcallHandle(s, FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG)))
                    .orElse(null);
            madvise = libc.find("madvise").map(s -> linker.downcallHandle(s, FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT)))
                    .orElse(null);
        } catch (RuntimeException | LinkageError e) {
            // not on a platform with these calls: the fallbacks below apply
        }
        OPEN = open;
        CLOSE = close;
        FALLOCATE = open != null && close != null ? fallocate : null;
        MADVISE = madvise;
    }

    private NativeFiles() {}

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

    private static String describe(int errno) {
        return switch (errno) {
            case 28 -> "No space left on device (ENOSPC)";
            case 27 -> "File too large (EFBIG)";
            case 5 -> "I/O error (EIO)";
            case 122 -> "Disk quota exceeded (EDQUOT)";
            default -> "errno " + errno;
        };
    }
}
