// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;

/**
 * A page in a segment file of a {@link DiskTier}, as handed to one reader: made when the page is leased
 * ({@link DiskIndex#lease}), garbage once released (the index keeps no object per page). It holds one reference to
 * its segment, which keeps the mapping alive.
 */
final class DiskPage extends Page {

    final DiskTier tier;
    final Segment segment;
    /** The page's record number in its segment's rows. */
    final int record;

    final long payloadOffset;
    final int crc;

    /** The caller has retained {@code segment} once for this page; the page releases it. */
    DiskPage(DiskTier tier, Segment segment, int record, PageKey key, long payloadOffset, int crc) {
        super(key, segment.map.asSlice(payloadOffset, key.length()));
        this.tier = tier;
        this.segment = segment;
        this.record = record;
        this.payloadOffset = payloadOffset;
        this.crc = crc;
        seal();
    }

    /** {@return whether the bytes were checked against the CRC since the tier opened} Racy: see DiskIndex. */
    boolean verified() {
        return segment.verified(record);
    }

    void markVerified() {
        segment.markVerified(record);
    }

    /** Records the workload clock of a read; racy (a lost update only delays a stamp). */
    void stamp(long clock) {
        segment.stampRecord(record, clampStamp(clock));
    }

    /** {@return a workload clock as the index's rows keep it: an {@code int}, saturated} */
    static int clampStamp(long clock) {
        return (int) Math.min(clock, Integer.MAX_VALUE);
    }

    @Override
    protected void deallocate() {
        segment.release();
    }

    @Override
    public String toString() {
        return "DiskPage[" + key() + " in " + segment.file + " at " + payloadOffset + "]";
    }
}
