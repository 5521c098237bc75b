// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.RegionPolicy;
import java.util.List;

/**
 * The default {@link RegionPolicy} of {@link DiskTier}: evicts the segment read least recently, the oldest among
 * equals (so segments never read go first-in, first-out).
 *
 * <p>Recency is kept on the tier's coarse clock, which advances once per new segment: a hit costs one plain store
 * when the segment's stamp is already current, and "least recently" means "in the fewest recent segment
 * generations". Stateless and thread-safe.
 */
public final class SegmentLruPolicy implements RegionPolicy {

    /** Creates the policy. */
    public SegmentLruPolicy() {}

    @Override
    public Region victim(List<? extends Region> candidates) {
        Region victim = candidates.getFirst();
        for (Region candidate : candidates) {
            if (candidate.lastAccess() < victim.lastAccess()
                    || (candidate.lastAccess() == victim.lastAccess() && candidate.id() < victim.id())) {
                victim = candidate;
            }
        }
        return victim;
    }

    @Override
    public String toString() {
        return "SegmentLruPolicy";
    }
}
