// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.tier.DiskTier;
import dev.granary.tier.internal.TierInternals;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileStore;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The data set of the disk benchmarks ({@link DiskTierReadBenchmark}, {@link DiskColdReadBenchmark},
 * {@link DiskRecoveryBenchmark}): {@code count} pages of {@code pageSize} random bytes, each the whole of one object,
 * written once into a {@link DiskTier} ({@code tier/}, 64 MiB segments, capacity for every page with room to spare) and
 * optionally, page after page, into one plain file ({@code raw.dat}), the ceilings' copy of the same bytes.
 *
 * <p>Page {@code i} has the key {@code train/000123.jpg} (six digits at least), origin {@code file:///data/}, a
 * POSIX-like version {@code size-mtimeMillis-inode} such as {@code 4096-1700000004551-1000123}, extent
 * {@code [0, pageSize)}; its bytes are {@link #fill(byte[], int) fill(bytes, i)}, a pure function of {@code i}, so any
 * page can be checked. After {@link #create} every file is closed and {@code fsync}ed: the page cache holds only clean
 * pages, which {@link PageCache#drop} can evict.
 */
final class DiskBenchData {

    static final long SEGMENT_SIZE = 64L << 20;
    static final String ORIGIN = "file:///data/";
    private static final long SEED = 0x5EED_D15CL;

    final Path directory;
    final Path tierDirectory;
    /** The plain copy, or null if not written. */
    final Path raw;

    final int pageSize;
    final int count;
    final long capacity;
    final PageKey[] keys;

    private DiskBenchData(Path directory, int pageSize, int count, boolean withRaw) {
        this.directory = directory;
        this.tierDirectory = directory.resolve("tier");
        this.raw = withRaw ? directory.resolve("raw.dat") : null;
        this.pageSize = pageSize;
        this.count = count;
        this.capacity = capacityFor(pageSize, count);
        this.keys = new PageKey[count];
        int digits = Math.max(6, Integer.toString(count - 1).length());
        for (int i = 0; i < count; i++) {
            keys[i] = key(i, digits, pageSize);
        }
    }

    static PageKey key(int i, int digits, int pageSize) {
        String name = String.format(Locale.ROOT, "train/%0" + digits + "d.jpg", i);
        String version = pageSize + "-" + (1_700_000_000_000L + 4_551L * i) + "-" + (1_000_000 + i);
        return new PageKey(ORIGIN, name, version, 0, pageSize);
    }

    /**
     * Writes the data set into {@code directory} (created; must not hold a previous one).
     *
     * @param withRaw whether to write {@code raw.dat} too
     */
    static DiskBenchData create(Path directory, int pageSize, int count, boolean withRaw) throws IOException {
        DiskBenchData data = new DiskBenchData(directory, pageSize, count, withRaw);
        Files.createDirectories(directory);
        byte[] bytes = new byte[pageSize];
        FileChannel rawChannel =
                withRaw ? FileChannel.open(data.raw, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE) : null;
        try (DiskTier tier = data.open(true)) {
            for (int i = 0; i < count; i++) {
                fill(bytes, i);
                Page page = new Page(data.keys[i], MemorySegment.ofArray(bytes)) {
                    @Override
                    protected void deallocate() {}
                };
                page.seal();
                if (!tier.put(page)) {
                    throw new IllegalStateException(
                            "the tier refused page " + i + " of " + count + ": " + tier + ", " + tier.stats());
                }
                if (rawChannel != null) {
                    ByteBuffer b = ByteBuffer.wrap(bytes);
                    while (b.hasRemaining()) {
                        rawChannel.write(b);
                    }
                }
            }
            if (TierInternals.pageCount(tier) != count || tier.stats().evictions() != 0) {
                throw new IllegalStateException(
                        "after writing " + count + " pages the tier holds " + TierInternals.pageCount(tier) + " ("
                                + tier.stats() + "); expected every page and no eviction");
            }
        } finally {
            if (rawChannel != null) {
                rawChannel.force(true);
                rawChannel.close();
            }
        }
        PageCache.fsync(data.segmentFiles());
        return data;
    }

    /** Opens (recovers) the tier and checks that it found every page. */
    DiskTier open(boolean randomAccess) {
        return open(randomAccess, DiskTier.Verify.ONCE);
    }

    /** Opens (recovers) the tier with the given verification and checks that it found every page. */
    DiskTier open(boolean randomAccess, DiskTier.Verify verify) {
        DiskTier tier = DiskTier.builder()
                .directory(tierDirectory)
                .capacity(capacity)
                .segmentSize(SEGMENT_SIZE)
                .randomAccess(randomAccess)
                .verify(verify)
                .build();
        if (tier.recovery().segments() > 0
                && (tier.recovery().pages() != count || TierInternals.pageCount(tier) != count)) {
            String found = tier.recovery() + " with " + TierInternals.pageCount(tier) + " pages in the index";
            tier.close();
            throw new IllegalStateException(
                    "reopening " + tierDirectory + " recovered " + found + " (expected: " + count + " pages)");
        }
        return tier;
    }

    /** Bytes of segment files that hold {@code count} pages, with two spare segments. */
    static long capacityFor(int pageSize, int count) {
        long perSegment = TierInternals.pagesPerSegment(SEGMENT_SIZE, pageSize, 128); // longer than any of our names
        if (perSegment < 1) {
            throw new IllegalArgumentException("page size " + pageSize + " does not fit a segment");
        }
        long segments = (count + perSegment - 1) / perSegment;
        return (segments + 2) * SEGMENT_SIZE;
    }

    /** Page {@code i}'s bytes: random, a function of {@code i} alone. */
    static void fill(byte[] bytes, int i) {
        new SplittableRandom(SEED + 0x9E37_79B9_7F4A_7C15L * i).nextBytes(bytes);
    }

    /** Throws unless {@code actual} holds exactly page {@code i}'s bytes; {@code scratch} is a page-size array. */
    static void check(int i, MemorySegment actual, byte[] scratch) {
        fill(scratch, i);
        long at =
                MemorySegment.mismatch(actual, 0, actual.byteSize(), MemorySegment.ofArray(scratch), 0, scratch.length);
        if (at >= 0) {
            throw new IllegalStateException("page " + i + ": wrong byte at " + at + " of " + actual.byteSize());
        }
    }

    List<Path> segmentFiles() throws IOException {
        return PageCache.segmentFiles(tierDirectory);
    }

    /** The segment files and {@code raw.dat}. */
    List<Path> allFiles() throws IOException {
        List<Path> all = new ArrayList<>(segmentFiles());
        if (raw != null) {
            all.add(raw);
        }
        return all;
    }

    /** Deletes the directory and everything in it. */
    void delete() {
        deleteTree(directory);
    }

    static void deleteTree(Path root) {
        if (!Files.exists(root)) {
            return;
        }
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.delete(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path dir, IOException e) throws IOException {
                    Files.delete(dir);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete " + root, e);
        }
    }

    /**
     * The base directory of a benchmark's files: system property {@code granary.bench.dir}, else {@code fallback};
     * created if missing.
     */
    static Path baseDirectory(String fallback) throws IOException {
        Path base = Path.of(System.getProperty("granary.bench.dir", fallback))
                .toAbsolutePath()
                .normalize();
        Files.createDirectories(base);
        return base;
    }

    /** {@return e.g. {@code "/dev/vda (ext4)"}: the file system a path is on} */
    static String describeFileSystem(Path path) throws IOException {
        FileStore store = Files.getFileStore(path);
        return store.name() + " (" + store.type() + ")";
    }

    /**
     * Throws if {@code path} is on a memory file system, where O_DIRECT and dropping the page cache mean nothing.
     */
    static void requireBlockDevice(Path path) throws IOException {
        String type = Files.getFileStore(path).type();
        if (type.equals("tmpfs") || type.equals("ramfs") || type.equals("overlay") || type.equals("devtmpfs")) {
            throw new IllegalStateException("benchmark directory " + path + " is on " + type + " (expected: a file"
                    + " system on a block device, such as ext4 or xfs on an SSD; set -Dgranary.bench.dir=/path)");
        }
    }

    @Override
    public String toString() {
        return count + " x " + pageSize + " B in " + directory;
    }
}
