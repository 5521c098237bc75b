// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.Tiering;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Memory over disk, inclusive and exclusive: where pages live after fills, evictions and hits below. */
class TieringTest {

    private static final int PAGE = 64 << 10;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Path data;
    private Dataset dataset;
    private MemoryTier memory;
    private DiskTier disk;

    @BeforeEach
    void setUp() throws IOException {
        data = Files.createDirectories(root.resolve("data"));
        dataset = new Dataset(data, 8);
        for (int i = 0; i < 24; i++) {
            dataset.put("o" + i, 100_000 + i * 1000); // 2 pages each: 48 pages, ~2.5 MB
        }
        // Memory holds about a third of the data, the disk all of it.
        memory = MemoryTier.builder().capacity(1L << 20).slabSize(256 << 10).build();
        disk = DiskTier.builder()
                .directory(root.resolve("disk"))
                .capacity(16L << 20)
                .segmentSize(1L << 20)
                .build();
    }

    private TieredCache cache(Tiering tiering) {
        TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(memory)
                .tier(disk)
                .pageSize(PAGE)
                .tiering(tiering)
                .leakDetection(LeakDetection.PARANOID)
                .build();
        leaks.released("memory tier", memory::isReleased);
        leaks.released("disk tier", disk::isReleased);
        return leaks.watch(cache);
    }

    private void readAll(TieredCache cache) throws IOException {
        for (Map.Entry<String, byte[]> e : dataset.objects().entrySet()) {
            try (Lease lease = cache.read(e.getKey())) {
                Bytes.assertSame(e.getValue(), lease.bytes(), e.getKey());
            }
        }
    }

    private List<PageKey> pageKeys(TieredCache cache) throws IOException {
        List<PageKey> keys = new ArrayList<>();
        for (String key : dataset.objects().keySet()) {
            ObjectInfo info = cache.stat(key);
            for (long offset = 0; offset < info.size(); offset += PAGE) {
                keys.add(new PageKey(data.toUri().toString(), key, info.version(), offset, (int)
                        Math.min(PAGE, info.size() - offset)));
            }
        }
        return keys;
    }

    private static boolean holds(Tier tier, PageKey key) {
        Page page = tier.peek(key);
        if (page != null) {
            page.release();
        }
        return page != null;
    }

    @Test
    void inclusiveIsTheDefaultAndTheDiskKeepsEveryPage() throws Exception {
        TieredCache cache = leaks.watch(TieredCache.builder(PosixOrigin.of(data))
                .tier(memory)
                .tier(disk)
                .pageSize(PAGE)
                .build());
        readAll(cache);
        List<PageKey> keys = pageKeys(cache);
        assertTrue(keys.stream().allMatch(k -> holds(disk, k)), "every page is on disk");
        assertTrue(
                memory.pageCount() > 0 && memory.pageCount() < keys.size(),
                "memory holds a part: " + memory.pageCount());
        long reads = cache.stats().origin().reads();
        readAll(cache);
        assertEquals(reads, cache.stats().origin().reads(), "second pass from memory and disk only");
        assertTrue(cache.stats().tiers().get(1).hits() > 0, "disk hits: " + cache.stats());
    }

    @Test
    void exclusiveKeepsEachPageInOneTierAndDemotesWhatMemoryEvicts() throws Exception {
        TieredCache cache = cache(Tiering.EXCLUSIVE);
        readAll(cache);
        List<PageKey> keys = pageKeys(cache);
        assertEquals(keys.size(), cache.stats().origin().reads());
        assertTrue(memory.pageCount() > 0 && disk.pageCount() > 0, "both tiers hold pages");
        for (PageKey key : keys) {
            assertTrue(holds(memory, key) ^ holds(disk, key), "exactly one tier holds " + key);
        }
        assertEquals(keys.size(), memory.pageCount() + disk.pageCount(), "nothing lost between the tiers");
        readAll(cache); // pages move up from disk, memory evicts others down to it
        assertEquals(keys.size(), cache.stats().origin().reads(), "the second pass reads nothing from the origin");
        assertTrue(cache.stats().tiers().get(1).hits() > 0, "disk hits moved pages up: " + cache.stats());
        for (PageKey key : keys) {
            assertTrue(holds(memory, key) ^ holds(disk, key), "after moves, exactly one tier holds " + key);
        }
    }

    @Test
    void tieringIsValidated() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> TieredCache.builder(PosixOrigin.of(data)).tiering(null));
        assertTrue(
                e.getMessage().contains("tiering: null (expected: Tiering.INCLUSIVE or Tiering.EXCLUSIVE)"),
                e.getMessage());
        memory.close();
        disk.close();
        assertNotNull(e);
    }
}
