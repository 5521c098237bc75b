// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

/**
 * A dry run of one tier: a copy of what the tier holds and of the bookkeeping its admission and eviction decide by
 * (free room, per-page overhead, stamps, the dead pages of the current {@link Workload}), which it can be asked what a
 * read would find and what a fill would do — without any bytes, and without touching the tier it was copied from.
 * Obtained from {@link Tier#simulation()}; a loader's dry run ({@code DataLoader.plan}) feeds it the page keys its
 * epochs will read.
 *
 * <p>A simulation answers for reads under a driven workload ({@link Workload#driven()}, a loader inside an epoch),
 * which is what a loader's dry run needs; while undriven, a tier whose own policy would evict to make room (W-TinyLFU,
 * segment LRU) is not modelled and refuses the fill instead.
 *
 * <p>Not thread-safe: one caller at a time. It keeps no reference that would stop the tier from closing.
 */
public interface TierSimulation {

    /**
     * Asks whether the tier would serve this page now, as {@link Tier#get(PageKey)} would, and records the read as a
     * hit records it (the stamp that keeps the page live under the epoch rule).
     *
     * @param key the page's identity
     * @return whether the page is held
     */
    boolean get(PageKey key);

    /**
     * Offers a fill of this page, as the cache offers a page it read from the origin ({@link Tier#allocate} then
     * {@link Tier#put}), and records it if the tier would keep it — taking room from free space or from dead pages
     * exactly as the tier does, including its per-page overhead (allocation granularity, record headers).
     *
     * @param key the page's identity
     * @return whether the tier would hold the page afterwards
     */
    boolean put(PageKey key);

    /**
     * Tells the simulation what the cache would tell the tier: {@link Tier.Eviction#workload(Workload)}.
     *
     * @param workload the new state, never null
     */
    void workload(Workload workload);
}
