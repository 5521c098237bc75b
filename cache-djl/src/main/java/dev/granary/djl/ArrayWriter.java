// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import java.lang.foreign.MemorySegment;

/**
 * Writes one decoded item's values of one array into its slot of a batch: the slot is that item's row of the array,
 * in the off-heap staging buffer the batch is collated into.
 *
 * {@snippet :
 * // 784 pixels of one byte each, as float32 in [0, 1]
 * ArrayWriter<Image> pixels = (image, slot) -> {
 *     for (int i = 0; i < 784; i++) {
 *         slot.setAtIndex(ValueLayout.JAVA_FLOAT, i, (image.pixels()[i] & 0xff) / 255f);
 *     }
 * };
 * }
 *
 * <p>Runs on the loader's worker threads, for several batches at once: it must be thread-safe.
 *
 * @param <T> the decoded type
 */
@FunctionalInterface
public interface ArrayWriter<T> {

    /**
     * Writes {@code item}'s values into {@code slot}.
     *
     * @param item the decoded item
     * @param slot exactly the item's bytes of the array: {@code shape.size() × type.getNumOfBytes()} bytes, zeroed,
     *             in the engine's layout (row-major, native byte order: write with {@code ValueLayout.JAVA_FLOAT},
     *             {@code JAVA_INT}, … which use it). Valid only during the call
     * @throws Exception if the item cannot be written: its batch fails, naming the array and this cause
     */
    void write(T item, MemorySegment slot) throws Exception;
}
