// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Payloads written with {@code O_DIRECT} (decision 0015) on real files: a direct write bypasses the page cache, so the
 * danger is a page of its range that was cached (or mapped) before the write and is served afterwards with the old
 * bytes — wrong bytes that no checksum would catch, since a page this process wrote is not verified on read. Here
 * every write lands in a range that was read through the page cache and mapped by a second mapping (as another
 * process sharing the directory would) just before, direct and buffered payloads interleaved in one segment; every
 * byte is compared through the tier, through the second mapping, and after a reopen. Also: the kernel refusing a
 * direct write, and a real ext4 file system that fills up under direct writes.
 */
class DiskTierDirectWriteTest {

    private static final long SEGMENT = 1L << 20;

    @TempDir
    Path dir;

    /** Which path a page is built to take. */
    private enum Kind {
        /** Native, page-aligned address and length: direct. */
        ALIGNED,
        /** Native, page-aligned address, a length that is not a multiple of 4 KiB: buffered. */
        ODD_LENGTH,
        /** Native, a whole number of 4 KiB, but at an address 64 bytes past a page boundary: buffered. */
        MISALIGNED,
        /** A heap array: buffered. */
        HEAP,
        /** Native and aligned, but below the smallest direct write set for the tier: buffered. */
        BELOW_MIN
    }

    @Test
    void directAndBufferedPayloadsInterleavedReadBackExactlyThoughTheirRangesWereCachedAndMappedBeforehand()
            throws Exception {
        Path tierDir = dir.resolve("disk");
        boolean directHere = directIoWorksIn(dir);
        SplittableRandom random = new SplittableRandom(15);
        Map<PageKey, byte[]> written = new HashMap<>();
        List<PageKey> order = new ArrayList<>();
        Map<Kind, Integer> kinds = new EnumMap<>(Kind.class);
        try (Arena arena = Arena.ofShared();
                Arena mappings = Arena.ofShared()) {
            Map<Path, MemorySegment> other = new HashMap<>(); // a second mapping of each segment file
            try (DiskTier tier = DiskTier.builder()
                    .directory(tierDir)
                    .capacity(64 * SEGMENT)
                    .segmentSize(SEGMENT)
                    .directWrites(true)
                    .directWriteMin(8192)
                    .build()) {
                for (int i = 0; i < 400; i++) {
                    Kind kind = Kind.values()[random.nextInt(Kind.values().length)];
                    kinds.merge(kind, 1, Integer::sum);
                    int length = switch (kind) {
                        case ALIGNED, MISALIGNED, HEAP -> 4096 * (2 + random.nextInt(31));
                        case ODD_LENGTH -> 4096 * (1 + random.nextInt(16)) + 1 + random.nextInt(4095);
                        case BELOW_MIN -> 4096;
                    };
                    byte[] bytes = new byte[length];
                    random.nextBytes(bytes);
                    PageKey key = new PageKey("file:///data", "obj-" + i, "v1", 0, length);
                    // Bring the rest of the newest segment (where this payload will land) into the page cache,
                    // and map and touch it through a second mapping: zeros of a hole, cached and mapped.
                    Path newest = newestSegment(tierDir);
                    if (newest != null) {
                        readThroughPageCache(newest);
                        touch(other.computeIfAbsent(newest, f -> map(f, mappings)));
                    }
                    assertTrue(tier.put(page(key, bytes, kind, arena)), "page " + i + " (" + kind + ")");
                    written.put(key, bytes);
                    order.add(key);
                    assertPage(tier, key, bytes, other, mappings, "just written");
                }
                assertEquals(0, tier.stats().evictions(), "the test needs every page to stay: " + tier.stats());
                for (PageKey key : order) { // no later write disturbed an earlier one
                    assertPage(tier, key, written.get(key), other, mappings, "after all writes");
                }
                long direct = tier.directWrites();
                if (directHere) {
                    assertEquals(
                            kinds.getOrDefault(Kind.ALIGNED, 0).longValue(),
                            direct,
                            "every aligned page of 8 KiB or more goes direct, nothing else does; kinds " + kinds);
                } else {
                    assertEquals(0, direct, "a file system without direct I/O: every write buffered");
                }
            }
            try (DiskTier reopened = DiskTier.builder()
                    .directory(tierDir)
                    .capacity(64 * SEGMENT)
                    .segmentSize(SEGMENT)
                    .build()) {
                assertEquals(
                        order.size(),
                        reopened.recovery().pages(),
                        reopened.recovery().toString());
                for (PageKey key : order) { // recovered pages are checked against their CRC when first read
                    assertPage(reopened, key, written.get(key), other, mappings, "after reopen");
                }
                assertEquals(0, reopened.stats().corruptions(), reopened.stats().toString());
            }
        }
    }

