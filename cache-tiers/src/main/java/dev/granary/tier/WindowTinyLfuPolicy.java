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

/**
 * Caffeine's W-TinyLFU, weighted by bytes, as an {@link EvictionPolicy}: a small LRU window admits new pages, a
 * count-min sketch of access frequencies decides whether a page leaving the window may displace the main region's
 * victim, and the main region is a segmented LRU. It resists scans and keeps frequently read pages; under
 * epoch-shuffled training it is far better than LRU but still well below the hit-ratio ceiling, which is what a
 * loader-driven policy is for.
 *
 * <p>The tier keeps its own index; this policy keeps a Caffeine cache of page keys to weights only for the order.
 * Caffeine runs its maintenance on the calling thread ({@code executor(Runnable::run)}), so evictions happen within
 * {@link #recordInsert} and reach the tier's evictor synchronously.
 *
 * <p>Thread-safe, as Caffeine is.
 */
public final class WindowTinyLfuPolicy implements EvictionPolicy {

    private final Cache<PageKey, Long> order;
    private final Policy.Eviction<PageKey, Long> eviction;
    private final Evictor evictor;

    /**
     * Creates the policy for one tier; usable as an {@link EvictionPolicy.Factory}: {@code WindowTinyLfuPolicy::new}.
     *
     * @param capacity the tier's capacity in bytes
     * @param evictor  the tier's eviction callback
     * @throws IllegalArgumentException if the capacity is not positive or the evictor is null
     */
    public WindowTinyLfuPolicy(long capacity, Evictor evictor) {
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
        order.getIfPresent(key);
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

    @Override
    public String toString() {
        return "WindowTinyLfuPolicy[weighted=" + eviction.weightedSize().orElse(0) + "/" + eviction.getMaximum() + "]";
    }
}
