// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

/**
 * What the cache tells its tiers about the reads to come: whether a loader is driving them through epochs, and which
 * pages the loader may still need.
 *
 * <p>Under epoch-shuffled training every sample is read exactly once per epoch, so no replacement policy can hit more
 * than the share of the dataset that was resident when the epoch began (the ceiling {@code C / N}), and every policy
 * that replaces a resident sample by a new one (LRU, W-TinyLFU) falls below it. While a loader drives, a tier keeps a
 * <em>stable resident set</em> instead: it admits a page only into free room or in place of a <em>dead</em> page — one
 * last read before {@link #keepFrom()} on the cache's epoch clock, so not read during the loader's previous epoch nor
 * this one — and otherwise refuses it. Pages that belong to the dataset are read every epoch and never die; pages of
 * anything else are flushed from the loader's second epoch on. When no loader drives, tiers run their usual policy.
 *
 * <p>Tiers stamp every page they hold with {@link #clock()} when it is inserted or read; a page already resident when
 * the tier was opened has stamp 0.
 *
 * @param clock    the cache's epoch clock: 0 before any loader started an epoch, then one more per epoch started
 * @param keepFrom pages stamped at or after this clock value are live; older ones are dead (only while driven)
 * @param driven   whether a loader is reading an epoch now
 */
public record Workload(long clock, long keepFrom, boolean driven) {

    /** No loader has driven the cache: the tiers' own policies decide. */
    public static final Workload UNDRIVEN = new Workload(0, 0, false);

    /**
     * Validates the values.
     *
     * @throws IllegalArgumentException if the clock or {@code keepFrom} is negative or {@code keepFrom > clock}
     */
    public Workload {
        if (clock < 0 || keepFrom < 0 || keepFrom > clock) {
            throw new IllegalArgumentException(
                    "workload: clock=" + clock + ", keepFrom=" + keepFrom + " (expected: 0 <= keepFrom <= clock)");
        }
    }

    /**
     * {@return whether a page last stamped at {@code stamp} may be replaced now}
     *
     * @param stamp the workload clock when the page was last inserted or read
     */
    public boolean isDead(long stamp) {
        return driven && stamp < keepFrom;
    }
}
