// SPDX-License-Identifier: Apache-2.0
package dev.granary;

/**
 * How a {@link TieredCache}'s tiers share pages: set with {@link TieredCache.Builder#tiering(Tiering)}.
 */
public enum Tiering {

    /**
     * The default. A page filled from the origin is offered to every tier, and a page found in a lower tier is copied
     * into the tiers above it while the lower tier keeps it. Memory holds the hot pages, the disk holds everything it
     * can, and what memory evicts is still on disk: the right choice when the disk is much larger than memory (the
     * usual case: NVMe of hundreds of GiB under RAM of tens), and a reopened disk tier still has every page.
     */
    INCLUSIVE,

    /**
     * Every page is kept by at most one tier. A fill goes to the first tier that takes it; a page found in a lower
     * tier moves up (it is dropped below once the tier above took it); a page a tier evicts is demoted into the tiers
     * below it, on the evicting thread. The combined capacity is the sum of the tiers' rather than the largest one's:
     * worth it when the lower tier is not much larger than the upper one. Demotion costs a copy per eviction.
     */
    EXCLUSIVE
}
