// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One batch of decoded samples, in sampler order.
 *
 * @param epoch   the epoch it belongs to
 * @param index   its number within the epoch, from 0
 * @param items   the decoded samples, in sampler order; fewer than the batch size for the last batch (unless
 *                {@code dropLast}) and when failed samples are skipped
 * @param indices the dataset indices of {@code items}, in the same order
 * @param staging the batch as its {@link Collator} packed it, a read-only view of the bytes it wrote in a reusable
 *                off-heap buffer; {@code null} unless {@link DataLoader.Builder#staging(long, Collator)} is set.
 *                Valid until the trainer asks the epoch for its next batch (the buffer is then reused) or closes
 *                the epoch; copy it to the device before that
 * @param <T>     the decoded type
 */
public record Batch<T>(long epoch, long index, List<T> items, int[] indices, MemorySegment staging) {

    /** Copies {@code indices}, so a batch never changes under its holder. */
    public Batch {
        indices = indices.clone();
    }

    /** {@return the dataset indices of {@link #items()}, in the same order, a copy} */
    @Override
    public int[] indices() {
        return indices.clone();
    }

    /** {@return the number of items} */
    public int size() {
        return items.size();
    }

    /** Equal when epoch, index, items, indices (by content) and staging view are. */
    @Override
    public boolean equals(Object o) {
        return o instanceof Batch<?> b
                && epoch == b.epoch
                && index == b.index
                && items.equals(b.items)
                && Arrays.equals(indices, b.indices)
                && Objects.equals(staging, b.staging);
    }

    @Override
    public int hashCode() {
        return Objects.hash(epoch, index, items, Arrays.hashCode(indices), staging);
    }

    /** The batch's place, its size and its dataset indices (the first 16 of them). */
    @Override
    public String toString() {
        StringBuilder shown = new StringBuilder("[");
        for (int i = 0; i < Math.min(indices.length, 16); i++) {
            shown.append(i == 0 ? "" : ", ").append(indices[i]);
        }
        shown.append(indices.length > 16 ? ", … " + (indices.length - 16) + " more]" : "]");
        return "Batch[epoch " + epoch + ", #" + index + ", " + items.size() + " items, indices " + shown
                + (staging == null ? "" : ", staged " + staging.byteSize() + " bytes") + "]";
    }
}
