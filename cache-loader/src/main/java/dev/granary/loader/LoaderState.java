// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;

/**
 * Where a {@link DataLoader} is: the epoch and the next batch the trainer has not been handed yet, plus what the
 * order depends on, so that {@link DataLoader#resume(LoaderState)} — in this JVM or a new one — yields exactly the
 * remaining batches, and refuses a state taken from a differently configured loader. Store it in the training
 * checkpoint: it is {@link Serializable}, and {@link #encode()} / {@link #decode(String)} give a one-line text form.
 *
 * <h2>Text format</h2>
 * Version 2 ({@code granary-loader-state/2 epoch=… nextBatch=… datasetSize=… batchSize=… dropLast=…
 * shuffle=none|samples|shard-blocks seed=… blockShards=… partitioning=per-epoch|stable rank=… worldSize=…
 * ranksPerNode=… canonicalPartitions=…}) records
 * the shuffle kind, block size and partitioning. {@link #decode(String)} still reads version 1 (before shard blocks
 * and partitions) <em>at an epoch boundary</em> ({@code nextBatch=0}): as a per-sample shuffle (or none) split per
 * epoch, which is all version 1 could express. It refuses a version-1 state in the middle of an epoch: version 1 was
 * written under the Fisher–Yates order, which the Feistel order replaced (decision 0006), so the batches left would
 * be other samples — some seen twice in that epoch, others never.
 *
 * @param epoch               the epoch to continue
 * @param nextBatch           the first batch of that epoch not yet handed to the trainer
 * @param datasetSize         the dataset's number of samples
 * @param batchSize           the batch size
 * @param dropLast            whether the last partial batch is dropped
 * @param shuffle             the order of every epoch
 * @param partitioning        how the ranks split the epochs
 * @param rank                the loader's rank
 * @param worldSize           the number of ranks
 * @param ranksPerNode        the ranks sharing a node's part
 * @param canonicalPartitions the canonical partitions of {@link Partitioning#STABLE}
 */
