// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How a segment is created and written, seen from the page cache: a fresh segment is not read around (its first
 * touch comes after {@code MADV_RANDOM}; a fault before the advice read a whole read-ahead window, {@code
 * read_ahead_kb}, of zeroes from the fallocated file), a tier without the advice writes its record headers with
 * {@code pwrite} and still recovers every page, and a sparse segment (decision 0014) on a disk that fills up after it
 * was created refuses pages with a clear failure, never a {@code SIGBUS}, and keeps every page it accepted.
 */
@SuppressWarnings("restricted") // FFM downcall to mincore (tests run with --enable-native-access)
class DiskTierSegmentCreationTest {

    private static final int PAGE = 4096;
    private static final long SEGMENT = 16L << 20;
    private static final MethodHandle MINCORE = Linker.nativeLinker()
            .downcallHandle(
                    Linker.nativeLinker().defaultLookup().findOrThrow("mincore"),
                    FunctionDescriptor.of(
                            ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG, ValueLayout.ADDRESS));

    @TempDir
    Path dir;

    @Test
    void aFreshSegmentHoldsInThePageCacheOnlyWhatWasWritten() throws Throwable {
        try (Arena arena = Arena.ofConfined();
                DiskTier tier = DiskTier.builder()
                        .directory(dir)
                        .capacity(4 * SEGMENT)
                        .segmentSize(SEGMENT)
                        .build()) {
            assertTrue(tier.put(page(arena, 0)), "the page is cached");
            List<Path> files = segmentFiles();
            assertEquals(1, files.size(), "one segment: " + files);
            long resident = residentPages(files.getFirst());
            // The first chunk of the header area (mapped writable in one call, so the record headers' stores take no
            // faults) and the payload's page: a few pages, not a read-ahead window (2 048 pages where read_ahead_kb
            // is 8 MiB, 32 where it is the kernel's default 128 KiB).
            long expected = NativeFiles.HEADER_CHUNK / PAGE + 2;
            assertTrue(
                    resident <= expected,
                    "pages of a fresh 16 MiB segment in the page cache after one 4 KiB put: " + resident
                            + " (expected: at most " + expected + ")");
        }
    }

    @Test
    void withoutTheRandomAccessAdviceHeadersAreWrittenAndEveryPageIsRecovered() throws Exception {
        int count = 600; // more than one 4 KiB page of record headers
        try (Arena arena = Arena.ofConfined()) {
            try (DiskTier tier = DiskTier.builder()
                    .directory(dir)
                    .capacity(4 * SEGMENT)
                    .segmentSize(SEGMENT)
                    .randomAccess(false)
                    .build()) {
                for (int i = 0; i < count; i++) {
                    assertTrue(tier.put(page(arena, i)), "page " + i + " is cached");
                }
            }
            for (boolean random : new boolean[] {false, true}) {
                try (DiskTier reopened = DiskTier.builder()
                        .directory(dir)
                        .capacity(4 * SEGMENT)
                        .segmentSize(SEGMENT)
                        .randomAccess(random)
                        .build()) {
                    assertEquals(
                            count,
                            reopened.recovery().pages(),
                            "recovered (randomAccess " + random + "): " + reopened.recovery());
                    for (int i = 0; i < count; i++) {
                        Page found = reopened.get(key(i));
                        assertNotNull(found, "page " + i + " after reopen (randomAccess " + random + ")");
                        try {
                            assertArrayEquals(bytes(i), found.segment().toArray(ValueLayout.JAVA_BYTE), "page " + i);
                        } finally {
                            found.release();
                        }
                    }
                }
            }
        }
    }

    @Test
    void aDiskThatFillsUnderASegmentsPayloadsFailsTheWriteCleanlyAndKeepsWhatWasWritten() throws Exception {
        // Headers of ~1 KiB, 40 pages before the disk fills: the next page needs a new payload block first.
        fillsUp(900, 40, "pwrite");
    }

    @Test
    void aDiskThatFillsUnderASegmentsHeadersRefusesTheNextChunkAndKeepsWhatWasWritten() throws Exception {
        // Headers of ~2 KiB, 20 pages before the disk fills: the header area needs its next 64 KiB chunk while the
        // payload block still has room; the chunk is refused (never a store into a hole: a SIGBUS), the segment
        // counts as full, and creating the next one reports the full disk.
        fillsUp(1900, 20, "cannot allocate");
    }

