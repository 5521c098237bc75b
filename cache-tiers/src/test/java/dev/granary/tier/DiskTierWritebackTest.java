// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Early writeback of written pages (decision 0016), seen from the page cache of real files on a real file system:
 * {@code cachestat(2)} (Linux 6.5+) counts the dirty pages of a segment file. A filling segment holds about two
 * intervals of dirty payloads, a segment that filled none, and with writeback off every page the tier wrote is still
 * dirty. Every byte is read back through the tier, after concurrent writers and after a reopen: writeback changes
 * when bytes reach the device, never which bytes.
 */
@SuppressWarnings("restricted") // FFM downcall to syscall(cachestat) (tests run with --enable-native-access)
class DiskTierWritebackTest {

    private static final long SEGMENT = 16L << 20;
    private static final int PAGE = 64 << 10;
    private static final long EVERY = 1L << 20;
    /** {@code cachestat(2)}: the same number on every Linux architecture (the syscall table's common part). */
    private static final long SYS_CACHESTAT = 451;

    private static final MethodHandle SYSCALL = Linker.nativeLinker()
            .downcallHandle(
                    Linker.nativeLinker().defaultLookup().findOrThrow("syscall"),
                    FunctionDescriptor.of(
                            ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG,
                            ValueLayout.ADDRESS,
                            ValueLayout.ADDRESS,
                            ValueLayout.JAVA_LONG),
                    Linker.Option.firstVariadicArg(1));

    @TempDir
    Path dir;

    @Test
    void aFillingSegmentHoldsAboutTwoIntervalsOfDirtyPages() throws Throwable {
        int count = 192; // 12 MiB of payloads in one 16 MiB segment
        try (Arena arena = Arena.ofShared()) {
            try (DiskTier tier = tier(EVERY)) {
                for (int i = 0; i < count; i++) {
                    assertTrue(tier.put(page(arena, i)), "page " + i);
                }
                List<Path> files = segmentFiles();
                assertEquals(1, files.size(), "one segment: " + files);
                // Payloads go down from 16 MiB to 4 MiB; each MiB is handed off once the payloads are a MiB below it:
                // [15, 16) ... [5, 6) MiB.
                assertEquals(11, tier.writebacks(), "ranges handed to writeback");
                long dirty = dirtyPages(files.getFirst());
                long bound = (2 * EVERY + NativeFiles.HEADER_CHUNK) / 4096;
                assertTrue(
                        dirty <= bound,
                        "dirty pages of a segment holding 12 MiB of pages, written back every" + " 1 MiB: " + dirty
                                + " (expected: at most " + bound + ", two intervals and the headers)");
                assertPages(tier, count, "after the writes");
            }
            try (DiskTier reopened = tier(EVERY)) { // resumes the segment: appends go on below its last payload
                assertEquals(
                        count, reopened.recovery().pages(), reopened.recovery().toString());
                for (int i = count; i < count + 48; i++) {
                    assertTrue(reopened.put(page(arena, i)), "page " + i + " after the reopen");
                }
                assertEquals(1, segmentFiles().size(), "the resumed segment took them: " + segmentFiles());
                // From 4 MiB down to 1 MiB; the mark starts at the lowest payload found: [3, 4) and [2, 3) MiB.
                assertEquals(2, reopened.writebacks(), "ranges handed to writeback after the reopen");
                assertPages(reopened, count + 48, "after the reopen");
            }
        }
    }

    @Test
    void withWritebackOffEveryPageTheTierWroteIsStillDirty() throws Throwable {
        int count = 192;
        try (Arena arena = Arena.ofShared();
                DiskTier tier = tier(0)) {
            for (int i = 0; i < count; i++) {
                assertTrue(tier.put(page(arena, i)), "page " + i);
            }
            assertEquals(0, tier.writebacks(), "nothing handed to writeback");
            long dirty = dirtyPages(segmentFiles().getFirst());
            // The kernel writes a file's dirty pages 30 s after they were dirtied, or when the system's dirty pages
            // pass vm.dirty_background_ratio: neither within this test on a machine that is not writing gigabytes.
            long expected = (long) count * PAGE / 4096;
            assertTrue(
                    dirty >= expected,
                    "dirty pages after 12 MiB written without writeback: " + dirty + " (expected: at least " + expected
                            + ")");
        }
    }

