// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

import java.util.List;
import java.util.function.Consumer;

/**
 * Decides what a tier that evicts whole regions keeps: a disk tier appends pages into segment files and frees space
 * one segment at a time, so its policy chooses segments, not pages.
 *
 * <p>The tier owns its regions and its index; the policy only chooses. When the tier needs room it calls
 * {@link #victim(List)} with the regions it could drop (never the one it is appending to) and drops the one returned.
 * A loader that knows the order of the coming reads installs a policy that drops the region whose pages are needed
 * latest.
 *
 * <h2>Thread safety</h2>
 * {@link #admit} may be called concurrently from any thread, on the fill path: it must be cheap. {@link #victim} is
 * called by one thread at a time (under the tier's allocation lock).
 */
public interface RegionPolicy {

    /**
     * Asks whether a page should be written into the tier at all, before the tier spends I/O on it.
     *
     * @param key    the page
     * @param weight the bytes it would occupy
     * @return {@code false} to refuse (the read is served without caching the page here)
     */
    default boolean admit(PageKey key, long weight) {
        return true;
    }

    /**
     * Chooses the region to drop.
     *
     * @param candidates the regions the tier can drop now, oldest first; never empty
     * @return one of {@code candidates}; returning anything else is a bug the tier reports with an exception
     */
    Region victim(List<? extends Region> candidates);

    /** One region of a tier, as its policy sees it. A view: the values change while the tier runs. */
    interface Region {

        /** {@return the region's number: regions created later have larger numbers} */
        long id();

        /**
         * {@return when a page of the region was last read, on the tier's coarse clock: a number that grows each time
         * the tier opens a new region; larger is more recent}
         */
        long lastAccess();

        /** {@return the number of pages the region holds that are still in the tier's index} */
        int pages();

        /**
         * Passes each page the region holds to {@code action}; for policies that rank regions by their contents.
         *
         * @param action called once per page, on the calling thread
         */
        void forEachPage(Consumer<PageKey> action);
    }
}
