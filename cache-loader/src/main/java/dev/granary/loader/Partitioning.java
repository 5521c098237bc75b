// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/**
 * How the ranks of a data-parallel job split each epoch (see {@link DataLoader.Builder#shard(int, int, Partitioning)}
 * and the {@link DataLoader} class comment, "Ranks, nodes and partitions").
 */
public enum Partitioning {

    /**
     * Every epoch is split afresh, PyTorch {@code DistributedSampler} style: rank {@code r} of {@code W} takes
     * positions {@code r, r + W, …} of the epoch's whole order (for {@link Shuffle#shardBlocks(long, int)}: node
     * {@code n} takes the {@code n}-th contiguous span, so every shard is read by one node). A rank sees about
     * {@code 1/W} of what it saw last epoch, so a per-node cache that holds its part hits about {@code 1/W} as often
     * as under {@link #STABLE}.
     */
    PER_EPOCH,

    /**
     * Each node keeps the same part every epoch and reshuffles within it: the parts are a seeded random partition of
     * the dataset (whole shards for a {@link WebDataset}, samples otherwise) into a fixed number of canonical
     * partitions, a node taking a contiguous range of them; the ranks of a node split the node's part afresh each
     * epoch. A node cache that holds its part hits every sample from the second epoch on.
     */
    STABLE
}
