// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import dev.granary.tier.DiskTier;
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
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * The page-cache controls the disk benchmarks need and Java does not offer, through FFM on Linux libc (the same way
 * the tier's {@code NativeFiles} reaches {@code posix_fallocate}, and {@link RawFiles} the ceilings' writes):
 * <ul>
 *   <li>{@link #drop}: {@code posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)} on each file, which evicts the file's
 *       clean pages from the page cache <em>unless a process has them mapped</em> (the kernel skips mapped pages), so
 *       a {@link DiskTier} must be closed (its segments unmapped) before its files can be dropped;</li>
 *   <li>{@link #residency}: {@code mincore(2)} over a fresh read-only mapping of each file (mapping does not fault
 *       anything in), i.e. the fraction of the files' pages that are in the page cache, to verify a drop;</li>
 *   <li>{@link #cachedKiB}: the {@code Cached:} line of {@code /proc/meminfo}, a coarse second check;</li>
 *   <li>{@link #fsync} and {@link #readAll}: to make files clean (dirty pages cannot be dropped) and to warm them;</li>
 *   <li>{@link #pageOut}: evicts the pages of files that <em>this process has mapped</em> (a running disk tier's
 *       segments), which {@code POSIX_FADV_DONTNEED} skips: {@code madvise(MADV_PAGEOUT)} (Linux 5.4+) over every
 *       mapping of a file under a directory, found in {@code /proc/self/maps}, then {@code POSIX_FADV_DONTNEED} for
 *       the pages no mapping holds. The tier stays open and keeps its mappings; its next reads fault the pages in
 *       from the device, as after the kernel reclaimed them under memory pressure.</li>
 * </ul>
 * Needs {@code --enable-native-access=ALL-UNNAMED}. Linux only; stateless and thread-safe.
 */
@SuppressWarnings("restricted") // FFM downcalls: the JVMs that run this get --enable-native-access
final class PageCache {

    private static final int O_RDONLY = 0;
    private static final int POSIX_FADV_DONTNEED = 4;
    /** Linux 5.4+: reclaim the range's pages now (file pages: written back if dirty, then dropped). */
    private static final int MADV_PAGEOUT = 21;

    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final MethodHandle OPEN;
    private static final MethodHandle CLOSE;
    private static final MethodHandle FADVISE;
    private static final MethodHandle MINCORE;
    private static final MethodHandle MADVISE;
    private static final int OS_PAGE;

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
        // Returns the error number itself (not -1 + errno).
        FADVISE = linker.downcallHandle(
                libc.findOrThrow("posix_fadvise"),
                FunctionDescriptor.of(
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_INT,
                        ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT));
        MINCORE = linker.downcallHandle(
                libc.findOrThrow("mincore"),
                FunctionDescriptor.of(
                        ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS),
                errno);
        MADVISE = linker.downcallHandle(
                libc.findOrThrow("madvise"),
                FunctionDescriptor.of(
                        ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT),
                errno);
        MethodHandle getpagesize =
                linker.downcallHandle(libc.findOrThrow("getpagesize"), FunctionDescriptor.of(ValueLayout.JAVA_INT));
        try {
            OS_PAGE = (int) getpagesize.invokeExact();
        } catch (Throwable t) {
            throw new ExceptionInInitializerError(t);
        }
    }

    private PageCache() {}

    /** Evicts the files' pages from the page cache (those not mapped by anyone, and clean: {@link #fsync} first). */
    static void drop(Collection<Path> files) throws IOException {
        for (Path file : files) {
            drop(file);
        }
    }

    static void drop(Path file) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(file.toString()), O_RDONLY);
            if (fd < 0) {
                throw new IOException(file + ": open failed, errno " + (int) ERRNO.get(state, 0L));
            }
            int rc;
            try {
                rc = (int) FADVISE.invokeExact(fd, 0L, 0L, POSIX_FADV_DONTNEED);
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
            if (rc != 0) {
                throw new IOException(file + ": posix_fadvise(DONTNEED) failed, errno " + rc);
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(file + ": cannot drop from the page cache", t);
        }
    }

    /** Pages of the files resident in the page cache, and pages in all: {@code resident / total} is the fraction. */
    record Residency(long resident, long total) {
        double fraction() {
            return total == 0 ? 0 : (double) resident / total;
        }

        @Override
        public String toString() {
            return String.format("%.1f%%", 100 * fraction());
        }
    }

    static Residency residency(Collection<Path> files) throws IOException {
        long resident = 0;
        long total = 0;
        for (Path file : files) {
            Residency r = residency(file);
            resident += r.resident;
            total += r.total;
        }
        return new Residency(resident, total);
    }

    static Residency residency(Path file) throws IOException {
        byte[] vector = residentVector(file);
        long resident = 0;
        for (byte b : vector) {
            resident += b & 1;
        }
        return new Residency(resident, vector.length);
    }

    /** {@return whether the range's OS pages are all, some or none in the page cache} */
    static String residency(byte[] vector, long offset, long length) {
        long from = offset / OS_PAGE;
        long to = (offset + length + OS_PAGE - 1) / OS_PAGE;
        long resident = 0;
        for (long i = from; i < to; i++) {
            resident += vector[(int) i] & 1;
        }
        return resident == 0 ? "none" : resident == to - from ? "all" : "some";
    }

    /** {@return one byte per OS page of the file, bit 0 set if the page is in the page cache} */
    static byte[] residentVector(Path file) throws IOException {
        long size = Files.size(file);
        if (size == 0) {
            return new byte[0];
        }
        long pages = (size + OS_PAGE - 1) / OS_PAGE;
        try (Arena arena = Arena.ofConfined();
                FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            MemorySegment map = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            MemorySegment vector = arena.allocate(pages);
            MemorySegment state = arena.allocate(CAPTURE);
            int rc = (int) MINCORE.invokeExact(state, map, size, vector);
            if (rc != 0) {
                throw new IOException(file + ": mincore failed, errno " + (int) ERRNO.get(state, 0L));
            }
            return vector.toArray(ValueLayout.JAVA_BYTE);
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(file + ": mincore failed", t);
        }
    }

    /** {@return the {@code Cached:} figure of {@code /proc/meminfo} in KiB, or -1 if unreadable} */
    static long cachedKiB() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("Cached:")) {
                    return Long.parseLong(
                            line.substring("Cached:".length()).replace("kB", "").strip());
                }
            }
        } catch (IOException | NumberFormatException e) {
            // reported as -1
        }
        return -1;
    }

    /** Writes the files' dirty pages to disk ({@code fsync}), so that {@link #drop} can evict all of them. */
    static void fsync(Collection<Path> files) throws IOException {
        for (Path file : files) {
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                channel.force(true);
            }
        }
    }

    /** Reads every byte of the files once (through the page cache), so that they are resident. */
    static void readAll(Collection<Path> files) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
        for (Path file : files) {
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
                while (channel.read(buffer.clear()) >= 0) {
                    // discard
                }
            }
        }
    }

    /** {@return the segment files of a disk-tier directory, in name order} */
    static List<Path> segmentFiles(Path tierDirectory) throws IOException {
        try (var files = Files.list(tierDirectory.resolve("segments"))) {
            return files.filter(f -> f.getFileName().toString().endsWith(".dat"))
                    .sorted()
                    .toList();
        }
    }

    /** A mapping of (part of) a file in this process: addresses {@code [start, end)}, from {@code /proc/self/maps}. */
    record Mapping(long start, long end, Path file) {
        long length() {
            return end - start;
        }
    }

    /**
     * {@return the mappings, in {@code maps} (lines of {@code /proc/PID/maps}), of files inside {@code directory}}
     * A line is {@code start-end perms offset dev inode path}; anonymous mappings have no path, and a path may contain
     * spaces; a file deleted while mapped ends in {@code " (deleted)"} and is skipped (nothing to page in again).
     */
    static List<Mapping> mappingsUnder(List<String> maps, Path directory) {
        Path dir = directory.toAbsolutePath().normalize();
        List<Mapping> found = new ArrayList<>();
        for (String line : maps) {
            String[] fields = line.strip().split("\\s+", 6);
            if (fields.length < 6 || !fields[5].startsWith("/") || fields[5].endsWith(" (deleted)")) {
                continue;
            }
            Path file = Path.of(fields[5]);
            if (!file.startsWith(dir)) {
                continue;
            }
            int dash = fields[0].indexOf('-');
            if (dash < 0) {
                throw new IllegalArgumentException(
                        "maps line: '" + line + "' (expected: start-end perms offset dev" + " inode path)");
            }
            found.add(new Mapping(
                    Long.parseUnsignedLong(fields[0], 0, dash, 16),
                    Long.parseUnsignedLong(fields[0], dash + 1, fields[0].length(), 16),
                    file));
        }
        return found;
    }

    /** What {@link #pageOut} did. */
    record PageOut(int mappings, long mappedBytes, int files) {}

    /**
     * Evicts from the page cache every page of the files under {@code directory} whose names end in {@code suffix}:
     * {@code fsync}s them (dirty pages cannot be dropped), advises {@code MADV_PAGEOUT} over every mapping of them in
     * this process, then {@code POSIX_FADV_DONTNEED} on each file. Verify with {@link #residency}: a page another
     * process maps stays.
     *
     * @throws IOException if a call fails (such as {@code EINVAL} from a kernel older than 5.4)
     */
    static PageOut pageOut(Path directory, String suffix) throws IOException {
        List<Path> files = filesUnder(directory, suffix);
        fsync(files);
        List<Mapping> mappings = mappingsUnder(Files.readAllLines(Path.of("/proc/self/maps")), directory);
        long bytes = 0;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            for (Mapping m : mappings) {
                if (!m.file().getFileName().toString().endsWith(suffix)) {
                    continue;
                }
                int rc = (int) MADVISE.invokeExact(state, MemorySegment.ofAddress(m.start()), m.length(), MADV_PAGEOUT);
                if (rc != 0) {
                    int errno = (int) ERRNO.get(state, 0L);
                    if (errno != 12) { // ENOMEM: unmapped since /proc/self/maps was read (a segment evicted)
                        throw new IOException(m.file() + ": madvise(MADV_PAGEOUT) of " + m.length()
                                + " bytes failed, errno " + errno + " (expected: Linux 5.4 or later)");
                    }
                }
                bytes += m.length();
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException(directory + ": madvise(MADV_PAGEOUT) failed", t);
        }
        drop(files);
        return new PageOut(
                (int) mappings.stream()
                        .filter(m -> m.file().getFileName().toString().endsWith(suffix))
                        .count(),
                bytes,
                files.size());
    }

    /** {@return the regular files under {@code directory} whose names end in {@code suffix}, in name order} */
    static List<Path> filesUnder(Path directory, String suffix) throws IOException {
        try (var walk = Files.walk(directory)) {
            return walk.filter(f -> f.getFileName().toString().endsWith(suffix) && Files.isRegularFile(f))
                    .sorted()
                    .toList();
        }
    }

    /**
     * Pages out the OS pages under {@code range} of a mapping of this process ({@code madvise(MADV_PAGEOUT)}, the range
     * widened to whole OS pages) and counts those still in the page cache afterwards ({@code mincore} on the same
     * mapping, which reports page-cache residency whether or not this mapping has the page faulted in).
     *
     * @param vector scratch of at least {@code range.byteSize() / page size + 2} bytes, for {@code mincore}
     * @return the OS pages of the widened range still resident: 0 when the page-out worked
     * @throws IOException if a call fails
     */
    static int pageOutRange(MemorySegment range, MemorySegment vector) throws IOException {
        long start = range.address() & -(long) OS_PAGE;
        long end = (range.address() + range.byteSize() + OS_PAGE - 1) & -(long) OS_PAGE;
        long length = end - start;
        long pages = length / OS_PAGE;
        if (vector.byteSize() < pages) {
            throw new IllegalArgumentException("vector: " + vector.byteSize() + " bytes (expected: >= " + pages + ")");
        }
        MemorySegment aligned = MemorySegment.ofAddress(start).reinterpret(length);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int rc = (int) MADVISE.invokeExact(state, aligned, length, MADV_PAGEOUT);
            if (rc != 0) {
                throw new IOException("madvise(MADV_PAGEOUT) of " + length + " bytes failed, errno "
                        + (int) ERRNO.get(state, 0L) + " (expected: Linux 5.4 or later)");
            }
            rc = (int) MINCORE.invokeExact(state, aligned, length, vector);
            if (rc != 0) {
                throw new IOException("mincore of " + length + " bytes failed, errno " + (int) ERRNO.get(state, 0L));
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IOException("page-out of " + length + " bytes failed", t);
        }
        int resident = 0;
        for (long i = 0; i < pages; i++) {
            resident += vector.get(ValueLayout.JAVA_BYTE, i) & 1;
        }
        return resident;
    }
}
