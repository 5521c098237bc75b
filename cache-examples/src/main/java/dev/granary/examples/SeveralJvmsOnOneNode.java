// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.Partitioning;
import dev.granary.loader.Sample;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.file.Path;

/**
 * One process per GPU: {@code java ... SeveralJvmsOnOneNode <data> <node-cache> <rank> <world-size> <gpus-per-node>}.
 */
public class SeveralJvmsOnOneNode {

    public static void main(String[] args) throws IOException {
        Path data = Path.of(args[0]);
        Path nodeCache = Path.of(args[1]); // the same directory for every process on the node
        int rank = Integer.parseInt(args[2]); // e.g. from torchrun's RANK or Slurm's SLURM_PROCID
        int worldSize = Integer.parseInt(args[3]);
        int gpusPerNode = Integer.parseInt(args[4]);
        int epochs = args.length > 5 ? Integer.parseInt(args[5]) : 2;

        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                        .tier(MemoryTier.builder().capacity(256L << 20).build()) // this process's own
                        .tier(DiskTier.builder()
                                .directory(nodeCache)
                                .capacity(4L << 30) // the bound for the whole directory, not per process
                                .shared(true) // every process on it must say so
                                .build())
                        .build();
                DataLoader<String> loader = DataLoader.builder(Dataset.ofObjects(cache, "train/"), Sample::key)
                        .batchSize(32)
                        .shuffle(42L)
                        .shard(rank, worldSize, Partitioning.STABLE) // each node keeps its part every epoch
                        .ranksPerNode(gpusPerNode) // which the node's ranks split anew each epoch
                        .workers(4)
                        .prefetch(4)
                        .build()) {
            for (int epoch = 0; epoch < epochs; epoch++) {
                try (Epoch<String> batches = loader.epoch(epoch)) {
                    for (Batch<String> _ : batches) {
                        // your training step (and the ranks' gradient exchange)
                    }
                    LoaderStats s = batches.stats();
                    System.out.printf(
                            "rank %d epoch %d: %d samples, %d origin reads%n",
                            rank, epoch, s.samples(), s.originReads());
                }
            }
        }
    }
}
