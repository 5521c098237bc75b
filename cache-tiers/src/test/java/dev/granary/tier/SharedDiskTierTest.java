// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.Lease;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.testkit.Await;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.Gate;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A disk-tier directory shared by several tiers ({@link DiskTier.Builder#shared}): here tiers in one process, which
 * coordinate exactly as processes do (every lock belongs to a tier's own descriptor). The child-JVM tests are
 * {@link SharedDirectoryProcessTest}.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SharedDiskTierTest {

    private static final String ORIGIN = "test://shared";

    @TempDir
    Path root;

    private DiskTier.Builder shared(Path dir, long capacity) {
        return DiskTier.builder()
                .directory(dir)
                .capacity(capacity)
                .segmentSize(64 << 10)
                .shared(true);
    }

    static Page page(PageKey key, byte[] bytes) {
        Page page = new Page(key, MemorySegment.ofArray(bytes)) {
            @Override
            protected void deallocate() {}
        };
        page.seal();
        return page;
    }

    static byte[] bytes(PageKey key) {
        byte[] b = new byte[key.length()];
        long seed = key.key().hashCode() * 31L + key.offset();
        for (int i = 0; i < b.length; i++) {
            seed = seed * 6364136223846793005L + 1442695040888963407L;
            b[i] = (byte) (seed >>> 56);
        }
        return b;
    }

    static PageKey key(String object, int index, int length) {
        return new PageKey(ORIGIN, object, "v1", (long) index * length, length);
    }

    private static void put(DiskTier tier, PageKey key) {
        Page page = page(key, bytes(key));
        try {
            assertTrue(tier.put(page), "put " + key + " into " + tier);
        } finally {
            page.release();
        }
    }

    private static void assertServes(DiskTier tier, PageKey key) {
        Page page = tier.get(key);
        assertNotNull(page, tier + " must serve " + key);
        try {
            Bytes.assertSame(bytes(key), page.buffer(), key.toString());
        } finally {
            page.release();
        }
    }

    @Test
    void aPageOneTierWritesIsServedByTheOtherAtItsNextMiss() throws Exception {
        Path dir = root.resolve("disk");
        try (DiskTier a = shared(dir, 4 << 20).build();
                DiskTier b = shared(dir, 4 << 20).build()) {
            for (int i = 0; i < 40; i++) {
                PageKey key = key("object-" + (i % 5), i, 3000 + i);
                assertNull(b.get(key), "not written yet");
                put(i % 2 == 0 ? a : b, key);
                assertServes(a, key);
                assertServes(b, key);
            }
            assertTrue(a.shared() && b.shared());
        }
        // and a third process, later, finds them all
        try (DiskTier c = shared(dir, 4 << 20).build()) {
            assertEquals(40, c.recovery().pages());
            for (int i = 0; i < 40; i++) {
                assertServes(c, key("object-" + (i % 5), i, 3000 + i));
            }
        }
    }

    /**
     * Processes that open a fresh shared directory at once: one has made its lock and shared files (or is writing
     * FORMAT) when another looks at the directory. Seen in {@code SharedDirectoryProcessTest}: the second was refused
     * with "holds other files (such as granary.shared) and is not a Granary disk tier". Each moment of the first
     * opener's, frozen: the second opens, and the directory then works for both.
     */
    @Test
    void aDirectoryAnotherProcessIsOpeningRightNowIsGranarysNotForeign() throws Exception {
        String[][] moments = {
            {SharedDirectory.FILE},
            {DirectoryLock.FILE, SharedDirectory.FILE},
            {DirectoryLock.FILE, SharedDirectory.FILE, DiskDirectory.FORMAT_FILE + ".tmp"}
        };
        for (String[] present : moments) {
            Path dir = root.resolve("disk-" + present.length);
            Files.createDirectories(dir);
            for (String name : present) {
                Files.createFile(dir.resolve(name));
            }
            try (DiskTier tier = shared(dir, 1 << 20).build()) {
                put(tier, key("x", 0, 100));
                assertServes(tier, key("x", 0, 100));
            }
            try (DiskTier again = shared(dir, 1 << 20).build()) {
                assertServes(again, key("x", 0, 100));
            }
        }
        Path foreign = root.resolve("foreign");
        Files.createDirectories(foreign);
        Files.createFile(foreign.resolve(SharedDirectory.FILE));
        Files.createFile(foreign.resolve("notes.txt"));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> shared(foreign, 1 << 20).build());
        assertTrue(
                e.getMessage().contains("notes.txt") && e.getMessage().contains("not a Granary disk tier"),
                e.getMessage());
    }

    @Test
    void anUnsharedTierIsRefusedWhileSharedOnesHoldTheDirectoryAndTheOtherWayRound() throws Exception {
        Path dir = root.resolve("disk");
        try (DiskTier a = shared(dir, 1 << 20).build()) {
            IllegalStateException e = assertThrows(
                    IllegalStateException.class,
                    () -> DiskTier.builder().directory(dir).capacity(1 << 20).build());
            assertTrue(
                    e.getMessage().contains("in use by another DiskTier in this process (1 shared)"), e.getMessage());
            put(a, key("x", 0, 100));
        }
        try (DiskTier alone =
                DiskTier.builder().directory(dir).capacity(1 << 20).build()) {
            assertServes(alone, key("x", 0, 100)); // a shared directory opens unshared once no one shares it
            IllegalStateException e = assertThrows(
                    IllegalStateException.class, () -> shared(dir, 1 << 20).build());
            assertTrue(e.getMessage().contains("in use by another DiskTier in this process (unshared"), e.getMessage());
        }
    }

    @Test
    void theCapacityBoundsTheWholeDirectoryWhoeverWrites() throws Exception {
        Path dir = root.resolve("disk");
        long capacity = 8 * (64 << 10);
        try (DiskTier a = shared(dir, capacity).build();
                DiskTier b = shared(dir, capacity).build()) {
            for (int i = 0; i < 300; i++) {
                PageKey key = key("big-" + i, 0, 20_000);
                Page page = page(key, bytes(key));
                try {
                    (i % 2 == 0 ? a : b).put(page);
                } finally {
                    page.release();
                }
                long onDisk = segmentBytes(dir);
                assertTrue(onDisk <= capacity, "after put " + i + ": " + onDisk + " bytes of segments > " + capacity);
            }
            assertTrue(a.stats().evictions() + b.stats().evictions() > 0, "the test must make the tiers evict");
            assertTrue(a.stats().usedBytes() <= capacity && b.stats().usedBytes() <= capacity);
            // every page either tier serves is right
            for (int i = 0; i < 300; i++) {
                PageKey key = key("big-" + i, 0, 20_000);
                for (DiskTier tier : List.of(a, b)) {
                    Page page = tier.get(key);
                    if (page != null) {
                        try {
                            Bytes.assertSame(bytes(key), page.buffer(), key + " from " + tier);
                        } finally {
                            page.release();
                        }
                    }
                }
            }
        }
    }

    @Test
    void aSegmentFileWhoseCreatorDiedIsDeletedBeforeItCanPushTheDirectoryOverItsCapacity() throws Exception {
        Path dir = root.resolve("disk");
        long segment = 64 << 10;
        long capacity = 8 * segment;
        try (DiskTier a = shared(dir, capacity).build();
                DiskTier b = shared(dir, capacity).build()) {
            put(a, key("first", 0, 20_000));
            // What a process killed inside createSegment leaves (it held the directory lock, which its death
            // released): a full-size file under the temporary name, which no live tier counts.
            Path leftover = dir.resolve(DiskDirectory.SEGMENTS).resolve(DiskDirectory.fileName(0x7fff) + ".tmp");
            try (var file = new java.io.RandomAccessFile(leftover.toFile(), "rw")) {
                file.setLength(segment);
            }
            for (int i = 0; i < 60; i++) {
                PageKey key = key("big-" + i, 0, 20_000);
                put(i % 2 == 0 ? a : b, key);
                long onDisk = segmentBytes(dir);
                assertTrue(
                        onDisk <= capacity,
                        "after put " + i + ": " + onDisk + " bytes in the segment directory > " + capacity);
            }
            assertFalse(Files.exists(leftover), "the dead creator's file must be gone: " + leftover);
            assertTrue(a.stats().evictions() + b.stats().evictions() > 0, "the test must make the tiers evict");
            for (int i = 50; i < 60; i++) { // the latest pages are served, byte for byte
                PageKey key = key("big-" + i, 0, 20_000);
                assertServes(i % 2 == 0 ? a : b, key);
            }
        }
    }

    @Test
    void aLeaseOfASegmentAnotherTierEvictedKeepsItsBytes() throws Exception {
        Path dir = root.resolve("disk");
        long capacity = 4 * (64 << 10);
        try (DiskTier a = shared(dir, capacity).build();
                DiskTier b = shared(dir, capacity).build()) {
            PageKey first = key("first", 0, 30_000);
            put(a, first);
            put(a, key("first", 1, 30_000));
            put(a, key("first", 2, 30_000)); // a moves on to a second segment: the first takes no more appends
            Page held = b.get(first);
            assertNotNull(held);
            // b writes until a's first segment is evicted
            for (int i = 0; i < 40 && Files.exists(dir.resolve("segments").resolve(DiskDirectory.fileName(0))); i++) {
                put(b, key("filler-" + i, 0, 30_000));
            }
            assertFalse(
                    Files.exists(dir.resolve("segments").resolve(DiskDirectory.fileName(0))),
                    "the first segment must have been evicted");
            Bytes.assertSame(bytes(first), held.buffer(), "a lease outlives the eviction of its segment");
            held.release();
            assertNull(a.get(first), "an evicted page is a miss in every tier");
            assertNull(b.get(first), "an evicted page is a miss in every tier");
        }
    }

    @Test
    void twoCachesMissingOnePageAtOnceReadTheOriginOnce() throws Exception {
        Path data = Files.createDirectories(root.resolve("data"));
        Dataset dataset = new Dataset(data, 7);
        dataset.put("sample", 200_000);
        Path dir = root.resolve("disk");
        Gate gate = new Gate();
        FaultyOrigin first = new FaultyOrigin(PosixOrigin.of(data)).holdReads(gate);
        FaultyOrigin second = new FaultyOrigin(PosixOrigin.of(data));
        try (TieredCache a = TieredCache.builder(first)
                        .tier(shared(dir, 8 << 20).segmentSize(1 << 20).build())
                        .pageSize(64 << 10)
                        .build();
                TieredCache b = TieredCache.builder(second)
                        .tier(shared(dir, 8 << 20).segmentSize(1 << 20).build())
                        .pageSize(64 << 10)
                        .build()) {
            CompletableFuture<byte[]> readA = CompletableFuture.supplyAsync(() -> read(a, "sample"));
            // a's fills hold the claims of the object's four pages (they wait at the gate, inside the origin read)
            Await.until(() -> gate.waiting() == 4, () -> "a's four fills at the gate");
            CompletableFuture<byte[]> readB = CompletableFuture.supplyAsync(() -> read(b, "sample"));
            gate.open();
            Bytes.assertSame(dataset.bytes("sample"), readA.get(60, TimeUnit.SECONDS), "a");
            Bytes.assertSame(dataset.bytes("sample"), readB.get(60, TimeUnit.SECONDS), "b");
            assertEquals(4, first.reads(), "a read every page");
            assertEquals(0, second.reads(), "b waited for a's pages instead of reading the origin");
        }
    }

    @Test
    void aFillWhoseClaimantGivesUpReadsThePageItself() throws Exception {
        Path data = Files.createDirectories(root.resolve("data"));
        Dataset dataset = new Dataset(data, 8);
        dataset.put("sample", 50_000);
        Path dir = root.resolve("disk");
        try (DiskTier claimant = shared(dir, 8 << 20).build();
                TieredCache b = TieredCache.builder(PosixOrigin.of(data))
                        .tier(shared(dir, 8 << 20)
                                .segmentSize(1 << 20)
                                .fillWait(Duration.ofMillis(200))
                                .build())
                        .pageSize(64 << 10)
                        .build()) {
            ObjectInfoHolder info = new ObjectInfoHolder(b.stat("sample"));
            PageKey key = new PageKey(b.originUri().toString(), "sample", info.version, 0, 50_000);
            assertNull(claimant.awaitFill(key, System.nanoTime() + 1_000_000_000L), "claimed");
            // b waits 200 ms for the claimant, which never fills, then reads the origin itself
            Bytes.assertSame(dataset.bytes("sample"), read(b, "sample"), "b");
            claimant.fillDone(key);
        }
    }

    private record ObjectInfoHolder(String version) {
        ObjectInfoHolder(ObjectInfo info) {
            this(info.version());
        }
    }

    private static byte[] read(TieredCache cache, String key) {
        try (Lease lease = cache.read(key)) {
            return Bytes.toArray(lease.bytes());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void aFormat1DirectoryIsUpgradedInPlaceAndKeepsItsPages() throws Exception {
        // Written by Granary before shared directories (format 1): 6 objects of two pages each.
        Path dir = copyFixture("format1-directory");
        assertEquals("granary-disk-tier\nformat 1\n", Files.readString(dir.resolve("FORMAT")));
        try (DiskTier tier = shared(dir, 1 << 20).segmentSize(16 << 10).build()) {
            assertEquals(
                    "granary-disk-tier\nformat 2\ncapacity 1048576\n",
                    Files.readString(dir.resolve("FORMAT")),
                    "upgraded, with the capacity it was opened with");
            assertEquals(12, tier.recovery().pages(), tier.recovery().toString());
            for (int object = 0; object < 6; object++) {
                for (int p = 0; p < 2; p++) {
                    int length = p == 0 ? 2048 : 1000 + 100 * object;
                    PageKey key = new PageKey("test://format1", "objects/" + object, "v" + object, p * 2048L, length);
                    Page page = tier.get(key);
                    assertNotNull(page, key.toString());
                    try {
                        ByteBuffer buffer = page.buffer();
                        for (int i = 0; i < length; i++) {
                            assertEquals((byte) (object * 31 + p * 7 + i * 13), buffer.get(i), key + " byte " + i);
                        }
                    } finally {
                        page.release();
                    }
                }
            }
            assertEquals(0, tier.stats().corruptions());
            put(tier, key("after-upgrade", 0, 4000)); // and new pages go to segments of format 2
        }
        try (DiskTier again = DiskTier.builder()
                .directory(dir)
                .capacity(1 << 20)
                .segmentSize(16 << 10)
                .build()) {
            assertEquals(13, again.recovery().pages());
        }
    }

    private Path copyFixture(String name) throws Exception {
        Path source =
                Path.of(getClass().getResource("/" + name + "/FORMAT").toURI()).getParent();
        Path dir = root.resolve(name);
        Files.createDirectories(dir.resolve("segments"));
        Files.copy(source.resolve("FORMAT"), dir.resolve("FORMAT"));
        try (DirectoryStream<Path> files = Files.newDirectoryStream(source.resolve("segments"))) {
            for (Path file : files) {
                Files.copy(
                        file, dir.resolve("segments").resolve(file.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        return dir;
    }

    @Test
    void aGroupDirectoryIsSetGroupIdAndItsFilesGroupWritable() throws Exception {
        Path dir = root.resolve("disk");
        try (DiskTier tier = shared(dir, 1 << 20).group("tape").build()) {
            put(tier, key("g", 0, 5000));
            assertEquals(
                    "tape",
                    Files.readAttributes(dir, PosixFileAttributes.class).group().getName());
            assertEquals(02770, mode(dir), Integer.toOctalString(mode(dir)));
            assertEquals(02770, mode(dir.resolve("segments")));
            try (DirectoryStream<Path> segments = Files.newDirectoryStream(dir.resolve("segments"))) {
                for (Path file : segments) {
                    assertEquals(0660, mode(file), file + ": " + Integer.toOctalString(mode(file)));
                    assertEquals(
                            "tape",
                            Files.readAttributes(file, PosixFileAttributes.class)
                                    .group()
                                    .getName());
                }
            }
            assertEquals(0660, mode(dir.resolve(SharedDirectory.FILE)));
        }
        // the default stays private to the owner
        Path other = root.resolve("private");
        try (DiskTier tier = shared(other, 1 << 20).build()) {
            put(tier, key("p", 0, 5000));
            assertEquals(PosixFilePermissions.fromString("rwx------"), Files.getPosixFilePermissions(other));
            assertEquals(0600, mode(other.resolve(SharedDirectory.FILE)));
        }
    }

    private static int mode(Path path) throws Exception {
        return (Integer) Files.getAttribute(path, "unix:mode") & 07777;
    }

    @Test
    void badSharingSettingsAreRefusedWithTheirValues() {
        IllegalArgumentException blank = assertThrows(
                IllegalArgumentException.class, () -> DiskTier.builder().group(" "));
        assertTrue(blank.getMessage().startsWith("disk tier group: ' '"), blank.getMessage());
        IllegalArgumentException unknown = assertThrows(
                IllegalArgumentException.class,
                () -> shared(root.resolve("d"), 1 << 20)
                        .group("no-such-group-here")
                        .build());
        assertTrue(unknown.getMessage().contains("'no-such-group-here'"), unknown.getMessage());
        assertFalse(Files.exists(root.resolve("d")), "nothing made for a refused group");
        IllegalStateException scratch = assertThrows(
                IllegalStateException.class,
                () -> shared(root.resolve("d"), 1 << 20).deleteOnClose(true).build());
        assertTrue(scratch.getMessage().contains("shared(true) with deleteOnClose(true)"), scratch.getMessage());
        assertThrows(IllegalArgumentException.class, () -> DiskTier.builder().fillWait(Duration.ofMillis(-1)));
    }

    /** Bytes of segment files in the directory, listed under the directory's own lock (a consistent view). */
    static long segmentBytes(Path dir) throws Exception {
        long total = 0;
        List<Path> files = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir.resolve("segments"))) {
            entries.forEach(files::add);
        }
        for (Path file : files) {
            try {
                total += Files.size(file);
            } catch (NoSuchFileException gone) {
                // evicted meanwhile
            }
        }
        return total;
    }
}
