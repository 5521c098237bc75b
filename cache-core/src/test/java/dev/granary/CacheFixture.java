// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.HeapTier;
import dev.granary.testkit.LeakCheck;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * A cache over real files: a {@link Dataset} in a directory, a {@link PosixOrigin} over it wrapped in a
 * {@link FaultyOrigin} for counting and fault injection, and a {@link HeapTier}; registered with a
 * {@link LeakCheck} so the test fails if it leaks a lease or memory.
 */
final class CacheFixture {

    final Dataset data;
    final FaultyOrigin origin;
    final HeapTier tier;
    final TieredCache cache;

    private CacheFixture(Dataset data, FaultyOrigin origin, HeapTier tier, TieredCache cache) {
        this.data = data;
        this.origin = origin;
        this.tier = tier;
        this.cache = cache;
    }

    static CacheFixture create(
            Path dir, LeakCheck leaks, long tierCapacity, int pageSize, Consumer<TieredCache.Builder> customize)
            throws Exception {
        Path root = Files.createDirectories(dir.resolve("data"));
        Dataset data = new Dataset(root, 42);
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root));
        HeapTier tier = new HeapTier(tierCapacity);
        TieredCache.Builder builder =
                TieredCache.builder(origin).tier(tier).pageSize(pageSize).leakDetection(LeakDetection.PARANOID);
        customize.accept(builder);
        TieredCache cache = leaks.watch(builder.build());
        leaks.released("heap tier of " + cache, tier::isReleased);
        return new CacheFixture(data, origin, tier, cache);
    }

    static CacheFixture create(Path dir, LeakCheck leaks) throws Exception {
        return create(dir, leaks, 64L << 20, 64 << 10, b -> {});
    }
}