    private void fillsUp(int nameLength, int before, String failedAt) throws Exception {
        Path mount = Files.createDirectories(dir.resolve("tiny-fs"));
        Assumptions.assumeTrue(TinyFilesystem.mount(mount, 1280 << 10), "needs root to mount a 1.25 MiB tmpfs");
        try {
            Path tierDir = mount.resolve("disk");
            long segment = 1 << 20;
            int small = 64;
            String longName = "x".repeat(nameLength);
            List<PageKey> written = new ArrayList<>();
            try (Arena arena = Arena.ofConfined();
                    DiskTier tier = DiskTier.builder()
                            .directory(tierDir)
                            .capacity(4 * segment)
                            .segmentSize(segment)
                            .retryAfter(Duration.ofHours(1))
                            .build()) {
                int i = 0;
                for (; i < before; i++) { // within the first header chunk and the first payload block
                    assertTrue(tier.put(smallPage(arena, longName, i, small)), "page " + i + " before the disk fills");
                    written.add(smallKey(longName, i, small));
                }
                // Another process takes every free byte: the segment file is sparse, so its next blocks are gone.
                Path hog = mount.resolve("hog");
                try (FileChannel channel =
                        FileChannel.open(hog, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                    ByteBuffer block = ByteBuffer.allocate(4096);
                    try {
                        while (true) {
                            channel.write(block.clear());
                        }
                    } catch (IOException full) {
                        // the file system is full now
                    }
                }
                int refused = 0;
                for (; i < 200; i++) { // crosses the header chunk and needs new payload blocks
                    if (tier.put(smallPage(arena, longName, i, small))) {
                        written.add(smallKey(longName, i, small));
                    } else {
                        refused++;
                    }
                }
                assertTrue(refused > 0, "a full disk refuses pages: " + tier.stats());
                assertTrue(tier.stats().failures() > 0, tier.stats().toString());
                assertTrue(
                        tier.failure().orElseThrow().contains("No space left on device"),
                        tier.failure().toString());
                assertTrue(
                        tier.failure().orElseThrow().contains(failedAt),
                        "failed at " + failedAt + ": " + tier.failure());
                assertTrue(written.size() >= before, "pages accepted: " + written.size());
                for (PageKey key : written) {
                    assertSmallPage(tier, key, "while full");
                }
            }
            try (DiskTier reopened = DiskTier.builder()
                    .directory(tierDir)
                    .capacity(4 * segment)
                    .segmentSize(segment)
                    .build()) {
                assertEquals(
                        written.size(),
                        reopened.recovery().pages(),
                        "every accepted page recovered: " + reopened.recovery());
                for (PageKey key : written) {
                    assertSmallPage(reopened, key, "after reopen");
                }
            }
        } finally {
            TinyFilesystem.unmount(mount);
        }
    }

    private static PageKey smallKey(String name, int i, int length) {
        return new PageKey("file:///data", name + "/" + i, "v" + i, 0, length);
    }

    private static Page smallPage(Arena arena, String name, int i, int length) {
        MemorySegment memory = arena.allocate(length, 64);
        memory.fill((byte) (i * 31 + 7));
        Page page = new Page(smallKey(name, i, length), memory) {
            @Override
            protected void deallocate() {}
        };
        page.seal();
        return page;
    }

    private static void assertSmallPage(DiskTier tier, PageKey key, String when) {
        Page found = tier.get(key);
        assertNotNull(found, key.key() + " " + when);
        try {
            int i = Integer.parseInt(key.key().substring(key.key().lastIndexOf('/') + 1));
            byte[] expected = new byte[key.length()];
            Arrays.fill(expected, (byte) (i * 31 + 7));
            assertArrayEquals(expected, found.segment().toArray(ValueLayout.JAVA_BYTE), key.key() + " " + when);
        } finally {
            found.release();
        }
    }

    private static PageKey key(int i) {
        return new PageKey("file:///data", "train/" + i + ".bin", "v" + i, 0, PAGE);
    }

    private static byte[] bytes(int i) {
        byte[] b = new byte[PAGE];
        new SplittableRandom(i).nextBytes(b);
        return b;
    }

    private static Page page(Arena arena, int i) {
        MemorySegment memory = arena.allocate(PAGE, 4096).copyFrom(MemorySegment.ofArray(bytes(i)));
        Page page = new Page(key(i), memory) {
            @Override
            protected void deallocate() {}
        };
        page.seal();
        return page;
    }

    private List<Path> segmentFiles() throws IOException {
        try (Stream<Path> list = Files.list(dir.resolve(DiskDirectory.SEGMENTS))) {
            return list.filter(p -> !p.getFileName().toString().endsWith(".tmp"))
                    .toList();
        }
    }

    /** Pages of the file in the page cache ({@code mincore} over a fresh mapping, which faults nothing in). */
    private static long residentPages(Path file) throws Throwable {
        long size = Files.size(file);
        long pages = (size + 4095) / 4096;
        try (Arena arena = Arena.ofConfined();
                FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            MemorySegment map = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            MemorySegment vector = arena.allocate(pages);
            int rc = (int) MINCORE.invokeExact(map, size, vector);
            assertEquals(0, rc, "mincore");
            long resident = 0;
            for (long i = 0; i < pages; i++) {
                resident += vector.get(ValueLayout.JAVA_BYTE, i) & 1;
            }
            return resident;
        }
    }
}
