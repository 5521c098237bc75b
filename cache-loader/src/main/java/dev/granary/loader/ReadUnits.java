// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.CacheSimulation;
import dev.granary.ObjectInfo;
import dev.granary.spi.PageKey;
import java.util.Optional;

/**
 * What an epoch asks its cache for, in order, as units the cache looks up and fills one by one: the one function that
 * {@link DataLoader#plan} feeds the cache's dry run with. It follows the loader's own read path:
 * <ul>
 *   <li>a {@link WebDataset} epoch whose order lets it stream ({@link StreamPlan#forEpoch}, the very function
 *       {@link EpochRun} asks) reads its shards' parts, each one extent, in order of first use;</li>
 *   <li>otherwise a {@link WebDataset} sample is one extent of its shard, pinned to the version the shard was indexed
 *       at;</li>
 *   <li>a listed object ({@link Dataset#ofObjects}) is one extent {@code [0, size)} pinned to its listed version, with
 *       no version lookup;</li>
 *   <li>an object of {@link Dataset#ofKeys} is read through {@code cache.read(key)}: its version looked up first, then
 *       its pages of the cache's page size.</li>
 * </ul>
 *
 * <p>Implementations are stateless and thread-safe.
 */
@FunctionalInterface
interface ReadUnits {

    /**
     * Emits the units an epoch reads.
     *
     * @param epoch the epoch number
     * @param order the epoch's order for this rank ({@link Sampler#epoch(long)})
     * @param from  the first position of {@code order} the epoch reads (after a resume, not 0)
     * @param to    the position just past the last one it reads (a dropped last batch is not read)
     * @param sim   the cache's dry run: how the cache cuts reads into page keys, and what it knows of versions
     * @param sink  receives the units, in order
     */
    void epoch(long epoch, int[] order, int from, int to, CacheSimulation sim, Sink sink);

    /** Receives an epoch's units. */
    interface Sink {

        /**
         * A read asks the cache for an object's current version first ({@code cache.read(key)}): a metadata request
         * to the origin unless the cache trusts a version it knows.
         *
         * @param key the object key
         */
        void versionLookup(String key);

        /**
         * The cache looks a page up in its tiers, and reads it from the origin if none holds it.
         *
         * @param key the page's identity
         */
        void unit(PageKey key);

        /**
         * The cache reads an extent of one version ({@code LoaderSupport.readExtent}): the unit itself if a tier
         * holds it, else the pages covering it if tiers hold them all (a prestage), else the origin
         * ({@link CacheSimulation#readExtent}).
         *
         * @param object the object's key, size and version
         * @param offset the first byte
         * @param length the number of bytes, {@code > 0}
         */
        void extent(ObjectInfo object, long offset, int length);
    }

    /**
     * {@return the units the loader with these settings reads}: shard parts for an epoch that streams (when
     * {@code settings.streamShards()}), else sample by sample as {@link Dataset#read} reads
     */
    static ReadUnits of(LoaderSettings<?> settings) {
        ReadUnits perSample = perSample(settings.dataset());
        return (epoch, order, from, to, sim, sink) -> {
            StreamPlan plan = StreamPlan.forEpoch(settings, order, from, to); // the epoch's own decision
            if (!plan.streams()) {
                perSample.epoch(epoch, order, from, to, sim, sink);
                return;
            }
            ShardedDataset shards = (ShardedDataset) settings.dataset();
            java.util.BitSet decoded = new java.util.BitSet();
            for (int i = 0; i < plan.partCount(); i++) {
                int s = plan.shard(i);
                ObjectInfo shard = shards.shardInfo(s);
                int length = ShardParts.length(plan.number(i), shard.size(), plan.partSize());
                extent(shards, s, ShardParts.start(plan.number(i), plan.partSize()), length, decoded, sink);
            }
        };
    }

    /** {@return the units of a dataset read sample by sample, as {@link Dataset#read} reads them} */
    static ReadUnits perSample(Dataset dataset) {
        return switch (dataset) {
            case ShardedDataset shards ->
                (epoch, order, from, to, sim, sink) -> {
                    java.util.BitSet decoded = new java.util.BitSet();
                    for (int p = from; p < to; p++) {
                        int sample = order[p];
                        int length = shards.sampleLength(sample);
                        if (length > 0) { // an empty extent is served without a lookup
                            extent(shards, shards.shardOf(sample), shards.sampleStart(sample), length, decoded, sink);
                        }
                    }
                };
            case ObjectDataset objects ->
                (epoch, order, from, to, sim, sink) -> {
                    for (int p = from; p < to; p++) {
                        int sample = order[p];
                        ObjectInfo listed = objects.object(sample);
                        if (listed != null) { // pinned to the listing: one extent, no stat (ObjectDataset.read)
                            if (listed.size() > 0) {
                                sink.extent(listed, 0, (int) listed.size());
                            }
                            continue;
                        }
                        String key = objects.key(sample);
                        sink.versionLookup(key);
                        ObjectInfo info = objectInfo(objects, sample, sim);
                        long pages = sim.pages(info);
                        for (long page = 0; page < pages; page++) {
                            sink.unit(sim.pageKey(info, page));
                        }
                    }
                };
        };
    }

    /**
     * One extent of a shard as {@link ShardedDataset#readShard} reads it: through the cache; or, for a shard stored
     * encoded, the stored shard whole the first time the epoch touches it (its decoded bytes are held after that:
     * {@link DecodedShards}, assumed to hold the shards an epoch has open at once, as shard-block orders do), and
     * nothing after.
     */
    private static void extent(
            ShardedDataset shards, int s, long offset, int length, java.util.BitSet decoded, Sink sink) {
        if (!shards.decodedShard(s)) {
            sink.extent(shards.shardInfo(s), offset, length);
        } else if (!decoded.get(s)) {
            decoded.set(s);
            ObjectInfo stored = shards.storedInfo(s);
            sink.extent(stored, 0, (int) stored.size());
        }
    }

    /** A version no origin reports: the pages of an object whose version the cache does not know yet. */
    String UNKNOWN_VERSION = "\u0000not yet known";

    /**
     * The version and size a read of the object would use: the ones the cache knows (a listing or an earlier stat);
     * else the listed size under a version that matches nothing cached — the read's stat will learn the real one, and
     * its pages are fetched then, which is what the placeholder predicts.
     *
     * @throws IllegalStateException if neither the dataset nor the cache knows the object's size
     */
    private static ObjectInfo objectInfo(ObjectDataset objects, int sample, CacheSimulation sim) {
        String key = objects.key(sample);
        Optional<ObjectInfo> known = sim.knownObject(key);
        if (known.isPresent()) {
            return known.get();
        }
        long size = objects.byteSize(sample);
        if (size < 0) {
            throw new IllegalStateException("plan: sample " + sample + " ('" + key + "') has no known size: the"
                    + " dataset was made with Dataset.ofKeys and the cache has not asked the origin about it (expected:"
                    + " Dataset.ofObjects, whose listing gives every size, or a plan after an epoch has read it)");
        }
        return new ObjectInfo(key, size, UNKNOWN_VERSION);
    }
}
