// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.Batch;
import ai.djl.util.Progress;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Decoder;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderState;
import dev.granary.loader.LoaderStats;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;

/**
 * A DJL {@link ai.djl.training.dataset.Dataset} whose epochs come from a Granary {@link DataLoader}: DJL's trainer
 * iterates it as usual ({@code EasyTrain.fit(trainer, epochs, train, validate)}, {@code trainer.iterateDataset}),
 * and Granary does the caching, the read-ahead, the seeded per-epoch shuffle, {@code shard(rank, worldSize)} and the
 * resume.
 *
 * {@snippet :
 * try (GranaryDataset train = GranaryDataset.builder(shards, sample -> decode(sample))
 *         .loader(options -> options.batchSize(64).shuffle(42L).shard(rank, worldSize))
 *         .data(new Shape(784), DataType.FLOAT32, (image, slot) -> writePixels(image, slot))
 *         .label(new Shape(), DataType.FLOAT32, (image, slot) -> slot.set(ValueLayout.JAVA_FLOAT, 0, image.label()))
 *         .build()) {
 *     EasyTrain.fit(trainer, epochs, train, null);
 * }
 * }
 *
 * <h2>Epochs</h2>
 * Each {@link #getData(NDManager)} call is the next Granary epoch — 0, 1, 2, … — so epoch {@code e} visits this
 * rank's samples in the permutation derived from {@code (seed, e)}, the same on every machine. A DJL batch holds the
 * arrays declared with {@link Builder#data} in {@link Batch#getData()} and those declared with {@link Builder#label}
 * in {@link Batch#getLabels()}, each of shape {@code (n, itemShape…)} for the batch's {@code n} items in sampler
 * order; {@link Batch#getIndices()} gives their dataset indices. The last batch is smaller unless the loader drops it
 * ({@code loader(options -> options.dropLast(true))}); a batch whose samples were all skipped
 * ({@code skipFailedSamples}) is left out.
 *
 * <h2>Copies</h2>
 * A sample's bytes reach the engine in exactly three copies, none of them into a heap array built for the batch:
 * <ol>
 *   <li><b>decode</b> (a loader worker thread): the {@link Decoder} reads the sample's bytes — views of cached memory,
 *       valid only while it runs — and returns the item it keeps: a copy of the bytes it needs, or what decoding them
 *       produces (a decoded JPEG is new memory anyway);</li>
 *   <li><b>collate</b> (a loader worker thread, once the batch's items are decoded): each {@link ArrayWriter} writes
 *       its item's row of an array into the batch's off-heap staging buffer, converting as it likes (bytes to
 *       {@code float32}, say); the buffer is one of the loader's reusable, optionally page-locked, staging buffers
 *       ({@code loader(options -> options.pinnedStaging(true))});</li>
 *   <li><b>into the engine</b> (the trainer's thread, inside the iterator's {@code next()}): one copy per array, from
 *       the staging buffer into memory the engine owns, taken through a direct {@link ByteBuffer} over the staging
 *       memory. Where {@link NDManager#create(java.nio.Buffer, Shape, DataType)} copies that buffer into the engine
 *       (PyTorch on a GPU: the host-to-device transfer), it is the copy. Where it would wrap the memory in place
 *       instead (PyTorch on the CPU keeps a reference to the buffer, no copy), the array is allocated by the engine
 *       ({@link NDManager#create(Shape, DataType)}) and the rows are copied into the direct view of its memory that
 *       {@link NDArray#toByteBuffer(boolean) toByteBuffer(true)} gives — one {@code memcpy}; an engine that gives no
 *       writable view gets the wrapper duplicated inside the engine ({@link NDArray#duplicate()}) and closed at once.
 *       Which of the three an engine and device need is tested once, with arrays of a few bytes.</li>
 * </ol>
 * So the arrays never point into a staging buffer: the loader reuses a batch's buffer as soon as the next batch is
 * asked for, and frees every buffer when it closes, while DJL's arrays live until their batch is closed.
 *
 * <h2>Memory</h2>
 * The arrays of a DJL batch belong to a sub-manager of the {@link NDManager} passed to {@code getData} (the trainer's
 * manager, for {@code trainer.iterateDataset}); the batch owns it, so {@link Batch#close()} — which
 * {@code EasyTrain} does after each step — frees them, and a batch never closed is freed with the manager. Granary's
 * cache leases are released by the loader as soon as each sample is decoded; closing this dataset stops the loader
 * and frees its staging buffers.
 *
 * <h2>Resume</h2>
 * {@link #state()} is the position just after the last batch this dataset handed to DJL; store
 * {@link LoaderState#encode()} in the training checkpoint, and after a restart call {@link #resume(LoaderState)} on a
 * dataset built the same way: the next {@code getData} call yields exactly the batches not handed out yet, in the same
 * order.
 *
 * <p>Thread-safe; one epoch is open at a time (a {@code getData} call closes the previous epoch), and one thread
 * iterates it. Close the dataset to stop the loader's threads; the cache and the NDManager stay the caller's.
 */
