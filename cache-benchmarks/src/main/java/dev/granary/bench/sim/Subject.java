// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import java.io.IOException;

/**
 * A replacement policy under simulation, sized in items. Not thread-safe: a simulation drives one instance from one
 * thread, calling {@link #startEpoch} before each epoch's accesses and {@link #endEpoch} after them, then
 * {@link #close()} once.
 */
interface Subject extends AutoCloseable {

    /** {@return the column name} */
    String name();

    /** Called before the first access of epoch {@code epoch} (0, 1, 2, …). */
    void startEpoch(int epoch);

    /** Called after the last access of epoch {@code epoch}. */
    default void endEpoch(int epoch) {}

    /**
     * Accesses {@code item}; on a miss the subject may cache it.
     *
     * @return whether it was a hit
     * @throws IOException if a subject backed by real tiers fails to read
     */
    boolean access(int item) throws IOException;

    /** {@return the most items this subject can hold at once: the denominator of its ceiling} */
    int ceilingItems();

    /** {@return how many items that never occur in the trace are resident now (0 for most subjects)} */
    default long foreignResident() {
        return 0;
    }

    /** Releases what the subject holds (real tiers, temporary files). Idempotent. */
    @Override
    default void close() throws IOException {}
}
