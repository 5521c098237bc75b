// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's tiers: {@link dev.granary.tier.MemoryTier}, off-heap pages in FFM slabs, with its default eviction policy
 * {@link dev.granary.tier.WindowTinyLfuPolicy} (W-TinyLFU); and {@link dev.granary.tier.DiskTier},
 * persistent memory-mapped segment files, with its default {@link dev.granary.tier.SegmentLruPolicy}.
 */
module dev.granary.tiers {
    requires transitive dev.granary.core;
    requires com.github.benmanes.caffeine;
    requires java.management; // DirectSlabs reads the JVM's direct-memory use and limit

    exports dev.granary.tier;
}
