// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Policy;
import com.github.benmanes.caffeine.cache.RemovalCause;
import dev.granary.spi.EvictionPolicy;
import dev.granary.spi.PageKey;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Caffeine's W-TinyLFU, weighted by bytes, as an {@link EvictionPolicy}: a small LRU window admits new pages, a
 * count-min sketch of access frequencies decides whether a page leaving the window may displace the main region's
 * victim, and the main region is a segmented LRU. It resists scans and keeps frequently read pages; under
 * epoch-shuffled training it is far better than LRU but still well below the hit-ratio ceiling, which is what a
 * loader-driven policy is for.
 *
 * <p>{@link MemoryTier} runs this policy inside its index when built with a {@link #sampling(int)} factory (its
 * default), over slot ids instead of keys (decision 0011); this class is the same policy for anyone else, and what a
 * tier given {@code WindowTinyLfuPolicy::new} uses.
 *
 * <p>The tier keeps its own index; this policy keeps a Caffeine cache of page keys to weights only for the order.
 * Hits are recorded one in {@value #DEFAULT_SAMPLING} by default ({@link #sampling(int)}): a record is a lookup in
 * Caffeine's table, as costly as the tier's own lookup, and sampled frequencies rank pages the same way.
 * Caffeine runs its maintenance on the calling thread ({@code executor(Runnable::run)}), so evictions happen within
 * {@link #recordInsert} and reach the tier's evictor synchronously.
 *
 * <p>Thread-safe, as Caffeine is.
 */
public final class WindowTinyLfuPolicy implements EvictionPolicy {

    private final Cache<PageKey, Long> order;
    private final Policy.Eviction<PageKey, Long> eviction;
    private final Evictor evictor;
    private final int sampleMask;

    /** The default: one hit in {@value #DEFAULT_SAMPLING} is recorded. */
    public static final int DEFAULT_SAMPLING = 8;

    /**
     * Creates the policy for one tier, recording one hit in {@value #DEFAULT_SAMPLING}; usable as an
     * {@link EvictionPolicy.Factory}: {@code WindowTinyLfuPolicy::new}.
     *
     * @param capacity the tier's capacity in bytes
     * @param evictor  the tier's eviction callback
     * @throws IllegalArgumentException if the capacity is not positive or the evictor is null
     */
    public WindowTinyLfuPolicy(long capacity, Evictor evictor) {
        this(capacity, evictor, DEFAULT_SAMPLING);
    }

    /**
     * Returns a factory for policies that record one hit in {@code oneIn}. Recording every hit ({@code 1}) is the
     * most faithful W-TinyLFU and the slowest hit: each record is a lookup in a second hash table. Sampling keeps
     * frequencies proportional (Caffeine's own read buffer drops records too); see
     * docs/decisions/0002-memory-tier-hit-path.md for the hit ratios and hit costs measured.
     *
     * @param oneIn record one hit in this many: a power of two in {@code [1, 1024]}
     * @return a policy factory
     * @throws IllegalArgumentException if {@code oneIn} is not a power of two in range
     */
    public static EvictionPolicy.Factory sampling(int oneIn) {
        checkSampling(oneIn);
        return new SlotIndexed(oneIn);
    }

    /**
     * The factory {@link #sampling(int)} returns. A {@link MemoryTier} recognises it and runs the same policy inside
     * its index, over slot ids ({@code SlotPolicy}: no object and no key per page); anyone else calling
     * {@link #create} gets this Caffeine-backed policy.
     */
    record SlotIndexed(int oneIn) implements EvictionPolicy.Factory {
        @Override
        public EvictionPolicy create(long capacity, Evictor evictor) {
            return new WindowTinyLfuPolicy(capacity, evictor, oneIn);
        }
    }

    private WindowTinyLfuPolicy(long capacity, Evictor evictor, int oneIn) {
        checkSampling(oneIn);
        this.sampleMask = oneIn - 1;
        if (capacity <= 0) {
            throw new IllegalArgumentException("policy capacity: " + capacity + " bytes (expected: > 0)");
        }
        if (evictor == null) {
            throw new IllegalArgumentException("evictor: null (expected: the tier's eviction callback)");
        }
        this.evictor = evictor;
        this.order = Caffeine.newBuilder()
                .maximumWeight(capacity)
                .weigher((PageKey key, Long weight) -> (int) Math.min(weight, Integer.MAX_VALUE))
                .executor(Runnable::run)
                .evictionListener((PageKey key, Long weight, RemovalCause cause) -> {
                    if (key != null && cause.wasEvicted()) {
                        evictor.evict(key);
                    }
                })
                .build();
        this.eviction = order.policy().eviction().orElseThrow();
    }

    @Override
    public void recordAccess(PageKey key) {
        if ((ThreadLocalRandom.current().nextInt() & sampleMask) == 0) {
            var _ = order.getIfPresent(key); // for its effect: Caffeine records the access in its sketch
        }
    }

    @Override
    public void recordInsert(PageKey key, long weight) {
        order.put(key, weight);
    }

    @Override
    public void recordRemoval(PageKey key) {
        order.invalidate(key);
    }

    @Override
    public long evict(long bytes) {
        long evicted = 0;
        while (evicted < bytes) {
            long wanted = bytes - evicted;
            List<Map.Entry<PageKey, Long>> victims = eviction.coldest(stream -> {
                List<Map.Entry<PageKey, Long>> taken = new ArrayList<>();
                long sum = 0;
                for (var it = stream.iterator(); it.hasNext() && sum < wanted; ) {
                    var entry = it.next();
                    taken.add(Map.entry(entry.getKey(), entry.getValue()));
                    sum += entry.getValue();
                }
                return taken;
            });
            if (victims.isEmpty()) {
                break;
            }
            long round = 0;
            for (Map.Entry<PageKey, Long> victim : victims) {
                if (order.asMap().remove(victim.getKey(), victim.getValue())) {
                    evictor.evict(victim.getKey());
                    round += victim.getValue();
                }
            }
            if (round == 0) {
                break; // every victim was removed concurrently; let the caller retry
            }
            evicted += round;
        }
        return evicted;
    }

    private static void checkSampling(int oneIn) {
        if (oneIn < 1 || oneIn > 1024 || Integer.bitCount(oneIn) != 1) {
            throw new IllegalArgumentException(
                    "access sampling: one in " + oneIn + " (expected: a power of two in [1, 1024])");
        }
    }

    @Override
    public String toString() {
        return "WindowTinyLfuPolicy[weighted=" + eviction.weightedSize().orElse(0) + "/" + eviction.getMaximum() + "]";
    }
}
