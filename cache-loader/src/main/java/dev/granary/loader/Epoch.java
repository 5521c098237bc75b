// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.lang.ref.Cleaner;
import java.lang.ref.Cleaner.Cleanable;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * One epoch of a {@link DataLoader}: its batches, in sampler order, read ahead and decoded while the trainer works.
 * Iterate it once; close it when done — or earlier: closing (or starting the loader's next epoch, or dropping the
 * epoch unreferenced) stops its reads and decoding promptly and releases every cached buffer it held.
 *
 * {@snippet :
 * try (Epoch<Example> batches = loader.epoch(epoch)) {
 *     for (Batch<Example> batch : batches) {
 *         train(batch.items());
 *     }
 * }
 * }
 *
 * <p>The iterator throws {@link SampleException} for a batch whose sample failed (and goes on with the next batch on
 * the next call), and {@link IllegalStateException} once the epoch is closed. Not thread-safe: one trainer thread
 * iterates it.
 *
 * @param <T> the decoded type
 */
public final class Epoch<T> implements Iterable<Batch<T>>, AutoCloseable {

    private final EpochRun<T> run;
    private final Cleanable cleanable;
    private boolean iterated;

    Epoch(EpochRun<T> run, Cleaner cleaner) {
        this.run = run;
        // Dropped unclosed: abandoned on a virtual thread of its own, so the shared cleaner thread never waits.
        this.cleanable = cleaner.register(
                this, () -> Thread.ofVirtual().name("granary-loader-abandon").start(run::abandon));
    }

    /** {@return the epoch number} */
    public long number() {
        return run.epoch;
    }

    /** {@return how many batches this epoch yields from where it starts (after a resume: the remaining ones)} */
    public long batches() {
        return run.endBatch - run.firstBatch;
    }

    /**
     * {@return this epoch's own figures}: the loader's {@link DataLoader#stats()} accumulated since the epoch started,
     * until now while it is open, and frozen once it is closed — by {@link #close()}, by the loader's next
     * {@code epoch(...)} or by closing the loader (the queue depth is the loader's at that moment). Thread-safe.
     */
    public LoaderStats stats() {
        return run.stats();
    }

    /**
     * {@return the iterator over the batches}
     *
     * @throws IllegalStateException if called twice: an epoch is iterated once
     */
    @Override
    public Iterator<Batch<T>> iterator() {
        if (iterated) {
            throw new IllegalStateException("epoch " + run.epoch + " is already being iterated (expected: one"
                    + " iterator per epoch; call loader.epoch(n) again for a new pass)");
        }
        iterated = true;
        return new Iterator<>() {
            @Override
            public boolean hasNext() {
                return run.hasNext();
            }

            @Override
            public Batch<T> next() {
                if (!run.hasNext()) {
                    throw new NoSuchElementException("epoch " + run.epoch + " has no more batches");
                }
                return run.next();
            }
        };
    }

    /** Stops the epoch's work and releases what it holds; waits for reads and decodes in progress. Idempotent. */
    @Override
    public void close() {
        run.abandon();
        cleanable.clean();
    }

    @Override
    public String toString() {
        return "Epoch[" + run.epoch + ", batches " + run.firstBatch + ".." + run.endBatch + "]";
    }
}
