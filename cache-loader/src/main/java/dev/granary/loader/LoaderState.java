// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.io.Serializable;

/**
 * Where a {@link DataLoader} is: the epoch and the next batch the trainer has not been handed yet, plus what the
 * order depends on, so that {@link DataLoader#resume(LoaderState)} — in this JVM or a new one — yields exactly the
 * remaining batches, and refuses a state taken from a differently configured loader. Store it in the training
 * checkpoint: it is {@link Serializable}, and {@link #encode()} / {@link #decode(String)} give a one-line text form.
 *
 * @param epoch       the epoch to continue
 * @param nextBatch   the first batch of that epoch not yet handed to the trainer
 * @param datasetSize the dataset's number of samples
 * @param batchSize   the batch size
 * @param dropLast    whether the last partial batch is dropped
 * @param shuffled    whether the order is shuffled
 * @param seed        the shuffle seed (0 when sequential)
 * @param rank        the loader's rank
 * @param worldSize   the number of ranks
 */
public record LoaderState(long epoch, long nextBatch, int datasetSize, int batchSize, boolean dropLast,
        boolean shuffled, long seed, int rank, int worldSize) implements Serializable {

    private static final String PREFIX = "granary-loader-state/1";

    /**
     * Validates the values.
     *
     * @throws IllegalArgumentException if a value is out of range
     */
    public LoaderState {
        if (epoch < 0 || nextBatch < 0 || datasetSize < 0 || batchSize < 1 || worldSize < 1 || rank < 0
                || rank >= worldSize) {
            throw new IllegalArgumentException("loader state: " + describe(epoch, nextBatch, datasetSize, batchSize,
                    dropLast, shuffled, seed, rank, worldSize) + " (expected: epoch, nextBatch, datasetSize >= 0,"
                    + " batchSize >= 1, 0 <= rank < worldSize)");
        }
    }

    /** {@return a one-line text form, read back by {@link #decode(String)}} */
    public String encode() {
        return PREFIX + " " + describe(epoch, nextBatch, datasetSize, batchSize, dropLast, shuffled, seed, rank,
                worldSize);
    }

    /**
     * Reads the text form written by {@link #encode()}.
     *
     * @param text the encoded state
     * @return the state
     * @throws IllegalArgumentException if the text is not an encoded state
     */
    public static LoaderState decode(String text) {
        if (text == null || !text.startsWith(PREFIX + " ")) {
            throw new IllegalArgumentException("loader state text: " + (text == null ? "null" : "'" + text + "'")
                    + " (expected: the output of LoaderState.encode(), starting with '" + PREFIX + "')");
        }
        java.util.Map<String, String> values = new java.util.HashMap<>();
        for (String part : text.substring(PREFIX.length() + 1).trim().split(" ")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("loader state text: '" + text + "': bad part '" + part
                        + "' (expected: name=value)");
            }
            values.put(part.substring(0, eq), part.substring(eq + 1));
        }
        try {
            return new LoaderState(Long.parseLong(values.get("epoch")), Long.parseLong(values.get("nextBatch")),
                    Integer.parseInt(values.get("datasetSize")), Integer.parseInt(values.get("batchSize")),
                    Boolean.parseBoolean(values.get("dropLast")), Boolean.parseBoolean(values.get("shuffled")),
                    Long.parseLong(values.get("seed")), Integer.parseInt(values.get("rank")),
                    Integer.parseInt(values.get("worldSize")));
        } catch (NumberFormatException | NullPointerException e) {
            throw new IllegalArgumentException("loader state text: '" + text + "' (expected: every field of"
                    + " LoaderState.encode(), as numbers): " + e, e);
        }
    }

    private static String describe(long epoch, long nextBatch, int datasetSize, int batchSize, boolean dropLast,
            boolean shuffled, long seed, int rank, int worldSize) {
        return "epoch=" + epoch + " nextBatch=" + nextBatch + " datasetSize=" + datasetSize + " batchSize="
                + batchSize + " dropLast=" + dropLast + " shuffled=" + shuffled + " seed=" + seed + " rank=" + rank
                + " worldSize=" + worldSize;
    }
}