public final class GranaryDataset implements ai.djl.training.dataset.Dataset, AutoCloseable {

    private final DataLoader<?> loader;
    private final BatchLayout<?> layout;
    /** Per engine and device: how rows get into the engine's memory in one copy. */
    private final Map<String, Transfer> transfers = new ConcurrentHashMap<>();

    private final Object lock = new Object();
    private long nextEpoch;
    private boolean closed;
    /** The epoch last opened by getData, for state(): it may hold a batch fetched and not yet handed to DJL. */
    private volatile EpochBatches current;

    private GranaryDataset(DataLoader<?> loader, BatchLayout<?> layout) {
        this.loader = loader;
        this.layout = layout;
    }

    /**
     * Starts configuring a dataset.
     *
     * @param samples the Granary dataset: a {@link dev.granary.loader.WebDataset} of tar shards, or one object per
     *                sample ({@link dev.granary.loader.Dataset#ofObjects})
     * @param decoder turns a sample into the item the array writers read; runs on the loader's worker threads and
     *                must copy what it keeps of the sample's buffers
     * @param <T>     the decoded type
     * @return a builder
     * @throws IllegalArgumentException if either is null
     */
    public static <T> Builder<T> builder(dev.granary.loader.Dataset samples, Decoder<T> decoder) {
        if (samples == null) {
            throw new IllegalArgumentException(
                    "samples: null (expected: a Granary Dataset such as WebDataset.of(cache," + " shardKeys))");
        }
        if (decoder == null) {
            throw new IllegalArgumentException("decoder: null (expected: a function from a Granary Sample to the"
                    + " item the array writers read)");
        }
        return new Builder<>(samples, decoder);
    }

    /**
     * Opens the next epoch and returns its batches. Reads start at once, ahead of the trainer. Each call is the next
     * epoch (after {@link #resume(LoaderState)}, the state's epoch from its next batch); the previous epoch is closed
     * if still open.
     *
     * <p>The iterable is iterated once. Its iterator's {@code hasNext()} waits for the next batch (so it may throw
     * what the loader throws for it: a {@link dev.granary.loader.SampleException} for a sample that failed, after
     * which iterating goes on with the next batch); {@code next()} makes the batch's arrays. When the last batch has
     * been taken the Granary epoch is closed.
     *
     * @param manager the manager whose sub-managers own the batches' arrays (DJL's trainer passes its own)
     * @return the epoch's batches
     * @throws IllegalArgumentException if the manager is null
     * @throws IllegalStateException    if the dataset is closed
     */
    @Override
    public Iterable<Batch> getData(NDManager manager) {
        if (manager == null) {
            throw new IllegalArgumentException(
                    "manager: null (expected: the NDManager that owns the batches, such as" + " trainer.getManager())");
        }
        synchronized (lock) {
            ensureOpen();
            Transfer transfer = transfers.computeIfAbsent(
                    manager.getEngine().getEngineName() + "/" + manager.getDevice(), k -> Transfer.probe(manager));
            supersede("getData opened epoch " + nextEpoch);
            Epoch<?> epoch = loader.epoch(nextEpoch);
            nextEpoch++;
            EpochBatches batches = new EpochBatches(epoch, lock, manager, layout, transfer, loader.batchesPerEpoch());
            current = batches;
            return batches;
        }
    }

    /**
     * Same as {@link #getData(NDManager)}: the executor is not used, since Granary already reads and decodes ahead on
     * its own threads (DJL's trainer passes the executor of its {@code TrainingConfig}).
     */
    @Override
    public Iterable<Batch> getData(NDManager manager, ExecutorService executorService) {
        return getData(manager);
    }

    /**
     * Does nothing: the samples were indexed when the Granary dataset was made, and reads start with
     * {@link #getData(NDManager)}.
     *
     * @throws IllegalStateException if the dataset is closed
     */
    @Override
    public void prepare(Progress progress) {
        synchronized (lock) {
            ensureOpen();
        }
    }

    /**
     * {@return the position just after the last batch handed to DJL}: the epoch and its next batch (after an epoch's
     * last batch, the start of the next epoch), with what the order depends on. Exact between batches.
     */
    public LoaderState state() {
        synchronized (lock) {
            return stateLocked();
        }
    }

