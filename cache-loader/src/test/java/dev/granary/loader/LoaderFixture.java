// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.LeakDetection;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Origin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/** A cache over a directory of real files, for the loader's tests. */
final class LoaderFixture {

    private LoaderFixture() {}

    static TieredCache cache(LeakCheck leaks, Origin origin, long memoryBytes) {
        MemoryTier memory =
                MemoryTier.builder().capacity(memoryBytes).slabSize(1 << 20).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        return leaks.watch(TieredCache.builder(origin)
                .tier(memory)
                .pageSize(64 << 10)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }

    static TieredCache cache(LeakCheck leaks, Path root) {
        return cache(leaks, PosixOrigin.of(root), 16L << 20);
    }

    /** A decoder that keeps a copy of the sample's bytes with its key. */
    record Item(String key, int index, byte[] bytes) {}

    static Item copy(Sample sample) {
        ByteBuffer b = sample.bytes();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return new Item(sample.key(), sample.index(), bytes);
    }
}
