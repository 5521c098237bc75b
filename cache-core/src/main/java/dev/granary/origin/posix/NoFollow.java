// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.posix;

import java.io.IOException;
import java.io.Serial;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.Locale;

/**
 * The few Linux system calls that let {@link PosixOrigin} reach a file below its root without ever following a
 * symbolic link: {@code openat(dirfd, name, O_NOFOLLOW | …)} one path component at a time from a descriptor of the
 * root, {@code statx} on the opened descriptor (its identity and version, not a path's), {@code pread} into the
 * destination segment, {@code close}. A path that is checked and then opened by name can be changed between the two
 * (a directory swapped for a link that leads out of the root); a chain of descriptors cannot.
 *
 * <p>Linux only (x86-64 and aarch64, whose {@code O_*} values differ); {@link #UNAVAILABLE} says why not elsewhere.
 * Stateless and thread-safe; every descriptor returned must be {@link #close closed} by the caller. Calls are
 * ordinary (not critical) downcalls: a read from a slow network file system never holds up the garbage collector.
 */
@SuppressWarnings("restricted") // FFM downcalls: cache-core is run with --enable-native-access, as for PageLocker
final class NoFollow {

    static final int ENOENT = 2;
    static final int EINTR = 4;
    static final int ENOTDIR = 20;
    static final int ELOOP = 40;

    static final int O_RDONLY = 0;
    static final int O_NONBLOCK = 04000;
    static final int O_CLOEXEC = 02000000;
    static final int O_PATH = 010000000;
    static final int O_DIRECTORY;
    static final int O_NOFOLLOW;

    private static final int AT_FDCWD = -100;
    private static final int AT_SYMLINK_NOFOLLOW = 0x100;
    private static final int AT_EMPTY_PATH = 0x1000;
    private static final int STATX_BASIC_STATS = 0x7ff;
    private static final long STATX_SIZE = 256;

    static final int S_IFMT = 0170000;
    static final int S_IFREG = 0100000;
    static final int S_IFDIR = 0040000;
    static final int S_IFLNK = 0120000;

    /** Why the calls cannot be made here, or null when they can. */
    static final String UNAVAILABLE;

    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPENAT;
    private static final MethodHandle STATX;
    private static final MethodHandle PREAD;
    private static final MethodHandle CLOSE;