    private LoaderState stateLocked() {
        LoaderState s = loader.state();
        EpochBatches open = current;
        dev.granary.loader.Batch<?> fetched = open == null ? null : open.fetched();
        if (fetched == null) {
            return s;
        }
        // The iterator took this batch from the loader to see whether one follows; DJL has not had it yet.
        return new LoaderState(
                fetched.epoch(),
                fetched.index(),
                s.datasetSize(),
                s.batchSize(),
                s.dropLast(),
                s.shuffle(),
                s.partitioning(),
                s.rank(),
                s.worldSize(),
                s.ranksPerNode(),
                s.canonicalPartitions());
    }

    /**
     * Makes the next {@link #getData(NDManager)} call continue where {@code state} left off: it yields the batches of
     * {@code state.epoch()} from {@code state.nextBatch()} on, and the calls after it the following epochs. Closes the
     * open epoch.
     *
     * @param state a state from {@link #state()} of a dataset built the same way (same samples, batch size, drop-last,
     *              seed, rank and world size), possibly in another JVM
     * @throws IllegalArgumentException if the state is null or from a differently configured dataset
     * @throws IllegalStateException    if the dataset is closed
     */
    public void resume(LoaderState state) {
        synchronized (lock) {
            ensureOpen();
            loader.resume(state); // validates first: a refused state leaves the open epoch alone
            supersede("resume(" + state.encode() + ") was called");
            current = null; // the loader's state is the resumed one
            nextEpoch = state.epoch();
        }
    }

    /** {@return the loader's counters, and its cache's, since the dataset was built}; subtract two for one epoch */
    public LoaderStats stats() {
        return loader.stats();
    }

    /** {@return the number of batches in a whole epoch of this rank} */
    public long batchesPerEpoch() {
        return loader.batchesPerEpoch();
    }

    /** {@return whether the staging buffers are page-locked, as {@link DataLoader#stagingPinning()} says} */
    public String stagingPinning() {
        return loader.stagingPinning();
    }

