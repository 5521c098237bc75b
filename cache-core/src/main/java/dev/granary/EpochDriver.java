// SPDX-License-Identifier: Apache-2.0
package dev.granary;

/**
 * A loader's handle for telling a {@link TieredCache} when its epochs start and end, so that the cache keeps a stable
 * resident set while it reads (see {@link dev.granary.spi.Workload} for the rule and why it reaches the hit-ratio
 * ceiling {@code C / N} under epoch-shuffled training, where LRU and W-TinyLFU do not).
 *
 * {@snippet :
 * try (EpochDriver driver = cache.loaderSupport().driver()) {
 *     for (int epoch = 0; epoch < epochs; epoch++) {
 *         driver.startEpoch();
 *         readEverySampleOnce();          // in any order
 *         driver.endEpoch();
 *     }
 * }
 * }
 *
 * <p>While any driver of a cache is inside an epoch, its tiers admit pages only into free room or in place of pages
 * that no driver read during its previous epoch or its current one, and they hold each page where it was first
 * placed (exclusively: no copy in two tiers, no promotion on a hit). Between epochs, and once every driver is closed,
 * the tiers' own policies (W-TinyLFU in memory) decide again. Several drivers may share a cache: a page stays
 * protected while any of them may still need it.
 *
 * <p>Thread-safe. {@link #close()} is idempotent and never throws.
 */
public final class EpochDriver implements AutoCloseable {

    private final EpochClock clock;
    // The fields below are guarded by the clock's monitor.
    /** The cache's epoch clock when this driver's previous epoch started; -1 before its second epoch. */
    long previousStart = -1;
    /** The cache's epoch clock when this driver's latest epoch started; -1 before its first. */
    long currentStart = -1;

    boolean inEpoch;
    boolean closed;

    EpochDriver(EpochClock clock) {
        this.clock = clock;
    }

    /**
     * Starts an epoch: from now on this driver's reads are the ones the cache keeps.
     *
     * @throws IllegalStateException if an epoch of this driver is already started (end it first), or the driver or
     *                               the cache is closed
     */
    public void startEpoch() {
        clock.start(this);
    }

    /**
     * Ends the current epoch. Does nothing if no epoch is started.
     *
     * @throws IllegalStateException if the driver is closed
     */
    public void endEpoch() {
        clock.end(this);
    }

    /** {@return whether an epoch of this driver is started and not yet ended} */
    public boolean inEpoch() {
        return clock.inEpoch(this);
    }

    /** Ends the current epoch, if any, and stops protecting this driver's pages. Idempotent. */
    @Override
    public void close() {
        clock.close(this);
    }

    @Override
    public String toString() {
        return "EpochDriver[" + clock.describe(this) + "]";
    }
}
