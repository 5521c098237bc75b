// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheStats;
import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.TierStats;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.RegionPolicy.Region;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** {@link DiskTier} with real files: persistence, damage, versions, locking, permissions, format, a failing disk. */
class DiskTierTest {

    private static final int PAGE = 16 << 10;
    private static final long SEGMENT = 128 << 10;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Path data;
    private Path dir;
    private Dataset dataset;

    @BeforeEach
    void setUp() throws IOException {
        data = Files.createDirectories(root.resolve("data"));
        dir = root.resolve("disk");
        dataset = new Dataset(data, 7);
        SplittableRandom random = new SplittableRandom(3);
        for (int i = 0; i < 40; i++) {
            dataset.put("train/" + i + ".bin", 1 + random.nextInt(70_000));
        }
    }

    private DiskTier.Builder disk() {
        return DiskTier.builder().directory(dir).capacity(4L << 20).segmentSize(SEGMENT);
    }

    /** A cache with only the disk tier, so every hit is a disk hit. */
    private TieredCache cache(DiskTier disk) {
        TieredCache cache = TieredCache.builder(new FaultyOrigin(PosixOrigin.of(data)))
                .tier(disk)
                .pageSize(PAGE)
                .leakDetection(LeakDetection.PARANOID)
                .build();
        leaks.released("disk tier " + disk, disk::isReleased);
        return leaks.watch(cache);
    }

    private void readAllAndCheck(TieredCache cache) throws IOException {
        for (Map.Entry<String, byte[]> e : dataset.objects().entrySet()) {
            try (Lease lease = cache.read(e.getKey())) {
                Bytes.assertSame(e.getValue(), lease.bytes(), e.getKey());
            }
        }
    }

    private static long pages(Map<String, byte[]> objects) {
        return objects.values().stream()
                .mapToLong(b -> (b.length + PAGE - 1) / PAGE)
                .sum();
    }

    @Test
    void aReopenedTierServesEverythingWithZeroOriginDataReads() throws Exception {
        TieredCache first = cache(disk().build());
        readAllAndCheck(first);
        assertEquals(pages(dataset.objects()), first.stats().origin().reads(), "cold: one origin read per page");
        first.close();

        DiskTier reopened = disk().build();
        assertEquals(
                pages(dataset.objects()), reopened.recovery().pages(), "every page recovered: " + reopened.recovery());
        assertEquals(0, reopened.recovery().damagedTails() + reopened.recovery().damagedSegments());
        TieredCache second = cache(reopened);
        readAllAndCheck(second);
        CacheStats stats = second.stats();
        assertEquals(0, stats.origin().reads(), "warm reopen: no origin data reads: " + stats);
        assertEquals(0, stats.origin().bytes());
        assertEquals(1.0, stats.tiers().getFirst().hitRatio());
        assertEquals(0, stats.tiers().getFirst().corruptions());
    }

    @Test
    void aChangedObjectIsNotServedFromOldPagesAfterReopen() throws Exception {
        TieredCache first = cache(disk().build());
        readAllAndCheck(first);
        first.close();
        byte[] old = dataset.bytes("train/5.bin");
        byte[] changed = old.clone(); // same size: only mtime and inode tell the versions apart
        changed[0] ^= 1;
        changed[changed.length - 1] ^= 1;
        dataset.put("train/5.bin", changed);
        TieredCache second = cache(disk().build());
        try (Lease lease = second.read("train/5.bin")) {
            Bytes.assertSame(changed, lease.bytes(), "the new version");
        }
        assertEquals(
                (changed.length + PAGE - 1) / PAGE,
                second.stats().origin().reads(),
                "the new version is read from the origin, every page of it");
        readAllAndCheck(second);
    }

