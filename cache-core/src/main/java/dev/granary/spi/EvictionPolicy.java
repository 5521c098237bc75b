// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

/**
 * Decides which pages a tier keeps: which to admit and which to evict when it needs room.
 *
 * <p>The tier owns its index and its memory; the policy owns only the order. The tier tells the policy what happened
 * ({@link #recordAccess}, {@link #recordInsert}, {@link #recordRemoval}) and the policy answers by calling the
 * tier's {@link Evictor} for the pages it gives up. The default policy of Granary's tiers is Caffeine's W-TinyLFU; a
 * loader that knows the order of the coming reads installs a policy that keeps what is needed soonest.
 *
 * <h2>Thread safety</h2>
 * Every method may be called concurrently. {@link #recordAccess} is on the read hot path: it must be cheap and may be
 * lossy (drop records under contention, sample). A policy may call the evictor from inside any of its methods, on the
 * calling thread; the evictor never calls back into the policy.
 */
public interface EvictionPolicy {

    /**
     * Called by the tier on a hit. May be lossy.
     *
     * @param key the page that was read
     */
    void recordAccess(PageKey key);

    /**
     * Asks whether a page not yet in the tier should be admitted, before the tier spends memory or I/O on it.
     *
     * @param key    the page
     * @param weight the bytes it would occupy in the tier
     * @return {@code false} to refuse the page (the read is served without caching it here)
     */
    default boolean admit(PageKey key, long weight) {
        return true;
    }

    /**
     * Called by the tier after it inserted a page. The policy may evict other pages, or this one, through the evictor
     * to keep the total weight within its bound.
     *
     * @param key    the page inserted
     * @param weight the bytes the page occupies in the tier
     */
    void recordInsert(PageKey key, long weight);

    /**
     * Called by the tier after it removed a page on its own (invalidation, damage), not through the evictor.
     *
     * @param key the page removed
     */
    void recordRemoval(PageKey key);

    /**
     * Asks the policy to give up pages until at least {@code bytes} more are free in the tier's accounting, through
     * the evictor, coldest first. Used when the tier's memory is fragmented or held by readers.
     *
     * @param bytes how many bytes of page weight to evict, {@code > 0}
     * @return the weight actually evicted, possibly less if the policy has nothing more to give
     */
    long evict(long bytes);

    /** Called back by a policy for each page it evicts. Implemented by the tier. */
    @FunctionalInterface
    interface Evictor {

        /**
         * Removes the page from the tier. Must not call back into the policy.
         *
         * @param key the page to remove
         * @return {@code true} if the tier held the page and removed it now
         */
        boolean evict(PageKey key);
    }

    /** Creates one policy for one tier. Tiers take a factory because a policy's state belongs to exactly one tier. */
    @FunctionalInterface
    interface Factory {

        /**
         * Creates a policy for one tier.
         *
         * @param capacity the tier's capacity in bytes: the bound on the total weight the policy keeps
         * @param evictor  the tier's callback for evictions
         * @return a new policy
         */
        EvictionPolicy create(long capacity, Evictor evictor);
    }
}
