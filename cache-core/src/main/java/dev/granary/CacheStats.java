// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import java.util.ArrayList;
import java.util.List;

/**
 * An immutable snapshot of a cache's counters, from {@link TieredCache#stats()}. Counters only grow; subtract two
 * snapshots to get the figures of an interval.
 *
 * @param tiers        one entry per tier, in the order the tiers were added
 * @param origin       the traffic to the origin
 * @param openLeases   leases handed out and not yet closed
 * @param leakedLeases leases found garbage collected without being closed (see {@link LeakDetection})
 * @param staleServes  reads served from the last known version because the origin could not be reached to
 *                     revalidate it (stale-if-error)
 */
public record CacheStats(
        List<TierStats> tiers, OriginStats origin, long openLeases, long leakedLeases, long staleServes) {

    /** Copies the tier list. */
    public CacheStats {
        tiers = List.copyOf(tiers);
    }

    /**
     * The fraction of page lookups served by some tier rather than the origin: the sum of all tiers' hits over the
     * lookups made in the first tier (every lookup starts there).
     *
     * @return a value in [0, 1]; 0 when there are no tiers or no lookups
     */
    public double hitRatio() {
        if (tiers.isEmpty()) {
            return 0.0;
        }
        long lookups = tiers.getFirst().hits() + tiers.getFirst().misses();
        if (lookups == 0) {
            return 0.0;
        }
        long hits = 0;
        for (TierStats tier : tiers) {
            hits += tier.hits();
        }
        return Math.min(1.0, (double) hits / lookups);
    }

    /**
     * {@return the counters accumulated since an earlier snapshot of the same cache} Gauges (used bytes, capacity,
     * open leases, origin reads in flight) are taken from this snapshot.
     *
     * @param earlier a snapshot taken before this one, with the same tiers
     * @throws IllegalArgumentException if the tiers differ
     */
    public CacheStats minus(CacheStats earlier) {
        if (earlier.tiers.size() != tiers.size()) {
            throw new IllegalArgumentException("earlier snapshot has " + earlier.tiers.size() + " tiers (expected: "
                    + tiers.size() + ", the same cache)");
        }
        List<TierStats> delta = new ArrayList<>(tiers.size());
        for (int i = 0; i < tiers.size(); i++) {
            TierStats now = tiers.get(i);
            TierStats then = earlier.tiers.get(i);
            delta.add(new TierStats(
                    now.name(),
                    now.hits() - then.hits(),
                    now.misses() - then.misses(),
                    now.hitBytes() - then.hitBytes(),
                    now.evictions() - then.evictions(),
                    now.usedBytes(),
                    now.capacityBytes(),
                    now.rejections() - then.rejections(),
                    now.failures() - then.failures(),
                    now.corruptions() - then.corruptions()));
        }
        OriginStats o = origin;
        OriginStats p = earlier.origin;
        return new CacheStats(
                delta,
                new OriginStats(
                        o.reads() - p.reads(),
                        o.bytes() - p.bytes(),
                        o.metadataRequests() - p.metadataRequests(),
                        o.errors() - p.errors(),
                        o.retries() - p.retries(),
                        o.inFlight()),
                openLeases,
                leakedLeases - earlier.leakedLeases,
                staleServes - earlier.staleServes);
    }
}