    @Test
    void damagedBytesAreNeverServedAndAreCounted() throws Exception {
        DiskTier tier = disk().build();
        TieredCache first = cache(tier);
        readAllAndCheck(first);
        // Damage one payload byte of three known pages, then random bytes anywhere in every segment file.
        List<DiskTier.Location> targets = new ArrayList<>();
        for (String key : List.of("train/1.bin", "train/2.bin", "train/3.bin")) {
            PageKey page = tier.keys().stream()
                    .filter(k -> k.key().equals(key) && k.offset() == 0)
                    .findFirst()
                    .orElseThrow();
            targets.add(tier.locate(page));
        }
        first.close();
        SplittableRandom random = new SplittableRandom(99);
        for (DiskTier.Location target : targets) {
            flip(target.file(), target.payloadOffset() + random.nextInt(target.length()));
        }
        List<Path> segmentFiles = segmentFiles();
        for (int i = 0; i < 30; i++) {
            Path file = segmentFiles.get(random.nextInt(segmentFiles.size()));
            flip(file, random.nextLong(Files.size(file)));
        }
        DiskTier reopened = disk().build();
        TieredCache second = cache(reopened);
        readAllAndCheck(second);
        readAllAndCheck(second); // and again, now from what was re-cached
        TierStats stats = second.stats().tiers().getFirst();
        assertTrue(
                stats.corruptions() >= targets.size(),
                "every damaged page read is counted: " + stats + ", " + reopened.recovery());
        assertTrue(second.stats().origin().reads() >= targets.size(), "damaged pages are read again from the origin");
    }

    @Test
    void theNewestSegmentTakesAppendsAgainAfterReopen() throws Exception {
        DiskTier tier = disk().build();
        byte[] bytes = new byte[10_000];
        new SplittableRandom(4).nextBytes(bytes);
        assertTrue(tier.put(sealed(new PageKey("test://", "a", "v", 0, bytes.length), bytes)));
        tier.close();
        assertEquals(1, segmentFiles().size());
        DiskTier reopened = disk().build();
        assertTrue(reopened.put(sealed(new PageKey("test://", "b", "v", 0, bytes.length), bytes)));
        assertEquals(1, segmentFiles().size(), "the partly filled segment is not stranded");
        reopened.close();
        DiskTier again = disk().build();
        try {
            assertEquals(2, again.recovery().pages(), again.recovery().toString());
            for (String key : List.of("a", "b")) {
                Page page = again.get(new PageKey("test://", key, "v", 0, bytes.length));
                assertNotNull(page, key);
                Bytes.assertSame(bytes, page.buffer(), key);
                page.release();
            }
        } finally {
            again.close();
        }
    }

    @Test
    void aRecordLeftBeyondACrashHoleDoesNotReappearAfterAppendsResume() throws Exception {
        // A crash can leave a reserved header slot unwritten (zeros) with a later record written after it: the scan
        // ends at the hole and appends resume there. The later record must not come back after the new ones.
        byte[] bytes = new byte[8192];
        new SplittableRandom(6).nextBytes(bytes);
        PageKey a = new PageKey("test://", "a", "v", 0, 8192);
        PageKey b = new PageKey("test://", "b", "v", 0, 8192);
        PageKey c = new PageKey("test://", "c", "v", 0, 8192);
        DiskTier tier = disk().build();
        for (PageKey key : List.of(a, b, c)) {
            assertTrue(tier.put(sealed(key, bytes)));
        }
        DiskTier.Location hole = tier.locate(b);
        tier.close();
        try (FileChannel channel = FileChannel.open(hole.file(), StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.allocate(SegmentFormat.RECORD_FIXED), hole.headerOffset());
        }
        DiskTier reopened = disk().build();
        assertEquals(1, reopened.recovery().pages(), "the scan ends at the hole: " + reopened.recovery());
        // d's header has b's length, so the next scan reaches c's header; d's payload covers b's and c's.
        byte[] big = new byte[16384];
        new SplittableRandom(7).nextBytes(big);
        PageKey d = new PageKey("test://", "d", "v", 0, big.length);
        assertTrue(reopened.put(sealed(d, big)));
        assertEquals(hole.headerOffset(), reopened.locate(d).headerOffset(), "appended where the hole was");
        reopened.close();
        DiskTier again = disk().build();
        try {
            assertEquals(2, again.recovery().pages(), "a and d, not c: " + again.recovery());
            assertNull(again.get(c));
            Page page = again.get(d);
            assertNotNull(page);
            Bytes.assertSame(big, page.buffer(), "d");
            page.release();
            assertEquals(0, again.stats().corruptions());
        } finally {
            again.close();
        }
    }

