// SPDX-License-Identifier: Apache-2.0
package dev.granary;

/**
 * How closely a cache watches for leases that are dropped without {@link Lease#close()}.
 *
 * <p>A leaked lease pins its memory: eviction cannot free it. When a tracked lease is garbage collected unclosed, the
 * cache logs an error with the stack trace of the {@code read} that created it, counts it in
 * {@link CacheStats#leakedLeases()}, and releases its memory.
 */
public enum LeakDetection {
    /** No tracking: the cheapest; a leaked lease's memory stays pinned until the cache is closed. */
    DISABLED,
    /** About one lease in 128 is tracked, with its creation stack trace: cheap enough for production. The default. */
    SAMPLED,
    /**
     * Every lease is tracked, and its zero-copy views stop working when it closes (reading a kept buffer throws
     * {@link IllegalStateException}): for tests. Costs a shared arena per lease.
     */
    PARANOID
}