    static {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        String unavailable = null;
        int directory = 0;
        int nofollow = 0;
        if (!os.startsWith("linux")) {
            unavailable = "os.name: " + os + " (expected: linux)";
        } else if (arch.equals("amd64") || arch.equals("x86_64")) {
            directory = 0200000;
            nofollow = 0400000;
        } else if (arch.equals("aarch64") || arch.equals("arm64")) {
            directory = 040000;
            nofollow = 0100000;
        } else {
            unavailable = "os.arch: " + arch + " (expected: amd64 or aarch64)";
        }
        MethodHandle openat = null;
        MethodHandle statx = null;
        MethodHandle pread = null;
        MethodHandle close = null;
        if (unavailable == null) {
            try {
                Linker linker = Linker.nativeLinker();
                var libc = linker.defaultLookup();
                Linker.Option errno = Linker.Option.captureCallState("errno");
                openat = linker.downcallHandle(
                        libc.findOrThrow("openat"),
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT),
                        Linker.Option.firstVariadicArg(3),
                        errno);
                statx = linker.downcallHandle(
                        libc.findOrThrow("statx"),
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS,
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS),
                        errno);
                pread = linker.downcallHandle(
                        libc.findOrThrow("pread"),
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS,
                                ValueLayout.JAVA_LONG,
                                ValueLayout.JAVA_LONG),
                        errno);
                close = linker.downcallHandle(
                        libc.findOrThrow("close"), FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT));
            } catch (RuntimeException | LinkageError e) {
                unavailable = "cannot link openat, statx, pread and close: " + e;
            }
        }
        O_DIRECTORY = directory;
        O_NOFOLLOW = nofollow;
        OPENAT = openat;
        STATX = statx;
        PREAD = pread;
        CLOSE = close;
        UNAVAILABLE = unavailable;
    }

    private NoFollow() {}

    /** A failed call: the C {@code errno} and a description naming the call. */
    static final class Failure extends IOException {
        @Serial
        private static final long serialVersionUID = 1L;

        final int errno;

        Failure(String message, int errno) {
            super(message);
            this.errno = errno;
        }
    }

    /**
     * What {@code statx} says about a file: its type bits, size, modification time and identity.
     *
     * @param mode       the {@code st_mode} bits
     * @param size       bytes
     * @param mtimeNanos modification time, nanoseconds since the epoch
     * @param inode      the inode number
     * @param device     major and minor device numbers, packed
     */
    record Stat(int mode, long size, long mtimeNanos, long inode, long device) {
        boolean regular() {
            return (mode & S_IFMT) == S_IFREG;
        }

        boolean directory() {
            return (mode & S_IFMT) == S_IFDIR;
        }

        boolean link() {
            return (mode & S_IFMT) == S_IFLNK;
        }
    }

    /** {@return a descriptor of a directory named by an absolute path}, following links (the root is trusted) */
    static int openDirectory(String path) throws Failure {
        return openat(AT_FDCWD, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    }

    /**
     * {@return a descriptor of {@code name} in directory {@code dirfd}}
     *
     * @param name  one path component, no {@code /}
     * @param flags the {@code O_*} flags
     * @throws Failure with the errno: {@code ELOOP} or {@code ENOTDIR} when {@code O_NOFOLLOW} met a link
     */
    static int openat(int dirfd, String name, int flags) throws Failure {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int fd = (int) OPENAT.invokeExact(state, dirfd, arena.allocateFrom(name), flags);
            if (fd < 0) {
                int errno = (int) ERRNO.get(state, 0L);
                throw new Failure("openat '" + name + "': errno " + errno, errno);
            }
            return fd;
        } catch (Failure | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** {@return what {@code statx} says about an open descriptor} */
    static Stat stat(int fd) throws Failure {
        return statx(fd, "", AT_EMPTY_PATH);
    }

    /** {@return what {@code statx} says about {@code name} in {@code dirfd}}, not following a link */
    static Stat statAt(int dirfd, String name) throws Failure {
        return statx(dirfd, name, AT_SYMLINK_NOFOLLOW);
    }

    private static Stat statx(int dirfd, String name, int flags) throws Failure {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            MemorySegment buf = arena.allocate(STATX_SIZE, 8);
            int rc = (int) STATX.invokeExact(state, dirfd, arena.allocateFrom(name), flags, STATX_BASIC_STATS, buf);
            if (rc != 0) {
                int errno = (int) ERRNO.get(state, 0L);
                throw new Failure("statx '" + name + "': errno " + errno, errno);
            }
            // struct statx has one layout on every Linux architecture (unlike struct stat).
            int mode = Short.toUnsignedInt(buf.get(ValueLayout.JAVA_SHORT, 28));
            long inode = buf.get(ValueLayout.JAVA_LONG, 32);
            long size = buf.get(ValueLayout.JAVA_LONG, 40);
            long mtimeSec = buf.get(ValueLayout.JAVA_LONG, 112);
            long mtimeNsec = Integer.toUnsignedLong(buf.get(ValueLayout.JAVA_INT, 120));
            long device = ((long) buf.get(ValueLayout.JAVA_INT, 136) << 32)
                    | Integer.toUnsignedLong(buf.get(ValueLayout.JAVA_INT, 140));
            return new Stat(mode, size, mtimeSec * 1_000_000_000L + mtimeNsec, inode, device);
        } catch (Failure | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * Reads up to {@code dst.byteSize()} bytes at {@code position} into native memory.
     *
     * @return the bytes read, 0 at the end of the file
     */
    static long pread(int fd, MemorySegment dst, long position) throws Failure {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            while (true) {
                long n = (long) PREAD.invokeExact(state, fd, dst, dst.byteSize(), position);
                if (n >= 0) {
                    return n;
                }
                int errno = (int) ERRNO.get(state, 0L);
                if (errno != EINTR) {
                    throw new Failure("pread: errno " + errno, errno);
                }
            }
        } catch (Failure | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** Closes a descriptor; a failure to close a read-only descriptor loses nothing, so it is not reported. */
    static void close(int fd) {
        try {
            int ignored = (int) CLOSE.invokeExact(fd);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }
}
