// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier.internal;

import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.tier.DiskTier;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * Not API (see the package): package-private hooks of {@code dev.granary.tier} that Granary's benchmarks need and the
 * public API does not give — a tier's page count, where a disk page lies in its file, the disk tier's direct-write and
 * writeback counters and its test-only direct-write threshold, the record arithmetic of the disk format, and the
 * memory tier's slab allocator. The hooks stay package-private in {@code dev.granary.tier}; its class
 * {@code InternalAccess} {@linkplain #grant grants} them here when it loads (the pattern of the JDK's own
 * {@code SharedSecrets}), so this class is the only way in, and only from the class path. Thread-safe.
 */
public final class TierInternals {

    private TierInternals() {}

    /**
     * Where a page's bytes lie in its segment file.
     *
     * @param file          the segment file
     * @param payloadOffset the offset of the page's first byte in the file
     * @param length        the page's length in bytes
     */
    public record PageLocation(Path file, long payloadOffset, int length) {}

    /** The memory tier's slab allocator, as the allocator benchmarks drive it. Thread-safe. */
    public interface Slabs extends AutoCloseable {

        /** {@return the first block of a run of {@code length} bytes, or {@code -1} if none fits} */
        long allocate(int length);

        /** {@return the memory of an allocation} */
        MemorySegment segment(long start, int length);

        /** Frees an allocation. */
        void free(long start, int length);

        /** {@return bytes reserved from the OS so far} */
        long reserved();

        /** {@return bytes allocated now, rounded to blocks} */
        long used();

        /** Refuses new allocations; the memory goes once every live allocation is freed. */
        @Override
        void close();
    }

    /** What {@code dev.granary.tier} grants: implemented there, by the hooks themselves. */
    public interface Access {

        /** {@return the pages in a {@code DiskTier}'s or {@code MemoryTier}'s index} */
        int pageCount(Tier tier);

        /** {@return where a page of the disk tier lies, or null if the tier does not hold it} */
        PageLocation locate(DiskTier tier, PageKey key);

        /** {@return the builder, writing pages of at least {@code bytes} direct once direct writes are on} */
        DiskTier.Builder directWriteMin(DiskTier.Builder builder, int bytes);

        /** {@return how many pages the disk tier wrote with {@code O_DIRECT} so far} */
        long directWrites(DiskTier tier);

        /** {@return how many ranges of written pages the disk tier handed to writeback so far} */
        long writebacks(DiskTier tier);

        /** {@return how many pages of {@code pageSize} bytes, with names of {@code nameBytes}, a segment holds} */
        long pagesPerSegment(long segmentSize, int pageSize, int nameBytes);

        /** {@return a new slab allocator: {@code capacity} bytes at most, in slabs of {@code slabBytes}} */
        Slabs slabs(long capacity, long slabBytes);
    }

    private static Access granted;
    private static final Access ACCESS = load();

    private static Access load() {
        try {
            // Its static initializer calls grant: the one implementation, in the package whose hooks it reaches.
            Class.forName("dev.granary.tier.InternalAccess", true, TierInternals.class.getClassLoader());
        } catch (ClassNotFoundException e) {
            throw new ExceptionInInitializerError(e);
        }
        synchronized (TierInternals.class) {
            if (granted == null) {
                throw new IllegalStateException("dev.granary.tier.InternalAccess granted nothing (expected: it"
                        + " calls TierInternals.grant when it loads)");
            }
            return granted;
        }
    }

    /**
     * Called once, by {@code dev.granary.tier.InternalAccess} as it loads.
     *
     * @throws IllegalStateException if anything was granted before
     */
    public static synchronized void grant(Access access) {
        if (granted != null) {
            throw new IllegalStateException(
                    "TierInternals granted twice (expected: once, by" + " dev.granary.tier.InternalAccess)");
        }
        granted = access;
    }

    /** {@return the pages in a {@code DiskTier}'s or {@code MemoryTier}'s index} */
    public static int pageCount(Tier tier) {
        return ACCESS.pageCount(tier);
    }

    /** {@return where a page of the disk tier lies in its segment file, or null if the tier does not hold it} */
    public static PageLocation locate(DiskTier tier, PageKey key) {
        return ACCESS.locate(tier, key);
    }

    /**
     * {@return the builder, writing pages of at least {@code bytes} direct once {@link DiskTier.Builder#directWrites}
     * is on} (the tier's default is 64 KiB; its tests and benchmarks go lower)
     */
    public static DiskTier.Builder directWriteMin(DiskTier.Builder builder, int bytes) {
        return ACCESS.directWriteMin(builder, bytes);
    }

    /** {@return how many pages the disk tier wrote with {@code O_DIRECT} so far} */
    public static long directWrites(DiskTier tier) {
        return ACCESS.directWrites(tier);
    }

    /** {@return how many ranges of written pages the disk tier handed to writeback so far} */
    public static long writebacks(DiskTier tier) {
        return ACCESS.writebacks(tier);
    }

    /**
     * {@return how many pages of {@code pageSize} bytes, each with {@code nameBytes} of origin, key and version, fit
     * in a segment of {@code segmentSize} bytes}, by the disk format's arithmetic ({@code docs/disk-format.md})
     */
    public static long pagesPerSegment(long segmentSize, int pageSize, int nameBytes) {
        return ACCESS.pagesPerSegment(segmentSize, pageSize, nameBytes);
    }

    /** {@return a new slab allocator of the memory tier's: {@code capacity} bytes at most, in {@code slabBytes}} */
    public static Slabs slabs(long capacity, long slabBytes) {
        return ACCESS.slabs(capacity, slabBytes);
    }
}