    @Test
    void byDefaultEveryPageGoesThroughThePageCache() throws Exception {
        try (Arena arena = Arena.ofShared();
                DiskTier tier = DiskTier.builder()
                        .directory(dir.resolve("disk"))
                        .capacity(8 * SEGMENT)
                        .segmentSize(SEGMENT)
                        .build()) {
            byte[] bytes = new byte[128 << 10];
            new SplittableRandom(3).nextBytes(bytes);
            PageKey key = new PageKey("file:///data", "obj", "v1", 0, bytes.length);
            assertTrue(tier.put(page(key, bytes, Kind.ALIGNED, arena)));
            assertEquals(0, tier.directWrites());
            assertPage(tier, key, bytes, new HashMap<>(), arena, "buffered");
        }
    }

    @Test
    void aDirectWriteTheKernelRefusesIsReportedSoItCanBeWrittenBuffered() throws Exception {
        Path file = Files.createFile(dir.resolve("f"));
        Files.write(file, new byte[64 << 10]);
        int fd = NativeFiles.openDirect(file);
        Assumptions.assumeTrue(
                fd >= 0,
                "this file system refuses O_DIRECT at open: " + dir + "; the tier then never tries a direct write");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment aligned = arena.allocate(16 << 10, 4096).fill((byte) 7);
            MemorySegment misaligned = arena.allocate((16 << 10) + 4096, 4096)
                    .asSlice(64, 16 << 10)
                    .fill((byte) 9);
            if (!Files.getFileStore(dir).type().equals("tmpfs")) { // tmpfs takes any alignment: it copies
                assertFalse(NativeFiles.pwriteDirect(fd, misaligned, 0), "a misaligned buffer is refused (EINVAL)");
                assertFalse(NativeFiles.pwriteDirect(fd, aligned.asSlice(0, 1000), 0), "so is an odd length");
                assertFalse(NativeFiles.pwriteDirect(fd, aligned, 100), "and an odd offset");
                assertArrayEquals(new byte[64 << 10], Files.readAllBytes(file), "a refused write writes nothing");
            }
            assertTrue(NativeFiles.pwriteDirect(fd, aligned, 8192));
            byte[] expected = new byte[64 << 10];
            Arrays.fill(expected, 8192, 8192 + (16 << 10), (byte) 7);
            assertArrayEquals(expected, Files.readAllBytes(file));
        } finally {
            NativeFiles.close(fd);
        }
    }

    @Test
    void aRealExt4FileSystemThatFillsUnderDirectWritesRefusesPagesAndKeepsEveryPageItAccepted() throws Exception {
        Path mount = Files.createDirectories(dir.resolve("tiny-ext4"));
        Assumptions.assumeTrue(
                TinyFilesystem.mountExt4(mount, dir.resolve("ext4.img"), 16 << 20),
                "needs root, mkfs.ext4 and a loop device to mount a 16 MiB ext4");
        try {
            Path tierDir = mount.resolve("disk");
            Map<PageKey, byte[]> written = new HashMap<>();
            SplittableRandom random = new SplittableRandom(28);
            try (Arena arena = Arena.ofShared();
                    DiskTier tier = DiskTier.builder()
                            .directory(tierDir)
                            .capacity(64 * SEGMENT)
                            .segmentSize(SEGMENT)
                            .directWrites(true)
                            .retryAfter(Duration.ofHours(1))
                            .build()) {
                int i = 0;
                for (; i < 4; i++) { // the first segment's first pages, while the disk has room
                    put(tier, random, arena, i, written);
                }
                // Another process takes every free byte: the segment file is sparse, so its payload blocks are gone.
                hog(mount.resolve("hog"));
                int refused = 0;
                for (; i < 40; i++) {
                    if (!put(tier, random, arena, i, written)) {
                        refused++;
                    }
                }
                assertTrue(
                        tier.directWrites() >= 4,
                        "the pages before the disk filled went direct: " + tier.directWrites());
                assertTrue(refused > 0, "a full disk refuses pages: " + tier.stats());
                assertTrue(
                        tier.failure().orElseThrow().contains("No space left on device"),
                        tier.failure().toString());
                assertTrue(
                        tier.failure().orElseThrow().contains("O_DIRECT"),
                        "the direct write itself met the full" + " disk: " + tier.failure());
                for (Map.Entry<PageKey, byte[]> e : written.entrySet()) {
                    assertPage(tier, e.getKey(), e.getValue(), new HashMap<>(), arena, "while full");
                }
            }
            try (DiskTier reopened = DiskTier.builder()
                            .directory(tierDir)
                            .capacity(64 * SEGMENT)
                            .segmentSize(SEGMENT)
                            .build();
                    Arena arena = Arena.ofShared()) {
                assertEquals(
                        written.size(),
                        reopened.recovery().pages(),
                        reopened.recovery().toString());
                for (Map.Entry<PageKey, byte[]> e : written.entrySet()) {
                    assertPage(reopened, e.getKey(), e.getValue(), new HashMap<>(), arena, "after reopen");
                }
                assertEquals(0, reopened.stats().corruptions(), reopened.stats().toString());
            }
        } finally {
            TinyFilesystem.unmountExt4(mount, dir.resolve("ext4.img"));
        }
    }

    private static boolean put(
            DiskTier tier, SplittableRandom random, Arena arena, int i, Map<PageKey, byte[]> written) {
        byte[] bytes = new byte[128 << 10];
        random.nextBytes(bytes);
        PageKey key = new PageKey("file:///data", "obj-" + i, "v1", 0, bytes.length);
        if (!tier.put(page(key, bytes, Kind.ALIGNED, arena))) {
            return false;
        }
        written.put(key, bytes);
        return true;
    }

    private static void hog(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer block = ByteBuffer.allocate(64 << 10);
            try {
                while (true) {
                    channel.write(block.clear());
                }
            } catch (IOException full) {
                // the file system is full now
            }
            try {
                channel.force(true); // delayed allocation: make the blocks really taken
            } catch (IOException ignored) {
                // what could be written is on the device
            }
        }
        ByteBuffer small = ByteBuffer.allocate(4096);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            while (true) {
                channel.write(small.clear());
                channel.force(true);
            }
        } catch (IOException full) {
            // not even one more block
        }
    }

    private static Page page(PageKey key, byte[] bytes, Kind kind, Arena arena) {
        MemorySegment memory = switch (kind) {
            case HEAP -> MemorySegment.ofArray(bytes.clone());
            case MISALIGNED -> arena.allocate(bytes.length + 4096L, 4096).asSlice(64, bytes.length);
            default -> arena.allocate(bytes.length, 4096);
        };
        if (kind != Kind.HEAP) {
            memory.copyFrom(MemorySegment.ofArray(bytes));
        }
        Page page = new Page(key, memory) {
            @Override
            protected void deallocate() {}
        };
        page.seal();
        return page;
    }

    /** Checks a page's bytes through the tier and through the second mapping of its segment file. */
    private static void assertPage(
            DiskTier tier, PageKey key, byte[] expected, Map<Path, MemorySegment> other, Arena mappings, String when) {
        Page found = tier.get(key);
        assertNotNull(found, key.key() + " " + when);
        try {
            assertArrayEquals(
                    expected,
                    found.segment().toArray(ValueLayout.JAVA_BYTE),
                    key.key() + " " + when + ", through the tier");
            DiskPage disk = (DiskPage) found;
            if (Files.exists(disk.segment.file)) {
                MemorySegment mapping = other.computeIfAbsent(disk.segment.file, f -> map(f, mappings));
                assertArrayEquals(
                        expected,
                        mapping.asSlice(disk.payloadOffset, expected.length).toArray(ValueLayout.JAVA_BYTE),
                        key.key() + " " + when + ", through another mapping");
            }
        } finally {
            found.release();
        }
    }

    private static Path newestSegment(Path tierDir) throws IOException {
        Path segments = tierDir.resolve(DiskDirectory.SEGMENTS);
        if (!Files.isDirectory(segments)) {
            return null;
        }
        try (Stream<Path> list = Files.list(segments)) {
            return list.filter(p -> p.getFileName().toString().endsWith(".dat"))
                    .max(Comparator.comparingLong(
                            p -> Long.parseLong(p.getFileName().toString().replaceAll("\\D", ""))))
                    .orElse(null);
        }
    }

    private static void readThroughPageCache(Path file) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
            long position = 0;
            int n;
            while ((n = channel.read(buffer.clear(), position)) > 0) {
                position += n;
            }
        }
    }

    private static MemorySegment map(Path file, Arena arena) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            return channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Faults every page of a mapping in (reads one byte of each). */
    private static void touch(MemorySegment mapping) {
        long sum = 0;
        for (long at = 0; at < mapping.byteSize(); at += 4096) {
            sum += mapping.get(ValueLayout.JAVA_BYTE, at);
        }
        if (sum == Long.MIN_VALUE) {
            throw new AssertionError(); // keeps the loop
        }
    }

    private static boolean directIoWorksIn(Path directory) throws IOException {
        Path probe = Files.createTempFile(directory, "probe", ".tmp");
        int fd = NativeFiles.openDirect(probe);
        NativeFiles.close(fd);
        Files.delete(probe);
        return fd >= 0;
    }
}
