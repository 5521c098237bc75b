// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.Arrays;

/**
 * The {@link Sampler}: every shuffle, partitioning and layout, computed per rank from {@link KeyedPermutation}s so
 * that a rank's cost is its own part (plus {@code O(shards)} for a dataset of shards), never an {@code int[]} over the
 * whole dataset. The algorithm is documented on {@link Sampler} and pinned by {@code SamplerTest}. Immutable and
 * thread-safe (an {@link #epoch(long)} call builds its own working state).
 */
final class EpochOrder implements Sampler {

    /** Of the order's keys, which one: so that no two permutations of an epoch share a key. */
    static final long TAG_SAMPLES = 1;

    static final long TAG_SHARDS = 2;
    static final long TAG_BLOCK = 3;
    static final long TAG_STABLE = 4;
    static final long TAG_NODE = 5;
    static final int MAX_CANONICAL_PARTITIONS = 1 << 24;

    private final int n;
    private final Shuffle shuffle;
    /** Shard {@code s} holds {@code [firstSample[s], firstSample[s + 1])}; null for a dataset without shards. */
    private final int[] firstSample;

    private final boolean sharded;
    private final Partitioning partitioning;
    private final int rank;
    private final int worldSize;
    private final int ranksPerNode;
    private final int canonicalPartitions;
    private final int perRank;
    // STABLE: this rank's node part.
    private final long identity;
    private final long partStart;
    private final long partEnd;
    private final int[] partShards;
    private final long partSize;

    private EpochOrder(
            int n,
            Shuffle shuffle,
            int[] firstSample,
            boolean sharded,
            Partitioning partitioning,
            int rank,
            int worldSize,
            int ranksPerNode,
            int canonicalPartitions) {
        this.n = n;
        this.shuffle = shuffle;
        this.firstSample = firstSample;
        this.sharded = sharded;
        this.partitioning = partitioning;
        this.rank = rank;
        this.worldSize = worldSize;
        this.ranksPerNode = ranksPerNode;
        this.canonicalPartitions = canonicalPartitions;
        if (partitioning == Partitioning.PER_EPOCH) {
            perRank = worldSize == 1 ? n : (int) ((n + (long) worldSize - 1) / worldSize);
            identity = 0;
            partStart = 0;
            partEnd = n;
            partShards = null;
            partSize = n;
            return;
        }
        int nodes = worldSize / ranksPerNode;
        int node = rank / ranksPerNode;
        int p = canonicalPartitions;
        if (nodes > p) {
            throw new IllegalArgumentException("STABLE partitioning over " + nodes + " nodes (" + worldSize
                    + " ranks, " + ranksPerNode + " per node): more nodes than canonical partitions, " + p
                    + " (expected: at most " + p + " nodes; raise canonicalPartitions)");
        }
        int firstPartition = (int) ((long) node * p / nodes);
        int endPartition = (int) ((long) (node + 1) * p / nodes);
        identity = ((long) firstPartition << 32) | endPartition;
        long[] nodeSizes = new long[nodes];
        if (firstSample == null) {
            for (int m = 0; m < nodes; m++) {
                nodeSizes[m] = boundary((int) ((long) (m + 1) * p / nodes)) - boundary((int) ((long) m * p / nodes));
            }
            partStart = boundary(firstPartition);
            partEnd = boundary(endPartition);
            partShards = null;
        } else {
            // The stable shard sequence; a shard belongs to the canonical partition holding its first sample.
            int shards = firstSample.length - 1;
            int[] stable = stableShards(shards);
            int from = -1;
            int to = -1;
            long x = 0;
            for (int i = 0; i < shards; i++) {
                int size = shardSize(stable[i]);
                int c = n == 0 ? 0 : (int) Math.min(p - 1, ((x + 1) * p - 1) / n);
                int m = (int) (((long) (c + 1) * nodes - 1) / p);
                nodeSizes[m] += size;
                if (m == node) {
                    if (from < 0) {
                        from = i;
                    }
                    to = i + 1;
                }
                x += size;
            }
            partShards = from < 0 ? new int[0] : Arrays.copyOfRange(stable, from, to);
            partStart = 0;
            partEnd = nodeSizes[node];
        }
        long max = 0;
        for (int m = 0; m < nodes; m++) {
            if (nodeSizes[m] == 0) {
                throw new IllegalArgumentException("STABLE partitioning: node " + m + " of " + nodes + " gets no"
                        + " samples (" + n + " samples"
                        + (firstSample == null ? "" : " in " + (firstSample.length - 1) + " shards") + ", " + p
                        + " canonical partitions; expected:"
                        + " a part for every node: fewer nodes, or more " + (firstSample == null ? "samples" : "shards")
                        + ")");
            }
            max = Math.max(max, nodeSizes[m]);
        }
        partSize = partEnd - partStart;
        perRank = (int) ((max + ranksPerNode - 1) / ranksPerNode);
    }

