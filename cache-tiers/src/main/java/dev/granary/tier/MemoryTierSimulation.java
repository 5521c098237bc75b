// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.EvictionPolicy;
import dev.granary.spi.PageKey;
import dev.granary.spi.TierSimulation;
import dev.granary.spi.Workload;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * {@link MemoryTier#simulation()}: the memory tier's driven admission on a copy of its bookkeeping.
 *
 * <p>Room comes from the tier's own allocator, copied without memory ({@link SlabAllocator#phantomCopy()}): the same
 * 512-byte blocks, slab cuts, best fit and coalescing, so a page fits here exactly when it would fit there. The rule
 * on top — admit into free room, else free dead pages (stamped before {@link Workload#keepFrom()}) until the page
 * fits, else refuse; stamp on insert and on every hit — is {@code MemoryTier.allocate}'s driven branch and
 * {@code evictDead}, restated over entries without bytes (a {@code Slot} is a {@code Page} over real memory). The
 * tier's policy is asked {@link EvictionPolicy#admit} as the tier asks it; its record methods are not called, so the
 * real policy's state is not changed. {@code PlanVersusRunTest} holds the two against each other.
 *
 * <p>Not thread-safe, as {@link TierSimulation} allows.
 */
final class MemoryTierSimulation implements TierSimulation {

    /** A page without bytes: where it sits in the allocator and when it was last read. */
    private static final class Entry {
        final PageKey key;
        final long block;
        long stamp;

        Entry(PageKey key, long block, long stamp) {
            this.key = key;
            this.block = block;
            this.stamp = stamp;
        }
    }

    private final SlabAllocator allocator;
    private final EvictionPolicy policy;
    private final Map<PageKey, Entry> index = new LinkedHashMap<>();
    private Workload workload;
    private ArrayDeque<Entry> dead = new ArrayDeque<>();

    MemoryTierSimulation(SlabAllocator allocator, EvictionPolicy policy, Workload workload) {
        this.allocator = allocator;
        this.policy = policy;
        this.workload = workload;
    }

    /** Copies one page the tier holds. */
    void add(PageKey key, long block, long stamp) {
        index.put(key, new Entry(key, block, stamp));
    }

    @Override
    public boolean get(PageKey key) {
        Entry entry = index.get(key);
        if (entry == null) {
            return false;
        }
        entry.stamp = workload.clock();
        return true;
    }

    @Override
    public boolean put(PageKey key) {
        if (index.containsKey(key)) {
            return true;
        }
        int length = key.length();
        if (length > allocator.maxAllocation()) {
            return false;
        }
        long weight = SlabAllocator.footprint(length);
        if (!policy.admit(key, weight)) {
            return false;
        }
        long block = allocator.allocate(length);
        // Driven: room only from dead pages. Undriven, the tier's policy would evict; not modelled (see the SPI).
        while (block < 0 && workload.driven() && evictDead(weight) > 0) {
            block = allocator.allocate(length);
        }
        if (block < 0) {
            return false;
        }
        index.put(key, new Entry(key, block, workload.clock()));
        return true;
    }

    @Override
    public void workload(Workload workload) {
        this.workload = workload;
        ArrayDeque<Entry> found = new ArrayDeque<>();
        if (workload.driven()) {
            for (Entry entry : index.values()) {
                if (workload.isDead(entry.stamp)) {
                    found.add(entry);
                }
            }
        }
        this.dead = found;
    }

    private long evictDead(long bytes) {
        long freed = 0;
        Entry entry;
        while (freed < bytes && (entry = dead.poll()) != null) {
            if (workload.isDead(entry.stamp) && index.remove(entry.key, entry)) {
                allocator.free(entry.block, entry.key.length());
                freed += SlabAllocator.footprint(entry.key.length());
            }
        }
        return freed;
    }

    @Override
    public String toString() {
        return "MemoryTierSimulation[pages=" + index.size() + ", used=" + allocator.used() + ", " + workload + "]";
    }
}
