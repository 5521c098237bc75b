// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.Batch;
import dev.granary.loader.Epoch;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * One epoch of a {@link GranaryDataset} as DJL iterates it: Granary batches turned into DJL batches.
 *
 * <p>{@code hasNext()} takes the next non-empty batch from the Granary epoch and keeps it ({@link #fetched()}) until
 * {@code next()} makes its arrays: its staging buffer stays valid until the Granary epoch is asked for another batch,
 * which only the following {@code hasNext()} does, after the arrays were copied.
 *
 * <p>The dataset closes the Granary epoch behind this iterator's back when it opens the next epoch, resumes or closes
 * (which frees or reuses the staging buffers): it does so holding its lock and marking this epoch
 * {@link #supersede(String) superseded}, and {@code next()} makes arrays only while holding the same lock and after
 * checking
 * the mark — so arrays are never made from a buffer that was handed back. Iterated by one thread; {@link #fetched()}
 * may be read by any.
 */
final class EpochBatches implements Iterable<Batch> {

    private final Epoch<?> epoch;
    /** The dataset's lock: held while making arrays from a staging buffer, and while closing the epoch. */
    private final Object lock;

    private final NDManager manager;
    private final BatchLayout<?> layout;
    private final Transfer transfer;
    private final long batchesPerEpoch;
    private boolean iterated;
    /** Taken from the Granary epoch and not yet handed to DJL. */
    private volatile dev.granary.loader.Batch<?> fetched;

    private boolean done;
    private volatile String superseded;

    EpochBatches(
            Epoch<?> epoch,
            Object lock,
            NDManager manager,
            BatchLayout<?> layout,
            Transfer transfer,
            long batchesPerEpoch) {
        this.epoch = epoch;
        this.lock = lock;
        this.manager = manager;
        this.layout = layout;
        this.transfer = transfer;
        this.batchesPerEpoch = batchesPerEpoch;
    }

    /**
     * Marks the epoch as closed by the dataset; called with the dataset's lock held, before it closes the epoch.
     *
     * @param why what closed it, for the message
     */
    void supersede(String why) {
        superseded = why; // fetched stays: state() still counts it as not handed to DJL
    }

    private void ensureCurrent() {
        String why = superseded;
        if (why != null) {
            throw new IllegalStateException("epoch " + epoch.number() + " is closed: " + why + " (expected: the"
                    + " batches of the epoch the last getData call opened)");
        }
    }

    /** {@return the batch taken from the loader and not yet handed to DJL, or null} */
    dev.granary.loader.Batch<?> fetched() {
        return fetched;
    }

    /**
     * {@return the iterator over the epoch's batches}
     *
     * @throws IllegalStateException if called twice
     */
    @Override
    public Iterator<Batch> iterator() {
        if (iterated) {
            throw new IllegalStateException("epoch " + epoch.number() + " is already being iterated (expected: one"
                    + " pass per getData call; call getData again for the next epoch)");
        }
        iterated = true;
        Iterator<? extends dev.granary.loader.Batch<?>> source = epoch.iterator();
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                ensureCurrent();
                if (fetched != null) {
                    return true;
                }
                if (done) {
                    return false;
                }
                while (source.hasNext()) {
                    dev.granary.loader.Batch<?> batch = source.next(); // the previous batch's staging is reused now
                    if (batch.size() > 0) {
                        fetched = batch;
                        return true;
                    }
                }
                done = true;
                epoch.close(); // the trainer has every batch: release what the epoch holds now, not at the next one
                return false;
            }

            @Override
            public Batch next() {
                if (!hasNext()) {
                    throw new NoSuchElementException("epoch " + epoch.number() + " has no more batches");
                }
                synchronized (lock) {
                    ensureCurrent(); // else the batch's staging buffer may already hold another batch, or be freed
                    dev.granary.loader.Batch<?> batch = fetched;
                    try {
                        return layout.toBatch(batch, manager, transfer, batchesPerEpoch);
                    } finally {
                        fetched = null; // handed out, even if making its arrays failed: the next call moves on
                    }
                }
            }
        };
    }

    @Override
    public String toString() {
        return "EpochBatches[" + epoch + "]";
    }
}
