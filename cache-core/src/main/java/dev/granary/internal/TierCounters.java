// SPDX-License-Identifier: Apache-2.0
package dev.granary.internal;

import dev.granary.TierStats;
import java.util.concurrent.atomic.LongAdder;

/**
 * The counters every tier keeps for {@link TierStats}: one place instead of a copy in each tier. Each counter is a
 * {@link LongAdder}, so the hot path (a hit) costs an uncontended add on the calling thread's cell.
 *
 * <p>Thread-safe. Counters only grow; {@link #snapshot} reads them without a lock, so a snapshot taken while the tier
 * runs may mix counts from slightly different moments (never a torn number).
 */
public final class TierCounters {

    /** Creates counters at zero. */
    public TierCounters() {}

    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder hitBytes = new LongAdder();
    private final LongAdder evictions = new LongAdder();
    private final LongAdder rejections = new LongAdder();
    private final LongAdder failures = new LongAdder();
    private final LongAdder corruptions = new LongAdder();

    /**
     * Counts a lookup served by the tier.
     *
     * @param bytes the bytes of the page served
     */
    public void hit(long bytes) {
        hits.increment();
        hitBytes.add(bytes);
    }

    /** Counts a lookup the tier could not serve. */
    public void miss() {
        misses.increment();
    }

    /** Counts a page the tier's policy evicted. */
    public void evicted() {
        evictions.increment();
    }

    /** Counts a page the tier refused to hold (admission, no room, a failing medium). */
    public void rejected() {
        rejections.increment();
    }

    /** Counts an error of the tier's own medium. */
    public void failed() {
        failures.increment();
    }

    /** Counts a page found damaged and dropped. */
    public void corrupted() {
        corruptions.increment();
    }

    /**
     * {@return the counters as a snapshot, with the tier's gauges}
     *
     * @param name     the tier's name
     * @param used     bytes of the tier's capacity in use now
     * @param capacity the tier's capacity in bytes
     */
    public TierStats snapshot(String name, long used, long capacity) {
        return new TierStats(
                name,
                hits.sum(),
                misses.sum(),
                hitBytes.sum(),
                evictions.sum(),
                used,
                capacity,
                rejections.sum(),
                failures.sum(),
                corruptions.sum());
    }
}
