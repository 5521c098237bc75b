// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.CacheSimulation;
import dev.granary.ObjectInfo;
import dev.granary.spi.PageKey;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The loop behind {@link DataLoader#plan}: epoch after epoch, starts the cache's dry run's epoch, feeds it the
 * epoch's read units ({@link ReadUnits}) and counts where each would be served, then ends the epoch — as the loader's
 * {@code epoch(e)} drives the real cache.
 *
 * <p>Metadata requests follow {@code TieredCache.read}: a read asks the origin for the object's version unless the
 * cache trusts one it knows; once asked, a version is trusted for the rest of the plan unless the metadata TTL is zero
 * (then every read asks). That the TTL may expire during a long epoch is not predicted: the plan cannot know how long
 * an epoch will take. Pinned reads (WebDataset) never ask.
 *
 * <p>Not thread-safe: one plan per instance.
 */
final class DryRun implements ReadUnits.Sink {

    /**
     * One epoch to run: its number, how to compute its order (when its turn comes, so that a long plan holds one order
     * at a time), and the batches it reads.
     */
    record EpochSpec(long epoch, Supplier<int[]> order, long firstBatch, long endBatch, int batchSize) {}

    private final CacheSimulation sim;
    private final ReadUnits units;
    private final boolean statEveryRead;
    private final List<String> names;
    private final Set<String> asked = new HashSet<>();
    // The epoch being counted.
    private long reads;
    private long readBytes;
    private long originReads;
    private long originBytes;
    private long metadataRequests;
    private long[] hits;
    private long[] hitBytes;

    DryRun(CacheSimulation sim, ReadUnits units) {
        this.sim = sim;
        this.units = units;
        this.statEveryRead = sim.metadataTtl().isZero();
        this.names = sim.tierNames();
    }

    LoaderPlan run(List<EpochSpec> epochs) {
        List<EpochPlan> plans = new ArrayList<>(epochs.size());
        for (EpochSpec e : epochs) {
            reads = readBytes = originReads = originBytes = metadataRequests = 0;
            hits = new long[names.size()];
            hitBytes = new long[names.size()];
            int[] order = e.order().get();
            int from = (int) Math.min(order.length, e.firstBatch() * e.batchSize());
            int to = (int) Math.min(order.length, e.endBatch() * e.batchSize());
            sim.startEpoch();
            units.epoch(e.epoch(), order, from, to, sim, this);
            sim.endEpoch();
            Map<String, Long> byTier = new LinkedHashMap<>();
            Map<String, Long> bytesByTier = new LinkedHashMap<>();
            for (int i = 0; i < names.size(); i++) {
                byTier.merge(names.get(i), hits[i], Long::sum);
                bytesByTier.merge(names.get(i), hitBytes[i], Long::sum);
            }
            plans.add(new EpochPlan(
                    e.epoch(),
                    to - from,
                    reads,
                    readBytes,
                    byTier,
                    bytesByTier,
                    originReads,
                    metadataRequests,
                    originBytes));
        }
        return new LoaderPlan(names, plans);
    }

    @Override
    public void versionLookup(String key) {
        if (statEveryRead || (!sim.versionFresh(key) && asked.add(key))) {
            metadataRequests++;
        }
    }

    @Override
    public void unit(PageKey key) {
        count(key.length(), sim.read(key));
    }

    @Override
    public void extent(ObjectInfo object, long offset, int length) {
        count(length, sim.readExtent(object, offset, length));
    }

    private void count(int length, int tier) {
        reads++;
        readBytes += length;
        if (tier < 0) {
            originReads++;
            originBytes += length;
        } else {
            hits[tier]++;
            hitBytes[tier] += length;
        }
    }
}
