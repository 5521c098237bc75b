// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.HeapTier;
import dev.granary.testkit.LeakCheck;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The facade's small defects an outside user found by trying it, each pinned down. */
class TieredCacheFacadeTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    @Test
    void aCacheWithoutATierIsRefusedSayingWhatToAdd() throws Exception {
        PosixOrigin origin = PosixOrigin.of(temp);
        IllegalStateException e = assertThrows(
                IllegalStateException.class, () -> TieredCache.builder(origin).build());
        assertTrue(
                e.getMessage().contains("has no tier (expected: at least one tier, e.g. .tier(MemoryTier"),
                e.getMessage());
        origin.close();
    }

    @Test
    void invalidateRefusesTheKeysReadRefuses() throws Exception {
        Dataset data = new Dataset(Files.createDirectories(temp.resolve("data")), 4);
        data.put("dir/a", 100);
        try (TieredCache cache = leaks.watch(TieredCache.builder(PosixOrigin.of(data.root()))
                .tier(new HeapTier(1 << 20))
                .build())) {
            for (String key : List.of("dir/", "dir//a", "./dir/a", "dir/./a")) {
                IllegalArgumentException read = assertThrows(IllegalArgumentException.class, () -> cache.read(key));
                IllegalArgumentException invalidate =
                        assertThrows(IllegalArgumentException.class, () -> cache.invalidate(key), key);
                assertTrue(read.getMessage().startsWith("key: '" + key + "'"), read.getMessage());
                assertTrue(invalidate.getMessage().startsWith("key: '" + key + "'"), invalidate.getMessage());
            }
            cache.invalidate("dir/a"); // a good key is accepted
        }
    }

    @Test
    void loaderControlsLiveBehindOneView() throws Exception {
        Dataset data = new Dataset(Files.createDirectories(temp.resolve("data")), 3);
        byte[] bytes = data.put("shard.tar", 50_000);
        try (TieredCache cache = leaks.watch(TieredCache.builder(PosixOrigin.of(data.root()))
                .tier(new HeapTier(1 << 20))
                .leakDetection(LeakDetection.PARANOID)
                .build())) {
            ObjectInfo info = cache.stat("shard.tar");
            try (Lease a = cache.loaderSupport().readExtent("shard.tar", 1_000, 2_000);
                    Lease b = cache.loaderSupport().readExtent(info, 1_000, 2_000);
                    Lease c = cache.loaderSupport().readExtentUncached(info, 10_000, 5_000)) {
                Bytes.assertSame(Arrays.copyOfRange(bytes, 1_000, 3_000), a.bytes(), "extent");
                Bytes.assertSame(Arrays.copyOfRange(bytes, 1_000, 3_000), b.bytes(), "pinned extent");
                Bytes.assertSame(Arrays.copyOfRange(bytes, 10_000, 15_000), c.bytes(), "uncached");
            }
            assertEquals(2, cache.stats().origin().reads(), "the pinned extent was the cached one: a hit");
            try (EpochDriver driver = cache.loaderSupport().driver()) {
                driver.startEpoch();
                assertTrue(driver.inEpoch());
                IllegalStateException twice = assertThrows(IllegalStateException.class, driver::startEpoch);
                assertTrue(twice.getMessage().contains("already started"), twice.getMessage());
                driver.endEpoch();
            }
        }
    }
}