    @Test
    void aSegmentThatFilledIsHandedToWritebackWhole() throws Throwable {
        try (Arena arena = Arena.ofShared();
                DiskTier tier = tier(EVERY)) {
            int i = 0;
            while (segmentFiles().size() < 2) {
                assertTrue(tier.put(page(arena, i)), "page " + i);
                i++;
            }
            List<Path> files = segmentFiles();
            long full = dirtyPages(files.getFirst());
            // Nothing is written into a full segment after its rest was handed off (one writer here).
            assertEquals(0, full, "dirty pages of the segment that filled");
            long active = dirtyPages(files.getLast());
            long bound = (2 * EVERY + NativeFiles.HEADER_CHUNK) / 4096;
            assertTrue(
                    active <= bound,
                    "dirty pages of the new segment: " + active + " (expected: at most " + bound + ")");
            assertTrue(
                    tier.writebacks() >= 15,
                    "a segment's payloads in 1 MiB ranges, then its rest: " + tier.writebacks());
            assertPages(tier, i, "after a segment filled");
        }
    }

    @Test
    void concurrentWritersHandEachRangeOffOnceAndEveryByteReadsBack() throws Exception {
        int threads = 8;
        int perThread = 96; // 48 MiB in 16 MiB segments: three segments fill
        try (Arena arena = Arena.ofShared();
                DiskTier tier = DiskTier.builder()
                        .directory(dir.resolve("disk"))
                        .capacity(8 * SEGMENT)
                        .segmentSize(SEGMENT)
                        .writebackEvery(64 << 10)
                        .build();
                ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int first = t * perThread;
                done.add(pool.submit(() -> {
                    for (int i = first; i < first + perThread; i++) {
                        assertTrue(tier.put(page(arena, i)), "page " + i);
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
            assertEquals(0, tier.stats().evictions(), tier.stats().toString());
            // Each 64 KiB range below a segment's end goes at most once (the mark only moves down): at most one
            // hand-off per page and one rest per segment.
            long handed = tier.writebacks();
            assertTrue(handed > 0 && handed <= (long) threads * perThread + 4, "ranges handed to writeback: " + handed);
            assertPages(tier, threads * perThread, "after concurrent writes");
        }
    }

    @Test
    void writebackEveryIsValidated() {
        for (long bad : new long[] {-1, 1, (64 << 10) - 1}) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> DiskTier.builder().writebackEvery(bad));
            assertTrue(
                    e.getMessage().contains("writebackEvery: " + bad + " bytes")
                            && e.getMessage().contains("at least 64 KiB"),
                    e.getMessage());
        }
        assertDoesNotThrow(() -> DiskTier.builder().writebackEvery(0).writebackEvery(64 << 10));
    }

    private DiskTier tier(long every) {
        return DiskTier.builder()
                .directory(dir.resolve("disk"))
                .capacity(4 * SEGMENT)
                .segmentSize(SEGMENT)
                .writebackEvery(every)
                .build();
    }

    private List<Path> segmentFiles() throws IOException {
        try (Stream<Path> list = Files.list(dir.resolve("disk").resolve(DiskDirectory.SEGMENTS))) {
            return list.filter(p -> !p.getFileName().toString().endsWith(".tmp"))
                    .sorted()
                    .toList();
        }
    }

    private static PageKey key(int i) {
        return new PageKey("file:///data", "obj-" + i, "v1", 0, PAGE);
    }

    /** A page in page-aligned native memory, as the memory tier's are; its bytes follow from its number. */
    private static Page page(Arena arena, int i) {
        MemorySegment memory = arena.allocate(PAGE, 4096);
        for (int at = 0; at < PAGE; at += 8) {
            memory.set(ValueLayout.JAVA_LONG_UNALIGNED, at, (long) i * 1_000_003L + at);
        }
        Page page = new Page(key(i), memory) {
            @Override
            protected void deallocate() {}
        };
        page.seal();
        return page;
    }

    private static void assertPages(DiskTier tier, int count, String when) {
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < count; i++) {
                Page found = tier.get(key(i));
                assertNotNull(found, "page " + i + " " + when);
                try {
                    assertArrayEquals(
                            page(arena, i).segment().toArray(ValueLayout.JAVA_BYTE),
                            found.segment().toArray(ValueLayout.JAVA_BYTE),
                            "page " + i + " " + when);
                } finally {
                    found.release();
                }
            }
        }
    }

    /** Dirty pages of the file in the page cache ({@code cachestat(2)}: not under writeback, not yet written). */
    private static long dirtyPages(Path file) throws Throwable {
        int fd = NativeFiles.openReadOnly(file);
        assertTrue(fd >= 0, "open " + file);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment range = arena.allocate(16, 8); // struct cachestat_range { off; len }: 0, 0 = the whole file
            MemorySegment stat = arena.allocate(40, 8); // nr_cache, nr_dirty, nr_writeback, nr_evicted, ...
            long rc = (long) SYSCALL.invokeExact(SYS_CACHESTAT, (long) fd, range, stat, 0L);
            assertEquals(0, rc, "cachestat(2) on " + file + " (Linux 6.5+)");
            return stat.get(ValueLayout.JAVA_LONG, 8);
        } finally {
            NativeFiles.close(fd);
        }
    }
}