    static EpochOrder unsharded(int n, Shuffle shuffle, int[] firstSample) {
        if (shuffle.kind() == Shuffle.Kind.SHARD_BLOCKS && firstSample == null) {
            throw new IllegalArgumentException("shuffle: " + shuffle + " over a dataset without shards (expected:"
                    + " a WebDataset, whose tar shards the blocks are made of; for one object per sample use"
                    + " Shuffle.samples(seed))");
        }
        return new EpochOrder(
                n, shuffle, firstSample, false, Partitioning.PER_EPOCH, 0, 1, 1, Sampler.DEFAULT_CANONICAL_PARTITIONS);
    }

    /** {@return shard boundaries for shards of the given sizes} @throws IllegalArgumentException on a bad size */
    static int[] boundaries(int[] shardSizes) {
        if (shardSizes == null) {
            throw new IllegalArgumentException("shard sizes: null (expected: the samples in each shard)");
        }
        int[] first = new int[shardSizes.length + 1];
        long total = 0;
        for (int s = 0; s < shardSizes.length; s++) {
            if (shardSizes[s] < 0) {
                throw new IllegalArgumentException("shard " + s + " size: " + shardSizes[s] + " (expected: >= 0)");
            }
            total += shardSizes[s];
            if (total > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("samples in " + (s + 1) + " shards: " + total + " (expected: at"
                        + " most " + Integer.MAX_VALUE + ", the int index limit)");
            }
            first[s + 1] = (int) total;
        }
        return first;
    }

    // ------------------------------------------------------------------------------------------- the Sampler API

    @Override
    public Sampler shard(int rank, int worldSize) {
        return shard(rank, worldSize, Partitioning.PER_EPOCH);
    }

    @Override
    public Sampler shard(int rank, int worldSize, Partitioning partitioning) {
        return shard(rank, worldSize, partitioning, 1, Sampler.DEFAULT_CANONICAL_PARTITIONS);
    }

    @Override
    public Sampler shard(
            int rank, int worldSize, Partitioning partitioning, int ranksPerNode, int canonicalPartitions) {
        if (sharded) {
            throw new IllegalStateException("sampler is already shard " + this.rank + " of " + this.worldSize
                    + " (expected: shard an unsharded sampler)");
        }
        checkShard(rank, worldSize, partitioning, ranksPerNode, canonicalPartitions);
        return new EpochOrder(
                n, shuffle, firstSample, true, partitioning, rank, worldSize, ranksPerNode, canonicalPartitions);
    }

    static void checkShard(
            int rank, int worldSize, Partitioning partitioning, int ranksPerNode, int canonicalPartitions) {
        if (worldSize < 1) {
            throw new IllegalArgumentException("world size: " + worldSize + " (expected: >= 1)");
        }
        if (rank < 0 || rank >= worldSize) {
            throw new IllegalArgumentException(
                    "rank: " + rank + " (expected: 0 <= rank < world size " + worldSize + ")");
        }
        if (partitioning == null) {
            throw new IllegalArgumentException("partitioning: null (expected: Partitioning.PER_EPOCH or STABLE)");
        }
        if (ranksPerNode < 1 || worldSize % ranksPerNode != 0) {
            throw new IllegalArgumentException("ranks per node: " + ranksPerNode + " (expected: >= 1 and dividing"
                    + " the world size " + worldSize + ")");
        }
        if (canonicalPartitions < 1 || canonicalPartitions > MAX_CANONICAL_PARTITIONS) {
            throw new IllegalArgumentException("canonical partitions: " + canonicalPartitions + " (expected: 1.."
                    + MAX_CANONICAL_PARTITIONS + ")");
        }
    }

    @Override
    public int datasetSize() {
        return n;
    }

    @Override
    public int rank() {
        return rank;
    }

    @Override
    public int worldSize() {
        return worldSize;
    }

    @Override
    public Shuffle shuffle() {
        return shuffle;
    }