public record LoaderState(
        long epoch,
        long nextBatch,
        int datasetSize,
        int batchSize,
        boolean dropLast,
        Shuffle shuffle,
        Partitioning partitioning,
        int rank,
        int worldSize,
        int ranksPerNode,
        int canonicalPartitions)
        implements Serializable {

    private static final String PREFIX_V1 = "granary-loader-state/1";
    private static final String PREFIX = "granary-loader-state/2";

    /**
     * Validates the values.
     *
     * @throws IllegalArgumentException if a value is out of range
     */
    public LoaderState {
        if (epoch < 0
                || nextBatch < 0
                || datasetSize < 0
                || batchSize < 1
                || shuffle == null
                || partitioning == null
                || worldSize < 1
                || rank < 0
                || rank >= worldSize
                || ranksPerNode < 1
                || worldSize % ranksPerNode != 0
                || canonicalPartitions < 1) {
            throw new IllegalArgumentException("loader state: "
                    + describe(
                            epoch,
                            nextBatch,
                            datasetSize,
                            batchSize,
                            dropLast,
                            shuffle,
                            partitioning,
                            rank,
                            worldSize,
                            ranksPerNode,
                            canonicalPartitions)
                    + " (expected: epoch, nextBatch, datasetSize >= 0, batchSize >= 1, a shuffle and a partitioning,"
                    + " 0 <= rank < worldSize, ranksPerNode dividing worldSize, canonicalPartitions >= 1)");
        }
    }

    /**
     * A state of a loader with a per-sample shuffle (or none) split per epoch, one rank per node: the fields of
     * version 1.
     *
     * @param epoch       the epoch to continue
     * @param nextBatch   the first batch of that epoch not yet handed to the trainer
     * @param datasetSize the dataset's number of samples
     * @param batchSize   the batch size
     * @param dropLast    whether the last partial batch is dropped
     * @param shuffled    whether the order is {@link Shuffle#samples(long)}, else {@link Shuffle#none()}
     * @param seed        the shuffle seed (ignored when not shuffled)
     * @param rank        the loader's rank
     * @param worldSize   the number of ranks
     * @throws IllegalArgumentException if a value is out of range
     */
    public LoaderState(
            long epoch,
            long nextBatch,
            int datasetSize,
            int batchSize,
            boolean dropLast,
            boolean shuffled,
            long seed,
            int rank,
            int worldSize) {
        this(
                epoch,
                nextBatch,
                datasetSize,
                batchSize,
                dropLast,
                shuffled ? Shuffle.samples(seed) : Shuffle.none(),
                Partitioning.PER_EPOCH,
                rank,
                worldSize,
                1,
                Sampler.DEFAULT_CANONICAL_PARTITIONS);
    }

    /** {@return whether the order is shuffled} */
    public boolean shuffled() {
        return shuffle.shuffles();
    }

    /** {@return the shuffle seed (0 when not shuffled)} */
    public long seed() {
        return shuffle.seed();
    }

    /** {@return a one-line text form, read back by {@link #decode(String)}} */
    public String encode() {
        return PREFIX + " "
                + describe(
                        epoch,
                        nextBatch,
                        datasetSize,
                        batchSize,
                        dropLast,
                        shuffle,
                        partitioning,
                        rank,
                        worldSize,
                        ranksPerNode,
                        canonicalPartitions);
    }

    /**
     * Reads the text form written by {@link #encode()} (version 2), or a version-1 state at an epoch boundary (see the
     * class comment).
     *
     * @param text the encoded state
     * @return the state
     * @throws IllegalArgumentException if the text is not an encoded state, or a version-1 state within an epoch
     */
    public static LoaderState decode(String text) {
        boolean v1 = text != null && text.startsWith(PREFIX_V1 + " ");
        if (text == null || !(v1 || text.startsWith(PREFIX + " "))) {
            throw new IllegalArgumentException("loader state text: " + (text == null ? "null" : "'" + text + "'")
                    + " (expected: the output of LoaderState.encode(), starting with '" + PREFIX + "')");
        }
        Map<String, String> values = new HashMap<>();
        for (String part : text.substring(PREFIX.length() + 1).trim().split(" ")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException(
                        "loader state text: '" + text + "': bad part '" + part + "' (expected: name=value)");
            }
            values.put(part.substring(0, eq), part.substring(eq + 1));
        }
        try {
            long epoch = Long.parseLong(values.get("epoch"));
            long nextBatch = Long.parseLong(values.get("nextBatch"));
            int datasetSize = Integer.parseInt(values.get("datasetSize"));
            int batchSize = Integer.parseInt(values.get("batchSize"));
            boolean dropLast = Boolean.parseBoolean(values.get("dropLast"));
            long seed = Long.parseLong(values.get("seed"));
            int rank = Integer.parseInt(values.get("rank"));
            int worldSize = Integer.parseInt(values.get("worldSize"));
            if (v1) {
                if (nextBatch != 0) {
                    throw new IllegalArgumentException("loader state text: '" + text + "': a version-1 state in the"
                            + " middle of epoch " + epoch + " (expected: '" + PREFIX + "', or a version-1 state at an"
                            + " epoch boundary, nextBatch=0: version 1 was written under the Fisher-Yates order that"
                            + " this version replaced, so the rest of that epoch would repeat and skip samples;"
                            + " restart the epoch with new LoaderState(" + epoch + ", 0, ...))");
                }
                return new LoaderState(
                        epoch,
                        0,
                        datasetSize,
                        batchSize,
                        dropLast,
                        Boolean.parseBoolean(values.get("shuffled")),
                        seed,
                        rank,
                        worldSize);
            }
            Shuffle shuffle = Shuffle.of(values.get("shuffle"), seed, Integer.parseInt(values.get("blockShards")));
            Partitioning partitioning = switch (values.get("partitioning")) {
                case "per-epoch" -> Partitioning.PER_EPOCH;
                case "stable" -> Partitioning.STABLE;
                case null, default ->
                    throw new IllegalArgumentException("loader state text: '" + text + "': partitioning '"
                            + values.get("partitioning") + "' (expected: per-epoch or stable)");
            };
            return new LoaderState(
                    epoch,
                    nextBatch,
                    datasetSize,
                    batchSize,
                    dropLast,
                    shuffle,
                    partitioning,
                    rank,
                    worldSize,
                    Integer.parseInt(values.get("ranksPerNode")),
                    Integer.parseInt(values.get("canonicalPartitions")));
        } catch (NumberFormatException | NullPointerException e) {
            throw new IllegalArgumentException(
                    "loader state text: '" + text + "' (expected: every field of"
                            + " LoaderState.encode(), as numbers): " + e,
                    e);
        }
    }

    private static String describe(
            long epoch,
            long nextBatch,
            int datasetSize,
            int batchSize,
            boolean dropLast,
            Shuffle shuffle,
            Partitioning partitioning,
            int rank,
            int worldSize,
            int ranksPerNode,
            int canonicalPartitions) {
        return "epoch=" + epoch + " nextBatch=" + nextBatch + " datasetSize=" + datasetSize + " batchSize="
                + batchSize + " dropLast=" + dropLast + " shuffle=" + (shuffle == null ? "null" : shuffle.kindName())
                + " seed=" + (shuffle == null ? 0 : shuffle.seed()) + " blockShards="
                + (shuffle == null ? 0 : shuffle.blockShards()) + " partitioning="
                + (partitioning == null ? "null" : partitioning == Partitioning.STABLE ? "stable" : "per-epoch")
                + " rank=" + rank + " worldSize=" + worldSize + " ranksPerNode=" + ranksPerNode
                + " canonicalPartitions=" + canonicalPartitions;
    }
}
