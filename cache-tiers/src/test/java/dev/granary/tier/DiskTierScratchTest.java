// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scratch mode ({@link DiskTier.Builder#deleteOnClose}) on real directories: a directory the tier made is gone after
 * the cache closes; one that existed is emptied of Granary's files and kept; a user's file put in meanwhile survives,
 * with the directory; without the option everything stays; a foreign directory is still refused at open, untouched.
 */
@Timeout(60)
class DiskTierScratchTest {

    private static final int PAGE = 16 << 10;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Path data;
    private Dataset dataset;

    @BeforeEach
    void setUp() throws IOException {
        data = Files.createDirectories(root.resolve("data"));
        dataset = new Dataset(data, 3);
        for (int i = 0; i < 12; i++) {
            dataset.put("train/" + i + ".bin", 5_000 + i * 9_000);
        }
    }

    /** Reads every object through a cache over {@code disk}, so segments are written, then closes the cache. */
    private void useAndClose(DiskTier disk) throws IOException {
        TieredCache cache = leaks.watch(TieredCache.builder(PosixOrigin.of(data))
                .tier(disk)
                .pageSize(PAGE)
                .leakDetection(LeakDetection.PARANOID)
                .build());
        leaks.released("disk tier", disk::isReleased);
        try (cache) {
            for (Map.Entry<String, byte[]> e : dataset.objects().entrySet()) {
                try (Lease lease = cache.read(e.getKey())) {
                    Bytes.assertSame(e.getValue(), lease.bytes(), e.getKey());
                }
            }
            assertTrue(countSegments(disk.directory()) > 0, "segments were written");
        }
    }

    private static long countSegments(Path dir) throws IOException {
        try (Stream<Path> files = Files.list(dir.resolve(DiskDirectory.SEGMENTS))) {
            return files.count();
        }
    }

    private static DiskTier.Builder disk(Path dir) {
        return DiskTier.builder().directory(dir).capacity(4L << 20).segmentSize(128 << 10);
    }

    @Test
    void aDirectoryTheTierCreatedIsRemovedWhenTheCacheCloses() throws Exception {
        Path dir = root.resolve("scratch/granary");
        useAndClose(disk(dir).deleteOnClose(true).build());
        assertFalse(Files.exists(dir), "scratch directory removed");
        assertTrue(Files.isDirectory(root.resolve("scratch")), "its parent is not the tier's and stays");
    }

    @Test
    void aDirectoryThatExistedIsEmptiedAndKept() throws Exception {
        Path dir = Files.createDirectories(root.resolve("mountpoint"));
        useAndClose(disk(dir).deleteOnClose(true).build());
        assertTrue(Files.isDirectory(dir), "a directory the tier did not create stays");
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(0, left.count(), "but holds nothing of Granary's");
        }
    }

    @Test
    void aUsersFileWrittenMeanwhileSurvivesWithTheDirectory() throws Exception {
        Path dir = root.resolve("shared");
        DiskTier disk = disk(dir).deleteOnClose(true).build();
        Path mine = dir.resolve("notes.txt");
        byte[] text = "the user's own file".getBytes(StandardCharsets.UTF_8);
        Files.write(mine, text);
        useAndClose(disk);
        assertArrayEquals(text, Files.readAllBytes(mine), "a file Granary did not write is never deleted");
        assertFalse(Files.exists(dir.resolve(DiskDirectory.FORMAT_FILE)), "Granary's own files are gone");
        assertFalse(Files.exists(dir.resolve(DiskDirectory.SEGMENTS)));
    }

    @Test
    void withoutTheOptionThePagesStayForTheNextRun() throws Exception {
        Path dir = root.resolve("persistent");
        useAndClose(disk(dir).build());
        assertTrue(countSegments(dir) > 0);
        DiskTier again = disk(dir).deleteOnClose(true).build();
        assertTrue(again.recovery().pages() > 0, "pages recovered: " + again.recovery());
        again.close();
        assertTrue(Files.exists(dir), "existed before this tier opened it: emptied, kept");
        assertFalse(Files.exists(dir.resolve(DiskDirectory.SEGMENTS)));
    }

    @Test
    void aForeignDirectoryIsStillRefusedAndUntouched() throws Exception {
        Path dir = Files.createDirectories(root.resolve("home"));
        Path file = Files.writeString(dir.resolve("thesis.tex"), "\\documentclass{article}");
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> disk(dir).deleteOnClose(true).build());
        assertTrue(e.getMessage().contains("is not a Granary disk tier"), e.getMessage());
        assertEquals("\\documentclass{article}", Files.readString(file));
    }
}
