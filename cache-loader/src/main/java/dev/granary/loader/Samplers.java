// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/** Checks and the sharding rule shared by the {@link Sampler} implementations. */
final class Samplers {

    private Samplers() {}

    /** Validates shard arguments; shared by the implementations. */
    static void checkShard(Sampler current, int rank, int worldSize) {
        if (current.worldSize() != 1) {
            throw new IllegalStateException("sampler is already shard " + current.rank() + " of "
                    + current.worldSize() + " (expected: shard an unsharded sampler)");
        }
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size: " + worldSize + " (expected: >= 1)");
        }
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException("rank: " + rank + " (expected: 0 <= rank < world size " + worldSize
                    + ")");
        }
    }

    /** Takes rank {@code rank}'s strided part of a full order padded to a multiple of the world size. */
    static int[] strided(int[] full, int rank, int worldSize, int perRank) {
        if (worldSize == 1) {
            return full;
        }
        int[] part = new int[perRank];
        int n = full.length;
        for (int k = 0; k < perRank; k++) {
            long position = rank + (long) k * worldSize; // < perRank * worldSize = padded length
            part[k] = full[(int) (position < n ? position : position - n)]; // padding repeats the start
        }
        return part;
    }

    /** {@return {@code 0, 1, …, n − 1}}, after checking the epoch it is for */
    static int[] identity(int n, long epoch) {
        checkEpoch(epoch);
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        return order;
    }

    static void checkEpoch(long epoch) {
        if (epoch < 0) {
            throw new IllegalArgumentException("epoch: " + epoch + " (expected: >= 0)");
        }
    }
}
