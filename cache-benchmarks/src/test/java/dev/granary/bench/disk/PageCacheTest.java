// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PageCacheTest {

    @TempDir
    Path dir;

    @Test
    void mapsLinesUnderTheDirectoryAreFoundWithTheirAddresses() {
        List<String> maps = List.of(
                "7f1200000000-7f1204000000 rw-s 00000000 fd:00 1234                       /data/tier/segments/0001.dat",
                "7f1300000000-7f1300001000 r--s 00000000 fd:00 1235                       /data/tier/segments/a b.dat",
                "7f1400000000-7f1400001000 rw-s 00000000 fd:00 1236                       /data/tier/segments/0002.dat"
                        + " (deleted)",
                "7f1500000000-7f1500001000 rw-p 00000000 00:00 0 ",
                "7f1600000000-7f1600001000 r--p 00000000 fd:00 99                         /data/tierx/0003.dat",
                "55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]");
        List<PageCache.Mapping> found = PageCache.mappingsUnder(maps, Path.of("/data/tier"));
        assertEquals(
                List.of(
                        new PageCache.Mapping(
                                0x7f1200000000L, 0x7f1204000000L, Path.of("/data/tier/segments/0001.dat")),
                        new PageCache.Mapping(
                                0x7f1300000000L, 0x7f1300001000L, Path.of("/data/tier/segments/a b.dat"))),
                found);
        assertEquals(64L << 20, found.getFirst().length());
    }

    /**
     * A file this process maps and has touched is resident; a page-out with the mapping still open evicts it (which
     * POSIX_FADV_DONTNEED alone would not), and the mapping still reads the same bytes afterwards.
     */
    @Test
    void pageOutEvictsPagesThisProcessMaps() throws IOException {
        Path segments = Files.createDirectories(dir.resolve("segments"));
        Path file = segments.resolve("0001.dat");
        byte[] bytes = new byte[8 << 20];
        new Random(7).nextBytes(bytes);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.wrap(bytes));
            channel.force(true);
        }
        try (Arena arena = Arena.ofShared();
                FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            MemorySegment map = channel.map(FileChannel.MapMode.READ_ONLY, 0, bytes.length, arena);
            long sum = 0;
            for (long i = 0; i < bytes.length; i += 4096) {
                sum += map.get(ValueLayout.JAVA_BYTE, i);
            }
            assertTrue(DiskResidency.resident(dir) > 0.99, "resident after touching every page (sum " + sum + ")");

            PageCache.drop(List.of(file));
            double afterFadvise = DiskResidency.resident(dir);

            String done = DiskResidency.pageOut(dir);
            double afterPageOut = DiskResidency.resident(dir);
            assertTrue(done.contains("over 1 mappings"), done);
            assertTrue(
                    afterPageOut < 0.05,
                    "resident after MADV_PAGEOUT: " + afterPageOut + " (after FADV_DONTNEED" + " alone: " + afterFadvise
                            + "); " + done);
            assertEquals(
                    -1,
                    MemorySegment.mismatch(map, 0, bytes.length, MemorySegment.ofArray(bytes), 0, bytes.length),
                    "the mapping reads the same bytes after the page-out");
            assertTrue(DiskResidency.warm(dir) > 0.99);
        }
    }
}
