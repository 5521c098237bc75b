// SPDX-License-Identifier: Apache-2.0
package dev.granary;

/**
 * A snapshot of one tier's counters, taken by {@link TieredCache#stats()}.
 *
 * @param name           the tier's name
 * @param hits           page lookups served by this tier
 * @param misses         page lookups this tier could not serve
 * @param hitBytes       bytes in the pages served
 * @param evictions      pages the tier's policy evicted
 * @param usedBytes      bytes of the tier's capacity in use now, including evicted pages that readers still hold
 * @param capacityBytes  the tier's capacity: {@code usedBytes} never exceeds it
 * @param rejections     pages the tier refused to hold (admission, no room, a failing medium)
 * @param failures       errors of the tier's own medium (I/O errors, a full disk, failed allocations); each was
 *                       served as a miss or a refused page, never as wrong bytes
 * @param corruptions    pages the tier found damaged (a checksum or header that does not match) and dropped; each
 *                       was served as a miss, never as wrong bytes
 */
public record TierStats(
        String name,
        long hits,
        long misses,
        long hitBytes,
        long evictions,
        long usedBytes,
        long capacityBytes,
        long rejections,
        long failures,
        long corruptions) {

    /** {@return hits over lookups, 0 when there were none} */
    public double hitRatio() {
        long lookups = hits + misses;
        return lookups == 0 ? 0.0 : (double) hits / lookups;
    }
}
