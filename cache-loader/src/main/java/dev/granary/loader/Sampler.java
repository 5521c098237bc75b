// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/**
 * The order in which one rank visits the samples of a dataset, epoch by epoch: a pure function of the dataset's size,
 * the seed, the epoch, the rank and the world size — the same on every JVM, every machine and every Granary version
 * that keeps the documented algorithm (see {@link #shuffled(int, long)}). Immutable and thread-safe.
 *
 * <h2>Sharding</h2>
 * {@link #shard(int, int)} gives rank {@code r} of {@code W} its part of every epoch, as PyTorch's
 * {@code DistributedSampler} does with {@code drop_last=False}: each rank gets {@code ceil(N / W)} indices; the epoch's
 * full order is padded to {@code W × ceil(N / W)} by repeating its first entries, and rank {@code r} takes positions
 * {@code r, r + W, r + 2W, …}. So the parts are disjoint except for the padding (at most {@code W − 1} samples seen
 * twice per epoch, none when {@code W} divides {@code N}), cover the epoch, and have equal sizes — every rank runs the
 * same number of steps, which collective training needs.
 */
public sealed interface Sampler permits SequentialSampler, SeededShuffle {

    /**
     * {@return a sampler visiting {@code 0, 1, …, datasetSize − 1} in order, every epoch}
     *
     * @throws IllegalArgumentException if {@code datasetSize < 0}
     */
    static Sampler sequential(int datasetSize) {
        return new SequentialSampler(checkSize(datasetSize), 0, 1);
    }

    /**
     * Returns a sampler visiting every index once per epoch in a permutation derived from {@code (seed, epoch)}.
     *
     * <p>The algorithm, fixed so that orders can be reproduced anywhere: with SplitMix64's finalizer
     * {@code mix(z) = z ^= z >>> 30, z *= 0xBF58476D1CE4E5B9, z ^= z >>> 27, z *= 0x94D049BB133111EB, z ^ z >>> 31}
     * and {@code γ = 0x9E3779B97F4A7C15}, the epoch's state starts at {@code mix(seed + γ × (epoch + 1))}; each draw
     * adds {@code γ} to the state and returns {@code mix(state)}. A Fisher–Yates shuffle of {@code 0 … N − 1} runs
     * {@code i} from {@code N − 1} down to {@code 1} and swaps {@code i} with {@code j}, drawn uniformly from
     * {@code [0, i]} by Lemire's multiply-shift method with rejection (unbiased).
     *
     * @throws IllegalArgumentException if {@code datasetSize < 0}
     */
    static Sampler shuffled(int datasetSize, long seed) {
        return new SeededShuffle(checkSize(datasetSize), seed, 0, 1);
    }

    /**
     * {@return this sampler restricted to rank {@code rank} of {@code worldSize}} (see the class comment)
     *
     * @throws IllegalArgumentException unless {@code worldSize >= 1} and {@code 0 <= rank < worldSize}
     * @throws IllegalStateException    if this sampler is already a shard
     */
    Sampler shard(int rank, int worldSize);

    /** {@return the number of samples in the dataset} */
    int datasetSize();

    /** {@return this rank's index among {@link #worldSize()}} */
    int rank();

    /** {@return the number of ranks the epoch is split over; 1 unless sharded} */
    int worldSize();

    /** {@return how many indices {@link #epoch(long)} yields: {@code ceil(datasetSize / worldSize)}} */
    default int epochSize() {
        return worldSize() == 1 ? datasetSize() : (int) ((datasetSize() + (long) worldSize() - 1) / worldSize());
    }

    /**
     * {@return the indices this rank visits in epoch {@code epoch}, in order}: a new array of {@link #epochSize()}
     * indices into the dataset
     *
     * @throws IllegalArgumentException if {@code epoch < 0}
     */
    int[] epoch(long epoch);

    /**
     * {@return the order of epoch {@code epoch} over all ranks, before sharding}: a new array of
     * {@link #datasetSize()} indices (what every rank's {@link #epoch(long)} is cut from)
     *
     * @throws IllegalArgumentException if {@code epoch < 0}
     */
    int[] fullOrder(long epoch);

    private static int checkSize(int datasetSize) {
        if (datasetSize < 0) {
            throw new IllegalArgumentException("dataset size: " + datasetSize + " (expected: >= 0)");
        }
        return datasetSize;
    }
}
