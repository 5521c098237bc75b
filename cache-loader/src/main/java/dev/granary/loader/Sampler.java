// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/**
 * The order in which one rank visits the samples of a dataset, epoch by epoch: a pure function of the dataset's layout
 * (its size, and its shard sizes for a {@link WebDataset}), the {@link Shuffle}, the epoch and the rank's place in the
 * job — the same on every JVM, every machine and every Granary version that keeps the documented algorithm (below;
 * decision 0006). A rank computes only its own part: {@link #epoch(long)} costs time and memory proportional to
 * {@link #epochSize()} (plus {@code O(shards)} for a dataset of shards), never an array over the whole dataset.
 * Immutable and thread-safe.
 *
 * <h2>The algorithm</h2>
 * Every permutation is a {@code KeyedPermutation}, a keyed bijection on {@code [0, m)} ({@code mix} = SplitMix64's
 * finalizer, {@code γ = 0x9E3779B97F4A7C15}, {@code combine(h, v) = mix(h + γ(v + 1))}): for {@code m >= 2^16} a
 * Feistel network evaluated index by index — {@code x} split into its {@code a = ⌈bits/2⌉} high and
 * {@code b = ⌊bits/2⌋} low bits, {@code bits = ⌈log2 m⌉}; 8 steps {@code i} with {@code k_i = combine(key, i)}, even
 * steps {@code L ^= mix(k_i + γ(R + 1)) mod 2^a}, odd steps {@code R ^= mix(k_i + γ(L + 1)) mod 2^b}; a value
 * {@code >= m} is re-encrypted until below {@code m} (cycle-walking); for {@code m < 2^16} a Fisher–Yates shuffle into
 * a table, drawing {@code mix(state += γ) >>> 32} from {@code state = key} with Lemire's unbiased bounded draw
 * ({@code KeyedPermutation} has the details). The key of permutation {@code tag} in epoch {@code e} for part
 * {@code id} is {@code combine(combine(combine(seed, tag), e), id)}; tags: 1 the epoch's sample order, 2 the epoch's
 * shard order, 3 a block's sample shuffle (further combined with the block number), 4 the stable order STABLE
 * partitions ({@code e = 0, id = 0}: fixed for the run), 5 a node's sample order under STABLE. A whole-dataset order
 * has {@code id = 0}; a STABLE node's has {@code id = firstPartition × 2^32 + endPartition}.
 * <ul>
 *   <li>{@link Shuffle#samples(long)}: position {@code p} of epoch {@code e} holds sample {@code π(p)}.</li>
 *   <li>{@link Shuffle#shardBlocks(long, int)}: position {@code i} of the shard order holds shard {@code τ(i)};
 *       blocks are {@code k} consecutive shards of it; within block {@code b} (its samples concatenated in that shard
 *       order) offset {@code o} holds the sample at offset {@code π_b(o)}.</li>
 *   <li>{@link Shuffle#none()}: the identity everywhere.</li>
 * </ul>
 *
 * <h2>Ranks, nodes and partitions</h2>
 * {@code W} ranks form {@code M = W / g} nodes of {@code g} ranks ({@code ranksPerNode}); rank {@code r} is local rank
 * {@code r mod g} of node {@code r / g}. Every rank yields {@code L} indices per epoch, the same {@code L} for all (so
 * collectives run the same number of steps); a part shorter than that is padded by repeating it from its start, as
 * PyTorch's {@code DistributedSampler} does with {@code drop_last=False}.
 * <ul>
 *   <li>{@link Partitioning#PER_EPOCH}, samples or none: {@code L = ⌈N / W⌉}; the epoch's order is padded to
 *       {@code W × L} by repeating its first entries and rank {@code r} takes positions {@code r, r + W, …}
 *       (DistributedSampler exactly; {@code g} does not matter). At most {@code W − 1} samples are seen twice.</li>
 *   <li>{@link Partitioning#PER_EPOCH}, shard blocks: {@code L = ⌈N / W⌉}; node {@code n} takes the span
 *       {@code [n g L, (n + 1) g L)} of the padded order and its local rank {@code l} the positions {@code l, l + g, …}
 *       of that span: every shard is read by one node (two at a span's edge), and a node's ranks read the same
 *       blocks at the same time.</li>
 *   <li>{@link Partitioning#STABLE}: the units (shards for a dataset of shards, else samples) are put in a stable
 *       order (tag 4) and the samples, concatenated in that order, are cut into {@code P} canonical partitions at
 *       {@code ⌊c N / P⌋}; a shard belongs to the partition holding its first sample. Node {@code n} owns partitions
 *       {@code [⌊n P / M⌋, ⌊(n + 1) P / M⌋)}: the same part every epoch, and a union of whole canonical partitions
 *       for every {@code M <= P}, so a job restarted on another number of nodes moves whole partitions. Each epoch
 *       the node's part is ordered by the shuffle (shard blocks within the node's shards; for samples over a dataset
 *       of shards, one block of all of them), padded to {@code g × L}, {@code L = ⌈largest node part / g⌉}, and split
 *       strided among the node's ranks.</li>
 * </ul>
 */
public sealed interface Sampler permits EpochOrder {

    /**
     * The default number of canonical partitions for {@link Partitioning#STABLE}: 960 = 2^6 × 3 × 5, so that 1–6, 8,
     * 10, 12, 15, 16, 20, 24, 30, 32, 40, 48, 60, 64, … nodes get exactly equal numbers of partitions.
     */
    int DEFAULT_CANONICAL_PARTITIONS = 960;

    /**
     * {@return a sampler visiting {@code 0, 1, …, datasetSize − 1} in order, every epoch}
     *
     * @throws IllegalArgumentException if {@code datasetSize < 0}
     */
    static Sampler sequential(int datasetSize) {
        return of(datasetSize, Shuffle.none());
    }

    /**
     * {@return a sampler visiting every index once per epoch in a permutation derived from {@code (seed, epoch)}}:
     * {@code of(datasetSize, Shuffle.samples(seed))}.
     *
     * @throws IllegalArgumentException if {@code datasetSize < 0}
     */
    static Sampler shuffled(int datasetSize, long seed) {
        return of(datasetSize, Shuffle.samples(seed));
    }

    /**
     * {@return a sampler over {@code datasetSize} samples without shards}
     *
     * @param datasetSize the samples, {@code >= 0}
     * @param shuffle     {@link Shuffle#none()} or {@link Shuffle#samples(long)}
     * @throws IllegalArgumentException if {@code datasetSize < 0}, the shuffle is null, or it is
     *                                  {@link Shuffle#shardBlocks(long, int)} (there are no shards to block)
     */
    static Sampler of(int datasetSize, Shuffle shuffle) {
        if (datasetSize < 0) {
            throw new IllegalArgumentException("dataset size: " + datasetSize + " (expected: >= 0)");
        }
        return EpochOrder.unsharded(datasetSize, checkShuffle(shuffle), null);
    }

    /**
     * {@return a sampler over a dataset of shards}: shard {@code s} holds {@code shardSizes[s]} consecutive samples,
     * the first shard's first (as {@link WebDataset} numbers them)
     *
     * @throws IllegalArgumentException if a size is negative, the sizes add up past {@code Integer.MAX_VALUE}, or the
     *                                  shuffle is null
     */
    static Sampler ofShards(int[] shardSizes, Shuffle shuffle) {
        checkShuffle(shuffle);
        return ofBoundaries(EpochOrder.boundaries(shardSizes), shuffle);
    }

    /**
     * {@return the sampler a loader over {@code dataset} uses}: over its shards for a {@link WebDataset}, else over its
     * samples
     *
     * @throws IllegalArgumentException if the dataset or shuffle is null, or a shard-block shuffle is asked of a
     *                                  dataset without shards
     */
    static Sampler of(Dataset dataset, Shuffle shuffle) {
        if (dataset == null) {
            throw new IllegalArgumentException("dataset: null (expected: a Dataset)");
        }
        if (dataset instanceof ShardedDataset web) {
            int[] first = new int[web.shardCount() + 1];
            for (int s = 0; s <= web.shardCount(); s++) {
                first[s] = web.firstSample(s);
            }
            return ofBoundaries(first, checkShuffle(shuffle));
        }
        return of(dataset.size(), shuffle);
    }

    private static Sampler ofBoundaries(int[] firstSample, Shuffle shuffle) {
        return EpochOrder.unsharded(firstSample[firstSample.length - 1], shuffle, firstSample);
    }

    private static Shuffle checkShuffle(Shuffle shuffle) {
        if (shuffle == null) {
            throw new IllegalArgumentException("shuffle: null (expected: Shuffle.none(), Shuffle.samples(seed) or"
                    + " Shuffle.shardBlocks(seed, k))");
        }
        return shuffle;
    }

    /**
     * {@return this sampler restricted to rank {@code rank} of {@code worldSize}, split per epoch}:
     * {@code shard(rank, worldSize, Partitioning.PER_EPOCH)}
     *
     * @throws IllegalArgumentException unless {@code worldSize >= 1} and {@code 0 <= rank < worldSize}
     * @throws IllegalStateException    if this sampler is already a shard
     */
    Sampler shard(int rank, int worldSize);

    /**
     * {@return this sampler restricted to rank {@code rank} of {@code worldSize}}, one rank per node and
     * {@link #DEFAULT_CANONICAL_PARTITIONS} canonical partitions
     *
     * @throws IllegalArgumentException as {@link #shard(int, int, Partitioning, int, int)}
     * @throws IllegalStateException    if this sampler is already a shard
     */
    Sampler shard(int rank, int worldSize, Partitioning partitioning);

    /**
     * {@return this sampler restricted to rank {@code rank} of {@code worldSize}} (see the class comment)
     *
     * @param rank                this rank, {@code 0 <= rank < worldSize}
     * @param worldSize           the ranks, {@code >= 1}
     * @param partitioning        how the epochs are split
     * @param ranksPerNode        ranks sharing one node's part, dividing {@code worldSize}
     * @param canonicalPartitions {@code P} for {@link Partitioning#STABLE}, in {@code [1, 2^24]}
     * @throws IllegalArgumentException if a value is out of range, or under STABLE there are more nodes than
     *                                  canonical partitions or a node would get no sample
     * @throws IllegalStateException    if this sampler is already a shard
     */
    Sampler shard(int rank, int worldSize, Partitioning partitioning, int ranksPerNode, int canonicalPartitions);

    /** {@return the number of samples in the dataset} */
    int datasetSize();

    /** {@return the number of shards the order knows of; 0 for a dataset without shards} */
    int shardCount();

    /** {@return the shuffle} */
    Shuffle shuffle();

    /** {@return how the ranks split the epochs} */
    Partitioning partitioning();

    /** {@return the ranks per node; 1 unless sharded with more} */
    int ranksPerNode();

    /** {@return the canonical partitions of {@link Partitioning#STABLE}} */
    int canonicalPartitions();

    /** {@return this rank's index among {@link #worldSize()}} */
    int rank();

    /** {@return the number of ranks the epoch is split over; 1 unless sharded} */
    int worldSize();

    /** {@return how many indices {@link #epoch(long)} yields: the same for every rank (see the class comment)} */
    int epochSize();

    /**
     * {@return the indices this rank visits in epoch {@code epoch}, in order}: a new array of {@link #epochSize()}
     * indices into the dataset
     *
     * @throws IllegalArgumentException if {@code epoch < 0}
     */
    int[] epoch(long epoch);

    /**
     * {@return the order of epoch {@code epoch} over all ranks, without padding}: a new array of
     * {@link #datasetSize()} indices — for PER_EPOCH the order every rank's part is cut from, for STABLE the nodes'
     * orders one after the other. Costs the whole dataset: for tests and tools, not for training.
     *
     * @throws IllegalArgumentException if {@code epoch < 0}
     */
    int[] fullOrder(long epoch);
}
