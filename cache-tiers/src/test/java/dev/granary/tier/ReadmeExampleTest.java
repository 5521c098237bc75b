// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.granary.CacheStats;
import dev.granary.Lease;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Dataset;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The usage example the README once showed (a memory and a disk tier over POSIX files; whole-object and range reads,
 * stat, stats), compiled and run. The README's examples now live in {@code cache-examples}, tested there.
 */
class ReadmeExampleTest {

    @TempDir
    Path temp;

    @Test
    void theReadmeExampleWorks() throws Exception {
        Dataset data = new Dataset(Files.createDirectories(temp.resolve("data")), 1);
        byte[] jpeg = data.put("train/n01440764/000001.JPEG", 110_000);
        data.put("shards/000003.tar", 1_000_000);
        Path datasetRoot = data.root();
        Path nvme = temp.resolve("nvme-granary");

        // --- the example starts here ---
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(datasetRoot))
                .tier(MemoryTier.builder().capacity(8L << 30).pinned(true).build()) // L1/L2: 8 GiB off-heap
                .tier(DiskTier.builder()
                        .directory(nvme) // L3: local NVMe, kept across runs
                        .capacity(500L << 30)
                        .build())
                .pageSize(1 << 20) // the unit of caching
                .metadataTtl(Duration.ofMinutes(1)) // trust a seen version this long
                .build()) {

            try (Lease lease = cache.read("train/n01440764/000001.JPEG")) { // a whole object
                ByteBuffer bytes = lease.bytes(); // read-only; zero-copy on a hit
                assertEquals(jpeg.length, bytes.remaining());
            }
            try (Lease lease = cache.read("shards/000003.tar", 512, 150_000)) { // a byte range
                assertEquals(150_000, lease.length());
            }
            ObjectInfo info = cache.stat("train/n01440764/000001.JPEG"); // key, size, version
            CacheStats stats = cache.stats(); // an immutable snapshot
            System.out.printf(
                    "%s: %d bytes, hit ratio %.2f, origin reads %d%n",
                    info.key(), info.size(), stats.hitRatio(), stats.origin().reads());
        }
        // --- the example ends here ---
    }
}