    @Test
    void aDamagedRecordHeaderEndsTheScanOfItsSegmentThere() throws Exception {
        DiskTier tier = disk().build();
        TieredCache first = cache(tier);
        readAllAndCheck(first);
        PageKey victim = tier.keys().stream()
                .filter(k -> k.key().equals("train/7.bin"))
                .findFirst()
                .orElseThrow();
        DiskTier.Location location = tier.locate(victim);
        long pagesBefore = tier.pageCount();
        first.close();
        // One byte of the object key inside the record header: "train/7.bin" would read as another name.
        int originLength = victim.origin().getBytes(StandardCharsets.UTF_8).length;
        flip(location.file(), location.headerOffset() + SegmentFormat.RECORD_FIXED + originLength + 2);
        DiskTier reopened = disk().build();
        assertEquals(1, reopened.recovery().damagedTails(), reopened.recovery().toString());
        assertTrue(
                reopened.recovery().pages() < pagesBefore,
                "the damaged record and those after it in its segment" + " are dropped: " + reopened.recovery());
        assertTrue(
                reopened.keys().stream().allMatch(k -> dataset.objects().containsKey(k.key())),
                "no page is recovered under a damaged name");
        TieredCache second = cache(reopened);
        readAllAndCheck(second);
        assertEquals(1, second.stats().tiers().getFirst().corruptions());
    }

    @Test
    void aDamagedSegmentHeaderDropsTheSegmentNotTheDirectory() throws Exception {
        TieredCache first = cache(disk().build());
        readAllAndCheck(first);
        first.close();
        Path victim = segmentFiles().getFirst();
        flip(victim, 3); // in the segment magic
        DiskTier reopened = disk().build();
        assertEquals(
                1, reopened.recovery().damagedSegments(), reopened.recovery().toString());
        assertFalse(Files.exists(victim), "a segment with a damaged header is deleted");
        TieredCache second = cache(reopened);
        readAllAndCheck(second);
        assertEquals(1, second.stats().tiers().getFirst().corruptions());
    }