    @Override
    public Partitioning partitioning() {
        return partitioning;
    }

    @Override
    public int ranksPerNode() {
        return ranksPerNode;
    }

    @Override
    public int canonicalPartitions() {
        return canonicalPartitions;
    }

    @Override
    public int shardCount() {
        return firstSample == null ? 0 : firstSample.length - 1;
    }

    @Override
    public int epochSize() {
        return perRank;
    }

    @Override
    public int[] epoch(long epoch) {
        checkEpoch(epoch);
        int[] out = new int[perRank];
        int g = ranksPerNode;
        int local = rank % g;
        if (partitioning == Partitioning.STABLE) {
            NodeOrder order = new NodeOrder(epoch);
            for (int j = 0; j < perRank; j++) {
                long q = local + (long) j * g;
                out[j] = order.at(q < partSize ? q : q % partSize); // padding repeats the node's order from its start
            }
        } else if (shuffle.kind() == Shuffle.Kind.SHARD_BLOCKS) {
            BlockOrder order = new BlockOrder(allShards(), epoch, 0, true, shuffle.blockShards(), true);
            long base = (long) (rank / g) * g * perRank; // the node's contiguous span of the padded order
            for (int j = 0; j < perRank; j++) {
                long p = base + local + (long) j * g;
                out[j] = order.at(p < n ? p : p % n);
            }
        } else {
            KeyedPermutation pi = shuffle.shuffles() ? new KeyedPermutation(n, key(TAG_SAMPLES, epoch, 0)) : null;
            for (int j = 0; j < perRank; j++) {
                long p = rank + (long) j * worldSize;
                int position = (int) (p < n ? p : p % n);
                out[j] = pi == null ? position : pi.applyAsInt(position);
            }
        }
        return out;
    }

    @Override
    public int[] fullOrder(long epoch) {
        checkEpoch(epoch);
        int[] out = new int[n];
        if (partitioning == Partitioning.PER_EPOCH) {
            EpochOrder whole = new EpochOrder(
                    n, shuffle, firstSample, false, Partitioning.PER_EPOCH, 0, 1, 1, canonicalPartitions);
            return whole.epoch(epoch);
        }
        int at = 0;
        for (int node = 0; node < worldSize / ranksPerNode; node++) {
            EpochOrder first = new EpochOrder(
                    n,
                    shuffle,
                    firstSample,
                    true,
                    partitioning,
                    node * ranksPerNode,
                    worldSize,
                    ranksPerNode,
                    canonicalPartitions);
            NodeOrder order = first.new NodeOrder(epoch);
            for (long q = 0; q < first.partSize; q++) {
                out[at++] = order.at(q);
            }
        }
        return out;
    }

    /** {@return the samples of this rank's node part under STABLE, in the stable order; the whole dataset else} */
    int[] nodePart() {
        if (partitioning == Partitioning.PER_EPOCH) {
            int[] all = new int[n];
            Arrays.setAll(all, i -> i);
            return all;
        }
        int[] out = new int[(int) partSize];
        if (partShards != null) {
            int at = 0;
            for (int s : partShards) {
                for (int i = firstSample[s]; i < firstSample[s + 1]; i++) {
                    out[at++] = i;
                }
            }
        } else {
            KeyedPermutation sigma = shuffle.shuffles() ? new KeyedPermutation(n, key(TAG_STABLE, 0, 0)) : null;
            for (int q = 0; q < partSize; q++) {
                long u = partStart + q;
                out[q] = (int) (sigma == null ? u : sigma.apply(u));
            }
        }
        return out;
    }

    @Override
    public String toString() {
        return "Sampler[" + n + " samples" + (firstSample == null ? "" : " in " + shardCount() + " shards") + ", "
                + shuffle + ", rank " + rank + "/" + worldSize + ", " + partitioning
                + (ranksPerNode == 1 ? "" : ", " + ranksPerNode + " ranks per node")
                + (partitioning == Partitioning.STABLE ? ", " + canonicalPartitions + " canonical partitions" : "")
                + "]";
    }

    // ------------------------------------------------------------------------------------------------ the orders

    /** {@return the key of permutation {@code tag} of {@code epoch} for part {@code identity}} */
    private long key(long tag, long epoch, long identity) {
        return KeyedPermutation.combine(
                KeyedPermutation.combine(KeyedPermutation.combine(shuffle.seed(), tag), epoch), identity);
    }

