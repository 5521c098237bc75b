// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Tier;
import dev.granary.testkit.HeapTier;
import dev.granary.testkit.TierContractTest;

/** The test kit's {@link HeapTier} against the tier contract: the tier the facade's tests run on. */
class HeapTierContractTest extends TierContractTest {

    @Override
    protected Tier createTier(long capacity) {
        return new HeapTier(capacity);
    }

    @Override
    protected boolean isReleased(Tier tier) {
        return ((HeapTier) tier).isReleased();
    }
}
