// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.io.Serializable;

/**
 * How a {@link DataLoader} orders each epoch; a pure function of the value, the epoch and the dataset's layout, the
 * same on every JVM ({@link Sampler} documents the algorithm).
 *
 * <ul>
 *   <li>{@link #samples(long)}: a global per-sample shuffle, a fresh permutation of all samples every epoch — the best
 *       mixing, and for a dataset larger than the cache one small read per uncached sample;</li>
 *   <li>{@link #shardBlocks(long, int)}: for shards ({@link WebDataset}): permute the shards, cut them into blocks of
 *       {@code k}, shuffle the samples within each block. Reads stay inside {@code k} shards at a time, so shards can
 *       be read whole, in large sequential parts; the price is weaker mixing (see docs/benchmarks.md,
 *       "Shuffle quality");</li>
 *   <li>{@link #none()}: the dataset's order, every epoch.</li>
 * </ul>
 *
 * <p>Immutable, thread-safe and {@link Serializable} (it is part of {@link LoaderState}).
 */
public final class Shuffle implements Serializable {

    private static final long serialVersionUID = 1L;
    private static final Shuffle NONE = new Shuffle(Kind.NONE, 0, 0);

    /** The kind of order. */
    public enum Kind {
        /** The dataset's own order. */
        NONE,
        /** A permutation of all samples per epoch. */
        SAMPLES,
        /** Shards permuted, cut into blocks of {@link #blockShards()}, samples shuffled within a block. */
        SHARD_BLOCKS
    }

    private final Kind kind;
    private final long seed;
    private final int blockShards;

    private Shuffle(Kind kind, long seed, int blockShards) {
        this.kind = kind;
        this.seed = seed;
        this.blockShards = blockShards;
    }

    /** {@return no shuffle: every epoch visits the samples in the dataset's order} */
    public static Shuffle none() {
        return NONE;
    }

    /**
     * {@return the global per-sample shuffle}: epoch {@code e} visits a permutation of all samples derived from
     * {@code (seed, e)}. {@code DataLoader.Builder.shuffle(seed)} is its shorthand.
     *
     * @param seed any value
     */
    public static Shuffle samples(long seed) {
        return new Shuffle(Kind.SAMPLES, seed, 0);
    }

    /**
     * {@return the shard-block shuffle}: every epoch the shards are permuted, cut into blocks of {@code k} consecutive
     * shards, and the samples of a block are shuffled among themselves; blocks follow each other. Needs a dataset of
     * shards ({@link WebDataset}): building a loader over another dataset with it fails.
     *
     * @param seed any value
     * @param k    shards per block, {@code >= 1}: larger mixes better and holds more shards' bytes at once
     * @throws IllegalArgumentException if {@code k < 1}
     */
    public static Shuffle shardBlocks(long seed, int k) {
        if (k < 1) {
            throw new IllegalArgumentException("shards per block: " + k + " (expected: >= 1)");
        }
        return new Shuffle(Kind.SHARD_BLOCKS, seed, k);
    }

    /** {@return the kind of order} */
    public Kind kind() {
        return kind;
    }

    /** {@return the seed; 0 for {@link #none()}} */
    public long seed() {
        return seed;
    }

    /** {@return shards per block for {@link Kind#SHARD_BLOCKS}, else 0} */
    public int blockShards() {
        return blockShards;
    }

    /** {@return whether the order changes with the seed and epoch} */
    public boolean shuffles() {
        return kind != Kind.NONE;
    }

    /**
     * {@return the kind's name in {@link LoaderState#encode()}: {@code none}, {@code samples}, {@code shard-blocks}}
     */
    String kindName() {
        return switch (kind) {
            case NONE -> "none";
            case SAMPLES -> "samples";
            case SHARD_BLOCKS -> "shard-blocks";
        };
    }

    /** {@return the shuffle of kind name {@code name}} @throws IllegalArgumentException for an unknown name */
    static Shuffle of(String name, long seed, int blockShards) {
        return switch (name) {
            case "none" -> NONE;
            case "samples" -> samples(seed);
            case "shard-blocks" -> shardBlocks(seed, blockShards);
            default ->
                throw new IllegalArgumentException(
                        "shuffle: '" + name + "' (expected: none, samples or" + " shard-blocks)");
        };
    }

    private Object readResolve() {
        return kind == Kind.NONE ? NONE : this;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Shuffle s && s.kind == kind && s.seed == seed && s.blockShards == blockShards;
    }

    @Override
    public int hashCode() {
        return (kind.hashCode() * 31 + Long.hashCode(seed)) * 31 + blockShards;
    }

    @Override
    public String toString() {
        return switch (kind) {
            case NONE -> "Shuffle.none()";
            case SAMPLES -> "Shuffle.samples(" + seed + ")";
            case SHARD_BLOCKS -> "Shuffle.shardBlocks(" + seed + ", " + blockShards + ")";
        };
    }
}
