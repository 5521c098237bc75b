// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.Arrays;

/**
 * Prints two epoch orders, for SamplerTest's cross-JVM check: args = size seed epoch rank worldSize; the first line
 * is the per-sample shuffle split PER_EPOCH, the second shard blocks of 3 over {@link #SHARDS}, split STABLE.
 */
public final class SamplerOrderMain {

    static final int[] SHARDS = {30, 12, 0, 45, 7, 22, 19, 31, 8, 50, 3, 27};

    private SamplerOrderMain() {}

    public static void main(String[] args) {
        long seed = Long.parseLong(args[1]);
        long epoch = Long.parseLong(args[2]);
        int rank = Integer.parseInt(args[3]);
        int world = Integer.parseInt(args[4]);
        Sampler s = Sampler.shuffled(Integer.parseInt(args[0]), seed).shard(rank, world);
        System.out.println(Arrays.toString(s.epoch(epoch)));
        Sampler b =
                Sampler.ofShards(SHARDS, Shuffle.shardBlocks(seed, 3)).shard(rank, world, Partitioning.STABLE, 1, 960);
        System.out.println(Arrays.toString(b.epoch(epoch)));
    }
}
