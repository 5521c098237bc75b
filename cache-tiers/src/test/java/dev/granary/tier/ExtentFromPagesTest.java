// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.LoaderSupport;
import dev.granary.ObjectInfo;
import dev.granary.PrestageResult;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Extents ({@link LoaderSupport#readExtent}) served from the cache's pages, over real files and a real disk tier
 * reopened after a prestage: an extent inside one page is a zero-copy view of the mapped page, one spanning pages is
 * one copy, both with the right bytes, counted as leases and as disk hits, and with no origin read; an extent whose
 * pages are not all held is read from the origin as one unit (right bytes, one read); a changed object is never served
 * from the pages of its old version, while a reader pinned to the old version still is.
 */
@Timeout(60)
class ExtentFromPagesTest {

    private static final int PAGE = 16 << 10;
    private static final int SIZE = 7 * PAGE + 1234; // eight pages, the last one short

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Path dir;
    private Dataset dataset;

    @BeforeEach
    void setUp() throws IOException {
        dir = root.resolve("disk");
        dataset = new Dataset(Files.createDirectories(root.resolve("data")), 3);
        dataset.put("shards/a.tar", SIZE);
        dataset.put("shards/b.tar", SIZE);
    }

    private TieredCache cache(FaultyOrigin origin) {
        MemoryTier memory = MemoryTier.builder().capacity(4L << 20).build();
        DiskTier disk = DiskTier.builder()
                .directory(dir)
                .capacity(8L << 20)
                .segmentSize(256 << 10)
                .build();
        TieredCache cache = TieredCache.builder(origin)
                .tier(memory)
                .tier(disk)
                .pageSize(PAGE)
                .metadataTtl(Duration.ZERO)
                .leakDetection(LeakDetection.PARANOID)
                .build();
        leaks.released("disk tier " + dir, disk::isReleased);
        leaks.released("memory tier", memory::isReleased);
        return leaks.watch(cache);
    }

    private void prestage(String prefix) throws IOException {
        try (TieredCache cache = cache(new FaultyOrigin(PosixOrigin.of(dataset.root())))) {
            PrestageResult r = cache.prestage(prefix, p -> {});
            assertTrue(r.complete(), r.toString());
        }
    }

    @Test
    void aReopenedStagedDiskTierServesExtentsOfAnyShapeWithoutTheOrigin() throws Exception {
        prestage("shards/");
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(dataset.root()));
        try (TieredCache cache = cache(origin)) {
            LoaderSupport support = cache.loaderSupport();
            ObjectInfo a = cache.stat("shards/a.tar");
            long diskHits = cache.stats().tiers().get(1).hits();

            // Inside page 2: a view of the mapped page, not a copy.
            try (Lease lease = support.readExtent(a, 2 * PAGE + 100, 5000)) {
                assertTrue(lease.bytes().isDirect(), "zero-copy: a view of the disk tier's mapping");
                Bytes.assertSame(dataset.range("shards/a.tar", 2 * PAGE + 100, 5000), lease.bytes(), "in one page");
                assertEquals(1, cache.stats().openLeases(), "the lease is counted while open");
            }
            assertEquals(0, cache.stats().openLeases());
            assertEquals(diskHits + 1, cache.stats().tiers().get(1).hits(), "one page hit on disk");

            // Across pages 1..5, the last page (short), the whole object, and an 8-page-aligned "part" of it.
            long[][] ranges = {
                {PAGE - 10, 4 * PAGE + 20},
                {7 * PAGE, 1234},
                {6 * PAGE + 5, PAGE + 1229},
                {0, SIZE},
                {0, 4 * PAGE},
                {4 * PAGE, SIZE - 4 * PAGE}
            };
            for (long[] r : ranges) {
                try (Lease lease = support.readExtent(a, r[0], (int) r[1])) {
                    Bytes.assertSame(
                            dataset.range("shards/a.tar", r[0], (int) r[1]),
                            lease.bytes(),
                            "[" + r[0] + ", +" + r[1] + ")");
                    assertEquals(1, cache.stats().openLeases());
                }
            }
            // The current-version path, and the uncached one, find the pages too.
            try (Lease lease = support.readExtent("shards/b.tar", 3 * PAGE - 7, 2 * PAGE)) {
                Bytes.assertSame(dataset.range("shards/b.tar", 3 * PAGE - 7, 2 * PAGE), lease.bytes(), "by key");
            }
            try (Lease lease = support.readExtentUncached(cache.stat("shards/b.tar"), 10, 100)) {
                Bytes.assertSame(dataset.range("shards/b.tar", 10, 100), lease.bytes(), "uncached");
            }
            assertEquals(0, origin.reads(), "every extent from the staged pages");
            assertEquals(0, cache.stats().origin().reads());
            assertEquals(0, cache.stats().openLeases());
        }
    }

    @Test
    void anExtentWithAPageMissingIsReadFromTheOriginAsOneUnit() throws Exception {
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(dataset.root()));
        try (TieredCache cache = cache(origin)) {
            // Pages 0 and 1 cached by a range read; pages 2.. are not.
            cache.read("shards/a.tar", 0, 2 * PAGE).close();
            int before = origin.reads();
            ObjectInfo a = cache.stat("shards/a.tar");
            try (Lease lease = cache.loaderSupport().readExtent(a, PAGE + 3, 2 * PAGE)) {
                Bytes.assertSame(dataset.range("shards/a.tar", PAGE + 3, 2 * PAGE), lease.bytes(), "partly held");
            }
            assertEquals(before + 1, origin.reads(), "one origin read: the extent as one unit");
            try (Lease lease = cache.loaderSupport().readExtent(a, PAGE + 3, 2 * PAGE)) {
                Bytes.assertSame(dataset.range("shards/a.tar", PAGE + 3, 2 * PAGE), lease.bytes(), "cached unit");
            }
            assertEquals(before + 1, origin.reads(), "the unit itself is cached now");
            // Inside page 1, which is held: no origin read.
            try (Lease lease = cache.loaderSupport().readExtent(a, PAGE + 100, 200)) {
                Bytes.assertSame(dataset.range("shards/a.tar", PAGE + 100, 200), lease.bytes(), "page 1");
            }
            assertEquals(before + 1, origin.reads());
        }
    }

    @Test
    void aChangedObjectIsNotServedFromItsOldPages() throws Exception {
        prestage("shards/");
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(dataset.root()));
        try (TieredCache cache = cache(origin)) {
            ObjectInfo old = cache.stat("shards/a.tar");
            byte[] before = dataset.range("shards/a.tar", 0, SIZE);
            dataset.put("shards/a.tar", SIZE); // new bytes, same size: a new version (mtime, inode)
            byte[] after = dataset.range("shards/a.tar", 0, SIZE);
            ObjectInfo changed = cache.stat("shards/a.tar");
            assertFalse(changed.version().equals(old.version()), old + " vs " + changed);

            // By key: the current version, whose pages nobody staged.
            try (Lease lease = cache.loaderSupport().readExtent("shards/a.tar", PAGE - 1, 3 * PAGE)) {
                Bytes.assertSame(Arrays.copyOfRange(after, PAGE - 1, 4 * PAGE - 1), lease.bytes(), "new");
            }
            assertEquals(1, origin.reads(), "the new version read from the origin");
            // Pinned to the old version: its staged pages are exactly its bytes.
            try (Lease lease = cache.loaderSupport().readExtent(old, PAGE - 1, 3 * PAGE)) {
                Bytes.assertSame(Arrays.copyOfRange(before, PAGE - 1, 4 * PAGE - 1), lease.bytes(), "old");
            }
            assertEquals(1, origin.reads(), "the old version's pages serve a reader pinned to it");
        }
    }
}
