// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.LoaderSupport;
import dev.granary.ObjectInfo;

/**
 * How a shard is cut into the large parts that are read whole: part {@code i} is the byte range
 * {@code [i × partSize, min((i + 1) × partSize, shardSize))}. The rule is the same for indexing a shard without an
 * index file (sequential reads) and for streaming shards during an epoch, so that the parts the indexer read — and
 * left in the cache — are the very extents the first epoch asks for. Fixed byte boundaries (not sample boundaries)
 * because they are known before the shard is indexed; a sample crossing a boundary is assembled from two parts.
 * Stateless.
 */
final class ShardParts {

    /** The default part size: large enough that an object store serves it at stream speed (≥ 8 MiB). */
    static final int DEFAULT_PART_SIZE = 8 << 20;

    /** The smallest allowed part size: below this a part is a small ranged read again. */
    static final int MIN_PART_SIZE = 1 << 20;

    private ShardParts() {}

    /** {@return the number of parts of a shard of {@code shardSize} bytes} (0 for an empty shard) */
    static int count(long shardSize, int partSize) {
        long n = (shardSize + partSize - 1) / partSize;
        if (n > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("shard of " + shardSize + " bytes in parts of " + partSize + " bytes: "
                    + n + " parts (expected: fewer than 2^31; use a larger part size)");
        }
        return (int) n;
    }

    /** {@return the first byte of part {@code part}} */
    static long start(int part, int partSize) {
        return (long) part * partSize;
    }

    /** {@return the length of part {@code part} of a shard of {@code shardSize} bytes} */
    static int length(int part, long shardSize, int partSize) {
        return (int) Math.min(partSize, shardSize - start(part, partSize));
    }

    /**
     * The part size an epoch streams its shards in: the cache's page size when the cache holds the shards in pages
     * ({@link dev.granary.LoaderSupport#holdsPages} of up to {@link #PROBED_SHARDS} of them: a prestage) and that size
     * is at least {@link #MIN_PART_SIZE} —
     * each part is then one cached page, read as a zero-copy view, where parts of {@code configured} bytes would each
     * be a copy assembled from pages, held on the heap for as long as the stream holds the part
     * (docs/decisions/0008-staged-pages-serve-extents.md) — else {@code configured}. Both the epoch
     * ({@link EpochRun}) and its dry run ({@link ReadUnits}) ask this, so they plan the same parts.
     */
    static int forEpoch(ShardedDataset shards, int configured) {
        int page = shards.cache().pageSize();
        if (page == configured || page < MIN_PART_SIZE) {
            return configured;
        }
        // A sample of the shards, evenly spread, first and last included: a probe of a disk tier just opened verifies
        // the pages it finds (their CRC, read from the file), so probing every shard of a large dataset would read two
        // pages of each before the epoch starts. A shard the sample misses that is not staged is read in page-sized
        // parts: right bytes, smaller requests.
        LoaderSupport support = shards.cache().loaderSupport();
        int n = shards.shardCount();
        int probes = Math.min(n, PROBED_SHARDS);
        for (int i = 0; i < probes; i++) {
            int s = probes == 1 ? 0 : (int) ((long) i * (n - 1) / (probes - 1));
            ObjectInfo shard = shards.shardInfo(s);
            if (shard.size() > 0 && !support.holdsPages(shard)) {
                return configured;
            }
        }
        return page;
    }

    /** How many shards {@link #forEpoch} probes at most. */
    static final int PROBED_SHARDS = 32;

    /** {@return the part holding byte {@code offset}} */
    static int partOf(long offset, int partSize) {
        return (int) (offset / partSize);
    }
}
