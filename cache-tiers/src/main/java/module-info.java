/**
 * Granary's tiers: {@link dev.granary.tier.MemoryTier}, off-heap pages in FFM slabs, and the default eviction policy,
 * {@link dev.granary.tier.WindowTinyLfuPolicy} (Caffeine's W-TinyLFU).
 */
module dev.granary.tiers {
    requires transitive dev.granary.core;
    requires com.github.benmanes.caffeine;

    exports dev.granary.tier;
}
