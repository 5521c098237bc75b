// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * What indexing reads is cached: indexing again, even in a new cache over the same disk directory, reads nothing from
 * the origin — neither the index files nor the parts of shards scanned for lack of one.
 */
class WebDatasetIndexCacheTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private TieredCache cache(Path data, Path disk) {
        MemoryTier memory = MemoryTier.builder().capacity(4L << 20).build();
        DiskTier diskTier = DiskTier.builder()
                .directory(disk)
                .capacity(64L << 20)
                .segmentSize(1L << 20)
                .build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        // the disk tier's unmapping is checked by cache-tiers' own tests; leases are checked by leaks.watch
        return leaks.watch(TieredCache.builder(PosixOrigin.of(data))
                .tier(memory)
                .tier(diskTier)
                .build());
    }

    @Test
    void reindexingAfterARestartIsServedByTheDiskTier() throws IOException {
        Path data = Files.createDirectories(root.resolve("data/shards"));
        for (int s = 0; s < 2; s++) {
            TarWriter tar = new TarWriter();
            for (int i = 0; i < 40; i++) {
                tar.add(String.format("k%d/%03d.jpg", s, i), new byte[6000 + i]);
                tar.add(String.format("k%d/%03d.cls", s, i), new byte[] {(byte) i});
            }
            Files.write(data.resolve(s + ".tar"), tar.finish());
        }
        // Shard 1 gets an index file; shard 0 is scanned.
        try (ShardWriter writer =
                ShardWriter.builder(data).pattern("indexed-%d.tar").build()) {
            for (int i = 0; i < 40; i++) {
                writer.write(String.format("i/%03d", i), Map.of("jpg", new byte[5000 + i]));
            }
        }
        List<String> shards = List.of("shards/0.tar", "shards/1.tar", "shards/indexed-0.tar");
        List<String> firstKeys;
        long firstReads;
        try (TieredCache cache = cache(root.resolve("data"), root.resolve("disk"))) {
            WebDataset dataset = WebDataset.of(cache, shards);
            firstReads = cache.stats().origin().reads();
            assertEquals(3, firstReads, "one part per scanned shard (each under 8 MiB), one index file");
            assertTrue(dataset.indexedFromFile(2));
            firstKeys =
                    IntStream.range(0, dataset.size()).mapToObj(dataset::key).toList();
        }
        try (TieredCache cache = cache(root.resolve("data"), root.resolve("disk"))) {
            WebDataset dataset = WebDataset.of(cache, shards);
            assertEquals(0, cache.stats().origin().reads(), "parts and index from the disk tier: " + cache.stats());
            assertEquals(
                    firstKeys,
                    IntStream.range(0, dataset.size()).mapToObj(dataset::key).toList());
            assertTrue(
                    cache.stats().tiers().get(1).hits() >= firstReads,
                    cache.stats().toString());
        }
    }
}
