// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * Packs a batch's decoded items into one off-heap staging buffer, so the trainer moves the whole batch to its device
 * in one copy (from page-locked memory with {@link DataLoader.Builder#pinnedStaging(boolean)}). Runs on a worker
 * thread once every item of the batch is decoded; must be thread-safe.
 *
 * @param <T> the decoded type
 */
@FunctionalInterface
public interface Collator<T> {

    /**
     * Writes a batch into {@code staging}.
     *
     * @param items   the batch's items, in sampler order
     * @param staging a reusable buffer of the configured size; its previous contents are unspecified
     * @return the number of bytes written, from offset 0, in {@code [0, staging.byteSize()]}
     * @throws Exception if the batch cannot be collated: the batch fails, naming its number and this cause
     */
    long collate(List<T> items, MemorySegment staging) throws Exception;
}