    /**
     * Closes the open epoch, stops the loader and frees its staging buffers. Arrays already handed to DJL stay valid
     * (they are copies). The cache stays open: it belongs to the caller. Idempotent.
     */
    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            supersede("the dataset was closed");
            loader.close();
        }
    }

    /** Marks the open epoch closed, so its iterator makes no more arrays; called with the lock held. */
    private void supersede(String why) {
        EpochBatches open = current;
        if (open != null) {
            open.supersede(why);
        }
    }

    /** The loader, for tests and benchmarks in this package. */
    DataLoader<?> loader() {
        return loader;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(
                    "GranaryDataset over " + loader.dataset() + " is closed (expected: an" + " open dataset)");
        }
    }

    @Override
    public String toString() {
        return "GranaryDataset[" + loader + ", " + layout + "]";
    }

    /**
     * Configures a {@link GranaryDataset}: the arrays of a batch here ({@link #data}, {@link #label}), and every option
     * of the loader — batch size, shuffle, shard, workers, prefetch, … — on the loader's own builder through
     * {@link #loader(Consumer)}, their one home (docs/decisions/0020-one-home-per-option.md). Every setter validates
     * its argument at once. Not thread-safe.
     *
     * @param <T> the decoded type
     */
    public static final class Builder<T> {

        private final DataLoader.Builder<T> options;
        private final List<BatchLayout.Declared<T>> data = new ArrayList<>();
        private final List<BatchLayout.Declared<T>> labels = new ArrayList<>();

        private Builder(dev.granary.loader.Dataset samples, Decoder<T> decoder) {
            this.options = DataLoader.builder(samples, decoder);
        }

        /**
         * Adds an array to the batches' {@link Batch#getData()}, in the order of the calls.
         *
         * @param itemShape one item's shape, every dimension {@code >= 1} ({@code new Shape()} for a scalar); the
         *                  batch's array has shape {@code (n, itemShape…)}
         * @param type      the element type, of a fixed size (not {@code STRING} nor {@code UNKNOWN})
         * @param writer    writes an item's row
         * @return this builder
         * @throws IllegalArgumentException if an argument is null or out of range
         */
        public Builder<T> data(Shape itemShape, DataType type, ArrayWriter<? super T> writer) {
            data.add(declared("data", data.size(), itemShape, type, writer));
            return this;
        }

        /**
         * Adds an array to the batches' {@link Batch#getLabels()}, in the order of the calls. Optional: a dataset
         * without labels gives empty label lists.
         *
         * @param itemShape one item's shape, every dimension {@code >= 1} ({@code new Shape()} for a scalar label,
         *                  which makes the batch's labels of shape {@code (n)}, as DJL's
         *                  {@code SoftmaxCrossEntropyLoss} takes them)
         * @param type      the element type, of a fixed size
         * @param writer    writes an item's row
         * @return this builder
         * @throws IllegalArgumentException if an argument is null or out of range
         */
        public Builder<T> label(Shape itemShape, DataType type, ArrayWriter<? super T> writer) {
            labels.add(declared("label", labels.size(), itemShape, type, writer));
            return this;
        }

        /**
         * Sets the loader's options on the loader's own builder, {@link DataLoader.Builder}, with its defaults: the
         * batch size (default 32), the order ({@code shuffle}), this rank's part ({@code shard}, {@code ranksPerNode}),
         * {@code workers}, {@code prefetch}, {@code dropLast}, {@code skipFailedSamples}, {@code pinnedStaging}, and
         * every other option the loader has or gains. Applied now, to the loader's builder, which validates each at
         * once; calls add up, the last setting of an option wins. Only the staging buffers are the dataset's own — it
         * sizes them from the batch size and the declared arrays, and fills them — so {@code staging(...)} is refused.
         *
         * {@snippet :
         * GranaryDataset.builder(samples, decoder)
         *         .loader(options -> options.batchSize(64).shuffle(42L).shard(rank, worldSize).workers(8))
         *         .data(new Shape(784), DataType.FLOAT32, writer)
         *         .build();
         * }
         *
         * <p>The function may be a {@code Consumer<DataLoader.Builder<?>>}, shared with other loaders' builders (the
         * DL4J adapter's {@code loader(...)} takes the same).
         *
         * @param configure sets options on the loader's builder
         * @return this builder
         * @throws IllegalArgumentException if null, if it sets an option out of range, or if it sets staging buffers
         */
        public Builder<T> loader(Consumer<? super DataLoader.Builder<T>> configure) {
            if (configure == null) {
                throw new IllegalArgumentException("loader options: null (expected: a function that sets options on"
                        + " the DataLoader.Builder, such as options -> options.batchSize(64).workers(8))");
            }
            long staging = options.options().stagingBytes();
            configure.accept(options);
            long set = options.options().stagingBytes();
            if (set != staging) {
                throw new IllegalArgumentException("staging: " + set + " bytes per batch, set through loader(...)"
                        + " (expected: no staging(...): the dataset sizes its staging buffers from the batch size and"
                        + " its arrays, and fills them; pinnedStaging(true) page-locks them)");
            }
            return this;
        }

        /**
         * Builds the dataset and its loader (which starts no reads until {@link GranaryDataset#getData}).
         *
         * @return a new dataset; close it
         * @throws IllegalArgumentException if no data array was declared, a batch's array is larger than a
         *                                  {@code ByteBuffer} holds, or the loader's builder refuses its options
         */
        public GranaryDataset build() {
            if (data.isEmpty()) {
                throw new IllegalArgumentException(
                        "data arrays: none (expected: at least one data(shape, type," + " writer))");
            }
            BatchLayout<T> layout =
                    new BatchLayout<>(data, labels, options.options().batchSize());
            DataLoader<T> loader =
                    options.staging(layout.bytesPerBatch(), layout).build();
            return new GranaryDataset(loader, layout);
        }

        private BatchLayout.Declared<T> declared(
                String role, int ordinal, Shape shape, DataType type, ArrayWriter<? super T> writer) {
            String what = role + " array " + ordinal;
            if (shape == null) {
                throw new IllegalArgumentException(what + " shape: null (expected: one item's shape, such as new"
                        + " Shape(28, 28), or new Shape() for a scalar)");
            }
            for (long dim : shape.getShape()) {
                if (dim < 1) {
                    throw new IllegalArgumentException(what + " shape: " + shape + " (expected: every dimension >= 1;"
                            + " the batch dimension is added)");
                }
            }
            if (type == null || type == DataType.STRING || type == DataType.UNKNOWN || type.getNumOfBytes() < 1) {
                throw new IllegalArgumentException(what + " type: " + type + " (expected: a fixed-size type such as"
                        + " FLOAT32, INT64 or UINT8)");
            }
            long rowBytes;
            try {
                rowBytes = Math.multiplyExact(shape.size(), type.getNumOfBytes());
            } catch (ArithmeticException e) {
                rowBytes = Long.MAX_VALUE;
            }
            if (rowBytes > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(what + ": " + shape + " " + type + " is " + rowBytes + " bytes per"
                        + " item (expected: at most " + Integer.MAX_VALUE + ")");
            }
            if (writer == null) {
                throw new IllegalArgumentException(what + " writer: null (expected: an ArrayWriter that writes an"
                        + " item's " + shape + " " + type + " values into its slot)");
            }
            return new BatchLayout.Declared<>(shape, type, writer);
        }
    }
}
