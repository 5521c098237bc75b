// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.tier.internal.TierInternals;
import java.lang.foreign.MemorySegment;

/**
 * The package-private hooks {@link TierInternals} hands Granary's benchmarks (not API: see there). Each method is
 * one call of a hook this package keeps for its own tests; nothing here widens what users of the module can reach.
 */
final class InternalAccess implements TierInternals.Access {

    static {
        TierInternals.grant(new InternalAccess());
    }

    private InternalAccess() {}

    @Override
    public int pageCount(Tier tier) {
        return switch (tier) {
            case DiskTier disk -> disk.pageCount();
            case MemoryTier memory -> memory.pageCount();
            default -> throw new IllegalArgumentException("tier " + tier + " (expected: a DiskTier or MemoryTier)");
        };
    }

    @Override
    public TierInternals.PageLocation locate(DiskTier tier, PageKey key) {
        DiskTier.Location where = tier.locate(key);
        return where == null
                ? null
                : new TierInternals.PageLocation(where.file(), where.payloadOffset(), where.length());
    }

    @Override
    public DiskTier.Builder directWriteMin(DiskTier.Builder builder, int bytes) {
        return builder.directWriteMin(bytes);
    }

    @Override
    public long directWrites(DiskTier tier) {
        return tier.directWrites();
    }

    @Override
    public long writebacks(DiskTier tier) {
        return tier.writebacks();
    }

    @Override
    public long pagesPerSegment(long segmentSize, int pageSize, int nameBytes) {
        int header = SegmentFormat.align8(SegmentFormat.RECORD_FIXED + nameBytes + 4);
        long alignment = SegmentFormat.alignment(pageSize);
        long payload = (pageSize + alignment - 1) & -alignment;
        return (segmentSize - SegmentFormat.SEGMENT_HEADER) / (payload + header);
    }

    @Override
    public TierInternals.Slabs slabs(long capacity, long slabBytes) {
        SlabAllocator allocator = new SlabAllocator(capacity, slabBytes, slab -> {});
        return new TierInternals.Slabs() {
            @Override
            public long allocate(int length) {
                return allocator.allocate(length);
            }

            @Override
            public MemorySegment segment(long start, int length) {
                return allocator.segment(start, length);
            }

            @Override
            public void free(long start, int length) {
                allocator.free(start, length);
            }

            @Override
            public long reserved() {
                return allocator.reserved();
            }

            @Override
            public long used() {
                return allocator.used();
            }

            @Override
            public void close() {
                allocator.close();
            }
        };
    }
}
