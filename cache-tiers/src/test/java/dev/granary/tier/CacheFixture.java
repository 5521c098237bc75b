// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.LeakDetection;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.LeakCheck;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;

/**
 * A cache over real files: a {@link Dataset} in a directory, a {@link PosixOrigin} over it wrapped in a
 * {@link FaultyOrigin} for counting and fault injection, and a {@link MemoryTier}; registered with a
 * {@link LeakCheck} so the test fails if it leaks a lease or memory.
 */
final class CacheFixture {

    final Dataset data;
    final FaultyOrigin origin;
    final MemoryTier memory;
    final TieredCache cache;

    private CacheFixture(Dataset data, FaultyOrigin origin, MemoryTier memory, TieredCache cache) {
        this.data = data;
        this.origin = origin;
        this.memory = memory;
        this.cache = cache;
    }

    static CacheFixture create(
            Path dir, LeakCheck leaks, long memoryCapacity, int pageSize, Consumer<TieredCache.Builder> customize)
            throws Exception {
        Path root = Files.createDirectories(dir.resolve("data"));
        Dataset data = new Dataset(root, 42);
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root));
        MemoryTier memory = MemoryTier.builder().capacity(memoryCapacity).build();
        TieredCache.Builder builder =
                TieredCache.builder(origin).tier(memory).pageSize(pageSize).leakDetection(LeakDetection.PARANOID);
        customize.accept(builder);
        TieredCache cache = leaks.watch(builder.build());
        leaks.released("memory tier of " + cache, memory::isReleased);
        return new CacheFixture(data, origin, memory, cache);
    }

    static CacheFixture create(Path dir, LeakCheck leaks) throws Exception {
        return create(dir, leaks, 64L << 20, 64 << 10, b -> {});
    }
}
