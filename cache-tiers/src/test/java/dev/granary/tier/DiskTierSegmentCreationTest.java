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
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How a segment is created and written, seen from the page cache: a fresh segment is not read around (its first
 * touch comes after {@code MADV_RANDOM}; a fault before the advice read a whole read-ahead window, {@code
 * read_ahead_kb}, of zeroes from the fallocated file), and a tier without the advice writes its record headers with
 * {@code pwrite} and still recovers every page.
 */
class DiskTierSegmentCreationTest {

    private static final int PAGE = 4096;
    private static final long SEGMENT = 16L << 20;
    private static final MethodHandle MINCORE = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().findOrThrow("mincore"),
            FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                    ValueLayout.ADDRESS));

    @TempDir
    Path dir;

    @Test
    void aFreshSegmentHoldsInThePageCacheOnlyWhatWasWritten() throws Throwable {
        try (Arena arena = Arena.ofConfined();
                DiskTier tier = DiskTier.builder().directory(dir).capacity(4 * SEGMENT).segmentSize(SEGMENT).build()) {
            assertTrue(tier.put(page(arena, 0)), "the page is cached");
            List<Path> files = segmentFiles();
            assertEquals(1, files.size(), "one segment: " + files);
            long resident = residentPages(files.getFirst());
            // The segment header's page, the record header's and the payload's: a few pages, not a read-ahead
            // window (2 048 pages where read_ahead_kb is 8 MiB, 32 where it is the kernel's default 128 KiB).
            assertTrue(resident <= 4, "pages of a fresh 16 MiB segment in the page cache after one 4 KiB put: "
                    + resident + " (expected: at most 4)");
        }
    }

    @Test
    void withoutTheRandomAccessAdviceHeadersAreWrittenAndEveryPageIsRecovered() throws Exception {
        int count = 600; // more than one 4 KiB page of record headers
        try (Arena arena = Arena.ofConfined()) {
            try (DiskTier tier = DiskTier.builder().directory(dir).capacity(4 * SEGMENT).segmentSize(SEGMENT)
                    .randomAccess(false).build()) {
                for (int i = 0; i < count; i++) {
                    assertTrue(tier.put(page(arena, i)), "page " + i + " is cached");
                }
            }
            for (boolean random : new boolean[] {false, true}) {
                try (DiskTier reopened = DiskTier.builder().directory(dir).capacity(4 * SEGMENT).segmentSize(SEGMENT)
                        .randomAccess(random).build()) {
                    assertEquals(count, reopened.recovery().pages(), "recovered (randomAccess " + random + "): "
                            + reopened.recovery());
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
        try (Stream<Path> list = Files.list(dir.resolve(DiskTier.SEGMENTS))) {
            return list.filter(p -> !p.getFileName().toString().endsWith(".tmp")).toList();
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
