// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.Tier;
import dev.granary.testkit.TierContractTest;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.io.TempDir;

/** {@link DiskTier} against the tier contract, with small segments and with segments so tiny pages barely fit. */
class DiskTierContractTest extends TierContractTest {

    @TempDir
    Path root;

    private final AtomicInteger directories = new AtomicInteger();

    @Override
    protected Tier createTier(long capacity) {
        return DiskTier.builder()
                .directory(root.resolve("d" + directories.incrementAndGet()))
                .capacity(capacity)
                .segmentSize(128 << 10)
                .build();
    }

    @Override
    protected boolean isReleased(Tier tier) {
        return ((DiskTier) tier).isReleased();
    }

    /** 72 KiB segments: one 64 KiB page per segment, most pages leave a remainder nothing else fits in. */
    @Nested
    class TinySegments extends TierContractTest {

        @TempDir
        Path root;

        @Override
        protected Tier createTier(long capacity) {
            return DiskTier.builder()
                    .directory(root.resolve("d" + directories.incrementAndGet()))
                    .capacity(capacity)
                    .segmentSize(72 << 10)
                    .build();
        }

        @Override
        protected boolean isReleased(Tier tier) {
            return ((DiskTier) tier).isReleased();
        }
    }
}