    @Test
    void aSecondTierOnTheSameDirectoryIsRefusedNamingTheHolder() throws Exception {
        DiskTier holder = disk().build();
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> disk().build());
            assertTrue(
                    e.getMessage().contains("in use by another DiskTier in this process")
                            && e.getMessage()
                                    .contains("pid " + ProcessHandle.current().pid()),
                    e.getMessage());
        } finally {
            holder.close();
        }
        disk().build().close(); // once closed, the directory opens again
    }

    @Test
    void aSecondProcessOnTheSameDirectoryIsRefusedNamingTheHolder() throws Exception {
        DiskTier holder = disk().build();
        try {
            ChildJvm.Result child = ChildJvm.run(OpenDirectoryMain.class, dir.toString());
            assertEquals(3, child.exitCode(), "the child must fail to open: " + child.output());
            assertTrue(
                    child.output()
                            .contains("in use by another process: pid "
                                    + ProcessHandle.current().pid()),
                    child.output());
        } finally {
            holder.close();
        }
        ChildJvm.Result child = ChildJvm.run(OpenDirectoryMain.class, dir.toString());
        assertEquals(0, child.exitCode(), "after close another process opens it: " + child.output());
    }

    @Test
    void filesArePrivateAndNamedBySegmentNumberOnly() throws Exception {
        TieredCache cache = cache(disk().build());
        readAllAndCheck(cache);
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
        assertEquals(
                "rwx------",
                PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(DiskDirectory.SEGMENTS))));
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                assertEquals(
                        "rw-------",
                        PosixFilePermissions.toString(Files.getPosixFilePermissions(file)),
                        file.toString());
                String name = file.getFileName().toString();
                assertTrue(name.matches("seg-[0-9a-f]{16}\\.dat|FORMAT|granary\\.lock"), name);
            }
        }
    }

    @Test
    void anExistingDirectoryIsTightenedTo0700() throws Exception {
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
        disk().build().close();
        assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)));
    }

    @Test
    void aDirectoryWithOtherDataIsRefused() throws Exception {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("notes.txt"), "mine");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> disk().build());
        assertTrue(
                e.getMessage().contains("notes.txt") && e.getMessage().contains("not a Granary disk tier"),
                e.getMessage());
        assertEquals("mine", Files.readString(dir.resolve("notes.txt")), "nothing of the user's is touched");
    }

    @Test
    void aFileWhereTheDirectoryShouldBeIsRefused() throws Exception {
        Files.writeString(dir, "a file");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> disk().build());
        assertTrue(e.getMessage().contains("is not a directory"), e.getMessage());
    }

    @Test
    void aNewerFormatIsRefusedAndLeftAlone() throws Exception {
        disk().build().close();
        Files.writeString(dir.resolve(DiskDirectory.FORMAT_FILE), "granary-disk-tier\nformat 99\n");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> disk().build());
        assertTrue(
                e.getMessage().contains("written by a newer Granary (format 99; this one reads format 1 to 2)"),
                e.getMessage());
        assertEquals("granary-disk-tier\nformat 99\n", Files.readString(dir.resolve(DiskDirectory.FORMAT_FILE)));
        Files.writeString(dir.resolve(DiskDirectory.FORMAT_FILE), "granary-disk-tier\nformat 2\n");
        disk().build().close(); // would throw if the refused open had kept the lock
    }

    @Test
    void anOlderFormatIsDiscardedAndRewritten() throws Exception {
        TieredCache first = cache(disk().build());
        readAllAndCheck(first);
        first.close();
        Files.writeString(dir.resolve(DiskDirectory.FORMAT_FILE), "granary-disk-tier\nformat 0\n");
        DiskTier reopened = disk().build();
        assertEquals(0, reopened.recovery().pages(), "segments of an older format are discarded");
        assertEquals(
                "granary-disk-tier\nformat 2\ncapacity " + reopened.stats().capacityBytes() + "\n",
                Files.readString(dir.resolve(DiskDirectory.FORMAT_FILE)));
        TieredCache second = cache(reopened);
        readAllAndCheck(second);
    }

    @Test
    void anUnreadableFormatFileIsRefused() throws Exception {
        disk().build().close();
        Files.writeString(dir.resolve(DiskDirectory.FORMAT_FILE), "garbage");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> disk().build());
        assertTrue(e.getMessage().contains("FORMAT is unreadable"), e.getMessage());
    }

    @Test
    void leftoversOfAnInterruptedSegmentCreationAreRemoved() throws Exception {
        disk().build().close();
        Path leftover = dir.resolve(DiskDirectory.SEGMENTS).resolve(DiskDirectory.fileName(7) + ".tmp");
        Files.write(leftover, new byte[100]);
        disk().build().close();
        assertFalse(Files.exists(leftover));
    }

    @Test
    void bytesOnDiskNeverExceedTheCapacityAndWholeSegmentsAreEvicted() throws Exception {
        long capacity = 4 * SEGMENT;
        DiskTier tier = DiskTier.builder()
                .directory(dir)
                .capacity(capacity)
                .segmentSize(SEGMENT)
                .build();
        TieredCache cache = cache(tier);
        for (int round = 0; round < 3; round++) {
            for (Map.Entry<String, byte[]> e : dataset.objects().entrySet()) {
                try (Lease lease = cache.read(e.getKey())) {
                    Bytes.assertSame(e.getValue(), lease.bytes(), e.getKey());
                }
                TierStats stats = tier.stats();
                assertTrue(stats.usedBytes() <= capacity, stats.toString());
                assertTrue(directoryBytes() <= capacity, "segment files on disk: " + directoryBytes());
            }
        }
        assertTrue(tier.stats().evictions() > 0, tier.stats().toString());
        assertTrue(segmentFiles().size() <= 4);
    }

    @Test
    void aPageHeldByAReaderOutlivesItsSegmentsEviction() throws Exception {
        long capacity = 2 * SEGMENT;
        DiskTier tier = DiskTier.builder()
                .directory(dir)
                .capacity(capacity)
                .segmentSize(SEGMENT)
                .build();
        byte[] bytes = new byte[50_000];
        new SplittableRandom(1).nextBytes(bytes);
        PageKey key = new PageKey("test://", "held", "v1", 0, bytes.length);
        assertTrue(tier.put(sealed(key, bytes)));
        Page held = tier.get(key);
        assertNotNull(held);
        Path heldFile = tier.locate(key).file();
        for (int i = 0; i < 20; i++) {
            tier.put(sealed(new PageKey("test://", "churn-" + i, "v1", 0, bytes.length), new byte[bytes.length]));
            assertTrue(tier.stats().usedBytes() <= capacity, tier.stats().toString());
        }
        assertNull(tier.get(key), "evicted");
        // Unlinked at eviction, so no later open of the directory can recover or resume it; the mapping keeps
        // the bytes for the reader, and they stay counted against capacity until the reader lets go.
        assertFalse(Files.exists(heldFile), "an evicted segment's file is unlinked at once");
        Bytes.assertSame(bytes, held.buffer(), "a held page after its segment was evicted");
        long usedWhileHeld = tier.stats().usedBytes();
        assertTrue(usedWhileHeld <= capacity, tier.stats().toString());
        held.release();
        assertEquals(
                usedWhileHeld - SEGMENT,
                tier.stats().usedBytes(),
                "released: the evicted segment's blocks are no longer counted");
        assertTrue(tier.put(sealed(new PageKey("test://", "after", "v1", 0, 100), new byte[100])));
        tier.close();
        assertTrue(tier.isReleased());
    }

    @Test
    void aSmallerCapacityOnReopenEvictsTheOldestSegments() throws Exception {
        TieredCache first = cache(disk().build());
        readAllAndCheck(first);
        first.close();
        int before = segmentFiles().size();
        assertTrue(before > 3, "the fill must leave more than 3 segments: " + before);
        DiskTier smaller = DiskTier.builder()
                .directory(dir)
                .capacity(3 * SEGMENT)
                .segmentSize(SEGMENT)
                .build();
        assertEquals(3, segmentFiles().size());
        assertTrue(smaller.stats().usedBytes() <= 3 * SEGMENT);
        TieredCache second = cache(smaller);
        readAllAndCheck(second);
    }

    @Test
    void tinySegmentsHoldObjectsSpreadOverManySegments() throws Exception {
        dataset.put("big.bin", 300_000);
        DiskTier tier = DiskTier.builder()
                .directory(dir)
                .capacity(8L << 20)
                .segmentSize(16 << 10)
                .build();
        TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(tier)
                .pageSize(4096)
                .build();
        leaks.watch(cache);
        byte[] big = dataset.bytes("big.bin");
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < 300; i++) {
            int offset = random.nextInt(big.length);
            int length = random.nextInt(Math.min(40_000, big.length - offset) + 1);
            try (Lease lease = cache.read("big.bin", offset, length)) {
                Bytes.assertSame(
                        dataset.range("big.bin", offset, length), lease.bytes(), "range " + offset + "+" + length);
            }
        }
        assertTrue(segmentFiles().size() > 20, "pages of one object spread over many segments");
        cache.close();
        DiskTier reopened = DiskTier.builder()
                .directory(dir)
                .capacity(8L << 20)
                .segmentSize(16 << 10)
                .build();
        TieredCache again = TieredCache.builder(PosixOrigin.of(data))
                .tier(reopened)
                .pageSize(4096)
                .build();
        leaks.watch(again);
        ByteBuffer all = ByteBuffer.allocate(big.length);
        again.readInto("big.bin", 0, all);
        Bytes.assertSame(big, all.flip(), "the whole object after reopen");
    }

    @Test
    void aFullDiskStopsAdmissionAndReadsKeepWorking() throws Exception {
        AtomicInteger allowed = new AtomicInteger(2);
        DiskTier tier = disk().retryAfter(Duration.ZERO)
                .files((file, size) -> {
                    if (allowed.getAndDecrement() <= 0) {
                        throw new IOException(
                                file + ": cannot allocate " + size + " bytes: No space left on device (ENOSPC)");
                    }
                    NativeFiles.allocate(file, size);
                })
                .build();
        TieredCache cache = cache(tier);
        readAllAndCheck(cache);
        readAllAndCheck(cache);
        TierStats stats = tier.stats();
        assertTrue(stats.failures() > 0, stats.toString());
        assertTrue(stats.rejections() > 0, stats.toString());
        assertTrue(
                tier.failure().orElseThrow().contains("No space left on device"),
                tier.failure().toString());
        assertEquals(2, segmentFiles().size(), "no segment beyond the ones the disk had room for");
        try (Stream<Path> files = Files.list(dir.resolve(DiskDirectory.SEGMENTS))) {
            assertTrue(files.noneMatch(f -> f.toString().endsWith(".tmp")), "failed creations leave nothing");
        }
        // The disk has room again: with a zero pause the next fill tries, succeeds, and the failure clears.
        allowed.set(1000);
        readAllAndCheck(cache);
        assertTrue(tier.failure().isEmpty(), tier.failure().toString());
        assertTrue(segmentFiles().size() > 2);
    }

    @Test
    void aRealFullFilesystemStopsAdmissionAndReadsKeepWorking() throws Exception {
        Path mount = Files.createDirectories(root.resolve("tiny-fs"));
        Assumptions.assumeTrue(
                TinyFilesystem.mount(mount, 512 << 10),
                "needs root to mount a 512 KiB tmpfs; the fault-injecting test above covers the logic");
        try {
            dir = mount.resolve("disk");
            DiskTier tier = DiskTier.builder()
                    .directory(dir)
                    .capacity(4L << 20)
                    .segmentSize(SEGMENT)
                    .build();
            TieredCache cache = cache(tier);
            readAllAndCheck(cache);
            readAllAndCheck(cache);
            assertTrue(tier.stats().failures() > 0, "a 512 KiB filesystem cannot take 4 MiB: " + tier.stats());
            assertTrue(
                    tier.failure().orElseThrow().contains("No space left on device"),
                    tier.failure().toString());
            assertTrue(tier.stats().hits() > 0, "pages that fit are served: " + tier.stats());
            cache.close();
            DiskTier reopened = DiskTier.builder()
                    .directory(dir)
                    .capacity(4L << 20)
                    .segmentSize(SEGMENT)
                    .build();
            TieredCache again = cache(reopened);
            readAllAndCheck(again);
            again.close();
        } finally {
            TinyFilesystem.unmount(mount);
        }
    }

    @Test
    void builderValidatesEveryArgument() {
        assertMessage(
                IllegalArgumentException.class,
                () -> DiskTier.builder().directory(null),
                "disk tier directory: null (expected: a path");
        assertMessage(
                IllegalArgumentException.class,
                () -> DiskTier.builder().capacity(0),
                "disk tier capacity: 0 bytes (expected: at least 32 KiB, two segments of the smallest size 16 KiB)");
        assertMessage(
                IllegalArgumentException.class,
                () -> DiskTier.builder().capacity(32767),
                "disk tier capacity: 32767 bytes (expected: at least 32 KiB");
        assertMessage(
                IllegalArgumentException.class,
                () -> DiskTier.builder().segmentSize(10_000),
                "segment size: 10000 bytes (expected: a multiple of 4 KiB, 16 KiB..1 GiB)");
        assertMessage(
                IllegalArgumentException.class,
                () -> DiskTier.builder().segmentSize(20_000),
                "segment size: 20000 bytes");
        assertMessage(IllegalArgumentException.class, () -> DiskTier.builder().policy(null), "region policy: null");
        assertMessage(IllegalArgumentException.class, () -> DiskTier.builder().name(" "), "tier name: ' '");
        assertMessage(
                IllegalArgumentException.class,
                () -> DiskTier.builder().retryAfter(Duration.ofSeconds(-1)),
                "retry pause: PT-1S (expected: a duration >= 0)");
        assertMessage(
                IllegalStateException.class,
                () -> DiskTier.builder().capacity(1 << 30).build(),
                "disk tier directory not set");
        assertMessage(
                IllegalStateException.class,
                () -> DiskTier.builder().directory(dir).build(),
                "disk tier capacity not set");
        assertMessage(
                IllegalArgumentException.class,
                () -> DiskTier.builder()
                        .directory(dir)
                        .capacity(100L << 20)
                        .segmentSize(64L << 20)
                        .build(),
                "disk tier capacity: 104857600 bytes (expected: at least two"
                        + " segments, 128 MiB with segmentSize 64 MiB)");
        assertFalse(Files.exists(dir), "a refused build creates nothing");
    }

    @Test
    void withoutASegmentSizeOneIsChosenFromTheCapacity() throws Exception {
        assertEquals(64L << 20, DiskTier.Builder.defaultSegmentSize(500L << 30));
        assertEquals(64L << 20, DiskTier.Builder.defaultSegmentSize(512L << 20));
        assertEquals(32L << 20, DiskTier.Builder.defaultSegmentSize((512L << 20) - 1));
        assertEquals(2L << 20, DiskTier.Builder.defaultSegmentSize(16L << 20));
        assertEquals(16L << 10, DiskTier.Builder.defaultSegmentSize(128L << 10));
        assertEquals(16L << 10, DiskTier.Builder.defaultSegmentSize(32L << 10));
        for (long capacity = 32L << 10; capacity < (1L << 40); capacity = capacity * 3 / 2 + 1) {
            long size = DiskTier.Builder.defaultSegmentSize(capacity);
            assertTrue(
                    size % 4096 == 0
                            && Long.bitCount(size) == 1
                            && size >= 16 << 10
                            && size <= 64L << 20
                            && capacity >= 2 * size
                            && (capacity >= 8 * size || size == 16 << 10),
                    capacity + " -> " + size);
        }
        // The probe's case: 16 MiB and no segment size used to be refused (64 MiB segments did not fit twice).
        TieredCache cache =
                cache(DiskTier.builder().directory(dir).capacity(16L << 20).build());
        readAllAndCheck(cache);
        readAllAndCheck(cache);
        TierStats stats = cache.stats().tiers().getFirst();
        assertTrue(stats.hits() > 0 && stats.usedBytes() <= 16L << 20, stats.toString());
        try (Stream<Path> files = Files.list(dir.resolve(DiskDirectory.SEGMENTS))) {
            for (Path file : files.toList()) {
                assertEquals(2L << 20, Files.size(file), file.toString());
            }
        }
    }

    @Test
    void aStrayFileBesideFormatIsRefusedNamingIt() throws Exception {
        disk().build().close();
        Files.writeString(dir.resolve("notes.txt"), "mine");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> disk().build());
        assertTrue(
                e.getMessage().contains("holds a file that is not Granary's: notes.txt (expected: only FORMAT,"),
                e.getMessage());
        Files.delete(dir.resolve("notes.txt"));
        Files.writeString(dir.resolve(DiskDirectory.SEGMENTS).resolve("seg-x.dat"), "mine");
        e = assertThrows(IllegalArgumentException.class, () -> disk().build());
        assertTrue(e.getMessage().contains("holds a file that is not Granary's: seg-x.dat"), e.getMessage());
        assertEquals(
                "mine", Files.readString(dir.resolve(DiskDirectory.SEGMENTS).resolve("seg-x.dat")));
        Files.delete(dir.resolve(DiskDirectory.SEGMENTS).resolve("seg-x.dat"));
        // Granary's own leftovers of a process that died are no stray files
        Files.writeString(dir.resolve(DiskDirectory.FORMAT_FILE + ".tmp"), "granary-disk-tier\n");
        Files.writeString(dir.resolve(DiskDirectory.SEGMENTS).resolve(DiskDirectory.fileName(9) + ".tmp"), "");
        disk().build().close();
        assertFalse(Files.exists(dir.resolve(DiskDirectory.SEGMENTS).resolve(DiskDirectory.fileName(9) + ".tmp")));
    }

    @Test
    void aPolicyThatChoosesSomethingElseIsReported() throws Exception {
        DiskTier tier = disk().capacity(2 * SEGMENT)
                .policy(candidates -> new Region() {
                    @Override
                    public long id() {
                        return -1;
                    }

                    @Override
                    public long lastAccess() {
                        return 0;
                    }

                    @Override
                    public int pages() {
                        return 0;
                    }

                    @Override
                    public void forEachPage(Consumer<PageKey> action) {}
                })
                .build();
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
                for (int i = 0; i < 10; i++) {
                    tier.put(sealed(new PageKey("test://", "k" + i, "v", 0, 60_000), new byte[60_000]));
                }
            });
            assertTrue(e.getMessage().contains("(expected: one of the candidates it was given)"), e.getMessage());
        } finally {
            tier.close();
        }
    }

    private static void assertMessage(Class<? extends Throwable> type, Executable call, String expected) {
        Throwable e = assertThrows(type, call);
        assertTrue(e.getMessage().contains(expected), "message '" + e.getMessage() + "' lacks '" + expected + "'");
    }

    private static Page sealed(PageKey key, byte[] bytes) {
        Page page = new Page(key, MemorySegment.ofArray(bytes.clone())) {
            @Override
            protected void deallocate() {}
        };
        page.seal();
        return page;
    }

    private List<Path> segmentFiles() throws IOException {
        try (Stream<Path> files = Files.list(dir.resolve(DiskDirectory.SEGMENTS))) {
            return files.filter(f -> f.getFileName().toString().endsWith(".dat"))
                    .sorted()
                    .toList();
        }
    }

    private long directoryBytes() throws IOException {
        long sum = 0;
        for (Path file : segmentFiles()) {
            sum += Files.size(file);
        }
        return sum;
    }

    static void flip(Path file, long position) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            channel.read(one, position);
            one.put(0, (byte) (one.get(0) ^ 0x5A)).rewind();
            channel.write(one, position);
        }
    }
}
