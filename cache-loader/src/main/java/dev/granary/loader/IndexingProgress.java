// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/**
 * What {@link WebDataset#of(dev.granary.TieredCache, java.util.List, java.util.function.Consumer)} reports each time
 * it has indexed one more shard: which shard, how, and the totals so far. Immutable.
 *
 * @param shard          the shard just indexed
 * @param fromIndexFile  true if it was indexed from its index file ({@code <shard>.gidx}: one small read); false if
 *                       its headers were scanned through large sequential reads (no index file, or a stale one)
 * @param shardsDone     shards indexed so far, this one included
 * @param shardsTotal    shards to index
 * @param bytesRead      bytes indexing has read through the cache so far (index files and shard parts; cache hits
 *                       included)
 * @param originRequests requests the cache sent its origin since indexing started (listings and reads; if other
 *                       work shares the cache meanwhile, its requests are counted too)
 * @param elapsedNanos   time since indexing started
 * @param note           why the shard was scanned rather than indexed from its index file — {@code "no index file"},
 *                       or the warning logged about a stale index or one of an unknown format version; empty when it
 *                       was indexed from its index file
 */
public record IndexingProgress(
        String shard,
        boolean fromIndexFile,
        int shardsDone,
        int shardsTotal,
        long bytesRead,
        long originRequests,
        long elapsedNanos,
        String note) {

    /** {@return whether every shard is indexed} */
    public boolean done() {
        return shardsDone == shardsTotal;
    }
}
