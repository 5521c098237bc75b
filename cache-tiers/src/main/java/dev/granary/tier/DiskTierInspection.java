// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.FileChannel.MapMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Looks at a disk tier's directory from outside a cache: what it holds ({@link #inspect}), whether every page still
 * matches its checksum ({@link #verify}), and removing it ({@link #clear}). The {@code granary inspect}, {@code verify}
 * and {@code clear} commands are these methods.
 *
 * <p>{@link #inspect} only reads: it takes no lock and changes nothing, so it can look at a directory a running cache
 * (or several, shared) holds; what it reports is then a snapshot that may already be behind. {@link #verify} and
 * {@link #clear} open the directory as a {@link DiskTier} would, so they take the directory's lock (a directory a
 * running cache holds is refused, naming the holder) and recover the index by scanning the segments' record headers;
 * the capacity is taken from what is on disk, so nothing is evicted. A directory that is not a Granary disk tier (no
 * {@code FORMAT} file, or files that are not Granary's) is refused before anything is opened or written. Opening
 * deletes nothing but a segment file whose header is damaged, as any cache opening the directory would; a verify
 * deletes a segment file that ends before its pages do (truncated). Pages whose bytes fail their checksum are reported,
 * not deleted: a cache drops them from its index when it first reads them.
 *
 * <p>Stateless and thread-safe; each call opens and closes the directory.
 */
public final class DiskTierInspection {

    private DiskTierInspection() {}

    /**
     * What a disk tier's directory holds.
     *
     * @param directory       the directory
     * @param format          the format number of its {@code FORMAT} file
     * @param segments        segment files found
     * @param segmentBytes    bytes of segment files on disk (what counts against a tier's capacity)
     * @param pages           pages (and extents) indexed
     * @param pageBytes       their bytes
     * @param objects         distinct objects (origin and key) the pages belong to
     * @param versions        distinct object versions
     * @param origins         the origins' URIs, sorted
     * @param freeBytes       bytes free for the segment files' file system ({@code FileStore.getUsableSpace})
     * @param damagedSegments segment files with a damaged header (a cache opening the directory deletes them)
     * @param damagedTails    segments whose record scan ended on a damaged or torn record (a process killed mid-write;
     *                        in a directory in use, possibly a record being written right now)
     * @param scan            how long the scan took
     * @param capacity        the capacity of the tier that opened the directory last, or {@code -1} if the directory
     *                        does not record it (written by an older Granary)
     * @param inUseBy         the processes that hold the directory now (a running cache), or empty
     */
    public record Summary(
            Path directory,
            int format,
            int segments,
            long segmentBytes,
            long pages,
            long pageBytes,
            long objects,
            long versions,
            List<String> origins,
            long freeBytes,
            int damagedSegments,
            int damagedTails,
            Duration scan,
            long capacity,
            Optional<String> inUseBy) {

        /** Copies the origin list. */
        public Summary {
            origins = List.copyOf(origins);
        }
    }

    /**
     * A page that failed verification.
     *
     * @param page    the page's identity: origin, object key, version, extent
     * @param segment the segment file it is in
     */
    public record Damage(PageKey page, Path segment) {}

    /**
     * What {@link #verify} found.
     *
     * @param pages   pages indexed, each read and checked
     * @param bytes   their bytes
     * @param damaged the pages whose bytes do not match their checksum, or whose segment file ends before them
     * @param dropped what the opening scan dropped because of damage (record headers or segment headers that do not
     *                check out), with the page records it found beyond the damage: pages that are not served
     */
    public record Verification(long pages, long bytes, List<Damage> damaged, List<DiskTier.Dropped> dropped) {

        /** Copies the lists. */
        public Verification {
            damaged = List.copyOf(damaged);
            dropped = List.copyOf(dropped);
        }

        /** {@return the page records the opening scan dropped because of damage} */
        public long droppedPages() {
            return dropped.stream().mapToLong(DiskTier.Dropped::pages).sum();
        }

        /** {@return every page verify could not vouch for: the damaged ones and the dropped ones} */
        public long notVouchedFor() {
            return damaged.size() + droppedPages();
        }

        /** {@return whether every page was vouched for and nothing was dropped} */
        public boolean clean() {
            return damaged.isEmpty() && dropped.isEmpty();
        }
    }

    /**
     * Describes a disk tier's directory, reading only: no lock is taken and nothing is written or deleted, so a
     * directory a running cache holds can be looked at (the result is then a snapshot).
     *
     * @param directory the directory
     * @return what it holds
     * @throws IllegalArgumentException if it is not a Granary disk tier's directory
     * @throws IllegalStateException    if a newer Granary wrote it
     * @throws IOException              if it cannot be read
     */
    public static Summary inspect(Path directory) throws IOException {
        requireDirectory(directory);
        int format = readFormat(directory);
        long start = System.nanoTime();
        long pageBytes = 0;
        long pages = 0;
        long segmentBytes = 0;
        int segments = 0;
        int damagedSegments = 0;
        int damagedTails = 0;
        Set<List<String>> objects = new HashSet<>();
        Set<List<String>> versions = new HashSet<>();
        Set<String> origins = new TreeSet<>();
        List<SegmentFormat.ScannedRecord> records = new ArrayList<>();
        for (Path file : segmentFiles(directory)) {
            long id = DiskDirectory.parseId(file.getFileName().toString());
            records.clear();
            try (FileChannel channel = FileChannel.open(file);
                    Arena arena = Arena.ofConfined()) {
                long size = channel.size();
                segments++;
                segmentBytes += size;
                if (size < SegmentFormat.SEGMENT_HEADER) {
                    damagedSegments++;
                    continue;
                }
                MemorySegment map = channel.map(MapMode.READ_ONLY, 0, size, arena);
                if (SegmentFormat.checkSegmentHeader(map, id, size) != null) {
                    damagedSegments++;
                    continue;
                }
                if (SegmentFormat.scan(map, id, records::add, position -> {}).damage() != null) {
                    damagedTails++;
                }
            } catch (NoSuchFileException e) {
                continue; // evicted by a running cache meanwhile
            }
            for (SegmentFormat.ScannedRecord r : records) {
                PageKey key = r.key();
                pages++;
                pageBytes += key.length();
                objects.add(List.of(key.origin(), key.key()));
                versions.add(List.of(key.origin(), key.key(), key.version()));
                origins.add(key.origin());
            }
        }
        List<Long> holders = DirectoryLock.flockHolders(directory);
        return new Summary(
                directory,
                format,
                segments,
                segmentBytes,
                pages,
                pageBytes,
                objects.size(),
                versions.size(),
                new ArrayList<>(origins),
                Files.getFileStore(directory).getUsableSpace(),
                damagedSegments,
                damagedTails,
                Duration.ofNanos(System.nanoTime() - start),
                DiskDirectory.recordedCapacity(directory.resolve(DiskDirectory.FORMAT_FILE)),
                holders.isEmpty()
                        ? java.util.Optional.empty()
                        : java.util.Optional.of((holders.size() == 1 ? "pid " : "pids ")
                                + holders.stream().map(String::valueOf).collect(Collectors.joining(", "))));
    }

    /**
     * Reads every page of a disk tier's directory from its file and checks it against the CRC32C its record carries.
     *
     * @param directory the directory
     * @return the pages checked and the damaged ones
     * @throws IllegalArgumentException if it is not a Granary disk tier's directory
     * @throws IllegalStateException    if another tier or process holds it, or a newer Granary wrote it
     * @throws IOException              if it cannot be read
     */
    public static Verification verify(Path directory) throws IOException {
        checkGranary(directory);
        try (DiskTier tier = open(directory)) {
            long pages = 0;
            long bytes = 0;
            List<Damage> damaged = new ArrayList<>();
            for (PageKey key : tier.keys()) {
                DiskTier.Location where = tier.locate(key);
                if (where == null) {
                    continue; // dropped with its whole segment, counted below by the page that found it
                }
                pages++;
                bytes += key.length();
                Page page = tier.peek(key); // the first read of a page since opening checks its CRC from the file
                if (page == null) {
                    damaged.add(new Damage(key, where.file()));
                } else {
                    page.release();
                }
            }
            return new Verification(pages, bytes, damaged, tier.recovery().dropped());
        }
    }

    /**
     * Removes a disk tier's directory, of any format: its files, then the directory itself. A directory holding files
     * that are not Granary's is refused before anything is deleted; one a tier holds is refused by its lock.
     *
     * @param directory the directory
     * @return the bytes of segment files removed
     * @throws IllegalArgumentException if it is not a Granary disk tier's directory
     * @throws IllegalStateException    if another tier or process holds it
     * @throws IOException              if it cannot be read, or files remain after deletion
     */
    public static long clear(Path directory) throws IOException {
        checkOwned(directory);
        long bytes = segmentFiles(directory).stream()
                .mapToLong(DiskTierInspection::size)
                .sum();
        // Any format, older or newer: clearing is how a directory a newer Granary wrote is started over. The lock
        // keeps a running cache's directory from being deleted under it.
        List<String> left;
        try (DirectoryLock lock = DirectoryLock.acquire(directory)) {
            left = ScratchDirectory.deleteContents(directory, "clear");
        }
        if (!left.isEmpty()) {
            throw new IOException("disk tier directory " + directory + ": files that are not Granary's appeared: "
                    + left + " (expected: only Granary's files; the directory is kept)");
        }
        Files.delete(directory);
        return bytes;
    }

    /** Refuses a directory that is not a Granary disk tier's before anything opens it; returns its format. */
    private static int checkGranary(Path directory) throws IOException {
        checkOwned(directory);
        return readFormat(directory);
    }

    /** Reads the format of a directory that has a FORMAT file, refusing one this code cannot read. */
    private static int readFormat(Path directory) throws IOException {
        Path format = directory.resolve(DiskDirectory.FORMAT_FILE);
        List<String> lines = Files.readAllLines(format, StandardCharsets.UTF_8);
        int found = -1;
        if (lines.size() >= 2 && lines.get(1).startsWith("format ")) {
            try {
                found = Integer.parseInt(
                        lines.get(1).substring("format ".length()).strip());
            } catch (NumberFormatException e) {
                // reported below
            }
        }
        if (found < 0) {
            throw new IllegalArgumentException("disk tier directory " + directory + ": " + DiskDirectory.FORMAT_FILE
                    + " is unreadable: " + lines + " (expected: 'granary-disk-tier' and 'format <n>')");
        }
        if (found < SegmentFormat.OLDEST_READABLE || found > SegmentFormat.FORMAT) {
            throw new IllegalStateException("disk tier directory " + directory + " holds format " + found
                    + " (expected: format " + SegmentFormat.OLDEST_READABLE + " to " + SegmentFormat.FORMAT
                    + ", which this Granary reads; "
                    + (found < SegmentFormat.OLDEST_READABLE
                            ? "opening it with any cache would discard its segments)"
                            : "use a newer Granary)"));
        }
        return found;
    }

    /** Refuses a path that is not a directory with a FORMAT file and only Granary's files in it. */
    private static void checkOwned(Path directory) throws IOException {
        requireDirectory(directory);
        DiskDirectory.prepare(directory); // refuses files that are not Granary's, names them
    }

    /** Refuses a path that is not a directory with a FORMAT file; reads only. */
    private static void requireDirectory(Path directory) {
        if (!Files.isDirectory(directory, LinkOption.NOFOLLOW_LINKS)) {
            throw new IllegalArgumentException("disk tier directory " + directory + ": "
                    + (Files.exists(directory) ? "not a directory" : "does not exist")
                    + " (expected: a directory a DiskTier wrote)");
        }
        Path format = directory.resolve(DiskDirectory.FORMAT_FILE);
        if (!Files.isRegularFile(format, LinkOption.NOFOLLOW_LINKS)) {
            throw new IllegalArgumentException("disk tier directory " + directory + " is not a Granary disk tier (no "
                    + DiskDirectory.FORMAT_FILE + " file) (expected: a directory a DiskTier wrote)");
        }
    }

    private static DiskTier open(Path directory) throws IOException {
        return DiskTier.builder()
                .directory(directory)
                .capacity(capacityFor(directory))
                .inspecting()
                .build();
    }

    /** A capacity that holds every segment on disk and two more of the largest size: opening evicts nothing. */
    private static long capacityFor(Path directory) throws IOException {
        long total = 0;
        long largest = 16 << 10;
        for (Path file : segmentFiles(directory)) {
            long size = size(file);
            total += size;
            largest = Math.max(largest, size);
        }
        return total + 2 * largest + (64L << 20);
    }

    private static List<Path> segmentFiles(Path directory) throws IOException {
        List<Path> files = new ArrayList<>();
        Path segments = directory.resolve(DiskDirectory.SEGMENTS);
        if (!Files.isDirectory(segments, LinkOption.NOFOLLOW_LINKS)) {
            return files;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(segments)) {
            for (Path entry : entries) {
                if (DiskDirectory.parseId(entry.getFileName().toString()) >= 0) {
                    files.add(entry);
                }
            }
        }
        return files;
    }

    private static long size(Path file) {
        try {
            return Files.size(file);
        } catch (IOException e) {
            return 0;
        }
    }
}