    /** {@return where canonical partition {@code c} starts in the stable sequence of samples: floor(c × N / P)} */
    private long boundary(int c) {
        return (long) c * n / canonicalPartitions;
    }

    private int shardSize(int shard) {
        return firstSample[shard + 1] - firstSample[shard];
    }

    private int[] allShards() {
        int[] all = new int[firstSample.length - 1];
        Arrays.setAll(all, i -> i);
        return all;
    }

    /** The shards in the seeded stable order that STABLE partitions (their own order without a shuffle). */
    private int[] stableShards(int shards) {
        int[] stable = new int[shards];
        KeyedPermutation sigma = shuffle.shuffles() ? new KeyedPermutation(shards, key(TAG_STABLE, 0, 0)) : null;
        for (int i = 0; i < shards; i++) {
            stable[i] = sigma == null ? i : sigma.applyAsInt(i);
        }
        return stable;
    }

    private static void checkEpoch(long epoch) {
        if (epoch < 0) {
            throw new IllegalArgumentException("epoch: " + epoch + " (expected: >= 0)");
        }
    }

    /** The epoch's order of this rank's node part under STABLE, position by position. */
    private final class NodeOrder {
        private final BlockOrder blocks;
        private final KeyedPermutation within;
        private final KeyedPermutation sigma;

        NodeOrder(long epoch) {
            if (partShards != null) {
                Shuffle.Kind kind = shuffle.kind();
                blocks = new BlockOrder(
                        partShards,
                        epoch,
                        identity,
                        kind == Shuffle.Kind.SHARD_BLOCKS,
                        kind == Shuffle.Kind.SHARD_BLOCKS ? shuffle.blockShards() : Integer.MAX_VALUE,
                        kind != Shuffle.Kind.NONE);
                within = null;
                sigma = null;
            } else {
                blocks = null;
                within = shuffle.shuffles() ? new KeyedPermutation(partSize, key(TAG_NODE, epoch, identity)) : null;
                sigma = shuffle.shuffles() ? new KeyedPermutation(n, key(TAG_STABLE, 0, 0)) : null;
            }
        }

        int at(long q) {
            if (blocks != null) {
                return blocks.at(q);
            }
            long u = partStart + (within == null ? q : within.apply(q));
            return (int) (sigma == null ? u : sigma.apply(u));
        }
    }

    /**
     * A list of shards in an epoch's order: permuted (or not), cut into blocks of {@code k} consecutive shards, the
     * samples of a block shuffled among themselves (or not). Looks a position up in {@code O(log shards)}; keeps the
     * last block's permutation, since a rank's positions rarely leave a block and come back.
     */
    private final class BlockOrder {
        private final int[] shards;
        private final long[] ends;
        private final int k;
        private final boolean within;
        private final long blockKey;
        private int block = -1;
        private long blockStart;
        private KeyedPermutation perm;

        BlockOrder(int[] base, long epoch, long identity, boolean permute, int k, boolean within) {
            int s = base.length;
            shards = new int[s];
            KeyedPermutation p = permute ? new KeyedPermutation(s, key(TAG_SHARDS, epoch, identity)) : null;
            ends = new long[s];
            long total = 0;
            for (int i = 0; i < s; i++) {
                shards[i] = base[p == null ? i : p.applyAsInt(i)];
                total += shardSize(shards[i]);
                ends[i] = total;
            }
            this.k = k;
            this.within = within;
            this.blockKey = key(TAG_BLOCK, epoch, identity);
        }

        int at(long position) {
            int i = shardAt(position);
            int b = i / k;
            if (b != block) {
                int first = b * k;
                int end = (int) Math.min((long) first + k, shards.length);
                blockStart = first == 0 ? 0 : ends[first - 1];
                block = b;
                perm = within
                        ? new KeyedPermutation(ends[end - 1] - blockStart, KeyedPermutation.combine(blockKey, b))
                        : null;
            }
            if (perm != null) {
                position = blockStart + perm.apply(position - blockStart);
                i = shardAt(position);
            }
            long shardStart = i == 0 ? 0 : ends[i - 1];
            return firstSample[shards[i]] + (int) (position - shardStart);
        }

        /** {@return the smallest i with ends[i] > position} */
        private int shardAt(long position) {
            int lo = 0;
            int hi = ends.length - 1;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (ends[mid] > position) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            return lo;
        }
    }
}
