// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.Tier;
import dev.granary.testkit.TierContractTest;
import org.junit.jupiter.api.Nested;

/** {@link MemoryTier} against the tier contract, with one slab and with slabs so small that pages fill them. */
class MemoryTierContractTest extends TierContractTest {

    @Override
    protected Tier createTier(long capacity) {
        return MemoryTier.builder().capacity(capacity).build();
    }

    @Override
    protected boolean isReleased(Tier tier) {
        return ((MemoryTier) tier).isReleased();
    }

    /** 64 KiB slabs: the largest test page fills a slab, runs never cross slabs, fragmentation is the norm. */
    @Nested
    class TinySlabs extends TierContractTest {

        @Override
        protected Tier createTier(long capacity) {
            return MemoryTier.builder().capacity(capacity).slabSize(64 << 10).build();
        }

        @Override
        protected boolean isReleased(Tier tier) {
            return ((MemoryTier) tier).isReleased();
        }
    }
}
