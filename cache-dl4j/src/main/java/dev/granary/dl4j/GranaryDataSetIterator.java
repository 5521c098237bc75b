// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j;

import dev.granary.loader.Batch;
import dev.granary.loader.Collator;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Decoder;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderState;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.Sample;
import dev.granary.loader.SampleException;
import java.io.NotSerializableException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serial;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.function.Consumer;
import org.nd4j.linalg.api.buffer.DataBuffer;
import org.nd4j.linalg.api.buffer.DataType;
import org.nd4j.linalg.api.memory.MemoryWorkspace;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.dataset.api.DataSetPreProcessor;
import org.nd4j.linalg.dataset.api.iterator.DataSetIterator;
import org.nd4j.linalg.factory.Nd4j;

/**
 * An ND4J {@link DataSetIterator} backed by a Granary {@link DataLoader}: DL4J's {@code fit} and {@code evaluate}
 * iterate it as usual, while Granary reads ahead through its tiered cache, shuffles each epoch from a seed, gives each
 * rank its disjoint part, and resumes exactly from a checkpoint.
 *
 * {@snippet :
 * try (GranaryDataSetIterator train = GranaryDataSetIterator.builder(dataset, encoder)
 *         .features(784).labels(10)
 *         .loader(options -> options.batchSize(64).shuffle(42L).shard(rank, worldSize).workers(4).prefetch(4))
 *         .preProcessor(new ImagePreProcessingScaler(0, 1))
 *         .build()) {
 *     net.fit(train, 2);                       // two epochs: DL4J calls reset() between them
 *     LoaderState checkpoint = train.state();  // store it with the model
 * }
 * }
 *
 * <h2>Epochs and {@code reset()}</h2>
 * The iterator yields the batches of one epoch of the loader, in sampler order; {@link #hasNext()} is false at the
 * epoch's end. {@link #reset()} moves to the <em>next</em> epoch — a new permutation of the same seed — closing the
 * current one; on an epoch that has not handed out a batch yet (a new iterator, or one just reset or resumed) it does
 * nothing, so DL4J's {@code fit} (which resets an exhausted iterator before it starts), a loop that calls
 * {@code reset()} after every epoch and one that calls it before every epoch all see each epoch once. Reset in the
 * middle of an epoch skips its remaining batches.
 *
 * <h2>No {@code AsyncDataSetIterator}</h2>
 * {@link #asyncSupported()} is {@code false}: the loader already reads and decodes {@code prefetch} batches ahead on
 * its own threads, so DL4J must not wrap this iterator in its {@code AsyncDataSetIterator} — that would add a thread,
 * a queue and a hand-off for nothing, and would take batches ahead of the trainer, so that {@link #state()} would
 * count batches the model has not seen and a resume would skip them.
 *
 * <h2>Where the bytes go: the copies</h2>
 * <ol>
 *   <li>Decode, on a worker thread, per sample: the {@link SampleEncoder} reads the sample's bytes where the cache
 *       holds them (read-only views, no copy) and writes its features and label into two float arrays of the sample's
 *       own. This is the only heap write, and it is the decode itself (bytes to floats).</li>
 *   <li>Collate, on a worker thread, per batch: the batch's rows are copied into one of the loader's reusable
 *       off-heap staging buffers ({@link DataLoader.Builder#staging(long, Collator)}), features of every row then
 *       labels of every row, as native-order floats.</li>
 *   <li>{@link #next()}, on the trainer's thread: one copy of each array from the staging buffer into ND4J-owned
 *       memory ({@code Nd4j.createBuffer(ByteBuffer, …)}, off-heap to off-heap: about 50 µs for a batch of
 *       64 × (784 + 10) floats with nd4j-native on a 2-core machine, most of it ND4J allocating the memory). No heap
 *       array of the batch is made. The copy lets the {@link DataSet} outlive the staging buffer, which the loader
 *       reuses at the next {@code next()}, and lets pre-processors and DL4J work on it in place.</li>
 * </ol>
 *
 * <h2>Resume</h2>
 * {@link #state()} is the position just after the last batch handed out; store it in the checkpoint
 * ({@link LoaderState#encode()}), and {@link Builder#resume(LoaderState)} or {@link #resume(LoaderState)} in a new
 * JVM continues with exactly the batches not handed out yet.
 *
 * <h2>Threads and lifecycle</h2>
 * Not thread-safe: one trainer thread iterates it, as DL4J does. Building it starts reading the first epoch.
 * {@link #close()} (from any thread) closes the loader: reads stop, every cached buffer it held is released, and
 * {@code hasNext}, {@code next}, {@code reset} and {@code resume} then throw {@link IllegalStateException}. The cache
 * stays open: it belongs to the caller. Not serializable, although the interface extends {@code Serializable}: it
 * holds threads and off-heap memory.
 */
public final class GranaryDataSetIterator implements DataSetIterator, AutoCloseable {

    @Serial
    private static final long serialVersionUID = 1L;

    /** Every field is transient: the iterator refuses serialization (see {@link #writeObject}). */
    private final transient DataLoader<Rows> loader;

    private final transient long[] featureShape;
    private final transient int columns;
    private final transient int outcomes;
    private final transient int batchSize;
    private final transient List<String> labelNames;
    private transient DataSetPreProcessor preProcessor;
    /** The open epoch; volatile so that close() from another thread sees it. */
    private transient volatile Epoch<Rows> epoch;

    private transient Iterator<Batch<Rows>> batches;
    private transient long epochNumber;
    /** Batches handed out (or failed) since the current epoch was opened: reset() on 0 stays. */
    private transient long handed;

    private transient volatile boolean closed;
    /** Orders {@link #close()} after a {@link #next()} that is copying out of the loader's staging memory. */
    private final transient Object closeLock = new Object();

    private GranaryDataSetIterator(Builder b, DataLoader<Rows> loader, long firstEpoch) {
        this.loader = loader;
        this.featureShape = b.featureShape;
        this.columns = b.columns;
        this.outcomes = b.outcomes;
        this.batchSize = loader.options().batchSize();
        this.labelNames = b.labelNames;
        this.preProcessor = b.preProcessor;
        open(firstEpoch);
    }

    /**
     * Starts configuring an iterator.
     *
     * @param dataset the samples, e.g. {@code WebDataset.of(cache, shards)}
     * @param encoder writes one sample's features and label
     * @return a builder
     * @throws IllegalArgumentException if either is null
     */
    public static Builder builder(Dataset dataset, SampleEncoder encoder) {
        if (dataset == null) {
            throw new IllegalArgumentException(
                    "dataset: null (expected: a Dataset such as WebDataset.of(cache," + " shards))");
        }
        if (encoder == null) {
            throw new IllegalArgumentException(
                    "encoder: null (expected: a SampleEncoder writing a sample's features" + " and label)");
        }
        return new Builder(dataset, encoder);
    }

    // ------------------------------------------------------------------------------------------ DataSetIterator

    /**
     * {@return whether the current epoch has another batch}
     *
     * @throws IllegalStateException if the iterator is closed
     */
    @Override
    public boolean hasNext() {
        ensureOpen();
        return batches.hasNext();
    }

    /**
     * Hands out the next batch of the current epoch, in sampler order, with the pre-processor applied: features of
     * shape {@code [n, featureShape…]} and labels {@code [n, totalOutcomes]}, {@code n} the batch size (less for the
     * last batch of an epoch unless {@code dropLast}). Blocks while the batch is still being read.
     *
     * @return the batch, in ND4J memory of its own (valid after later calls)
     * @throws NoSuchElementException                 at the end of the epoch
     * @throws dev.granary.loader.SampleException     if a sample of the batch could not be read or encoded (the
     *                                                batch counts as handed out; the next call goes on)
     * @throws IllegalStateException                  if the iterator is closed
     */
    @Override
    public DataSet next() {
        DataSet data;
        synchronized (closeLock) { // close() from another thread waits: it frees the staging memory copied here
            data = nextLocked();
        }
        DataSetPreProcessor pre = preProcessor;
        if (pre != null) {
            pre.preProcess(data);
        }
        return data;
    }

    private DataSet nextLocked() {
        ensureOpen();
        if (!batches.hasNext()) {
            throw new NoSuchElementException("epoch " + epochNumber + " has no more batches (expected: reset() to"
                    + " start epoch " + (epochNumber + 1) + ")");
        }
        Batch<Rows> batch;
        try {
            batch = batches.next();
        } catch (SampleException e) {
            handed++;
            throw e;
        }
        handed++;
        return toDataSet(batch);
    }

    /**
     * Same as {@link #next()} when {@code num} is the batch size; batches are cut by the loader, so any other size is
     * refused.
     *
     * @param num the batch size
     * @return the next batch
     * @throws UnsupportedOperationException if {@code num} is not the batch size
     */
    @Override
    public DataSet next(int num) {
        if (num != batchSize) {
            throw new UnsupportedOperationException("next(" + num + "): batches are cut by the Granary loader at"
                    + " batch size " + batchSize + " (expected: next() or next(" + batchSize + "); build another"
                    + " iterator for another batch size)");
        }
        return next();
    }

    /**
     * Moves to the start of the next epoch, closing the current one — unless the current epoch has not handed out a
     * batch yet, in which case the iterator already is at the start of an epoch and stays there (see the class
     * comment).
     *
     * @throws IllegalStateException if the iterator is closed
     */
    @Override
    public void reset() {
        ensureOpen();
        if (handed == 0 && batches.hasNext()) {
            return; // already at the start of an epoch with batches to give
        }
        open(epochNumber + 1);
    }

    /** {@return {@code true}: {@link #reset()} starts the next epoch} */
    @Override
    public boolean resetSupported() {
        return true;
    }

    /**
     * {@return {@code false}}: the loader already prefetches on its own threads, so DL4J must not wrap this iterator
     * in an {@code AsyncDataSetIterator}
     */
    @Override
    public boolean asyncSupported() {
        return false;
    }

    /** {@return the number of feature values per example: the product of the feature shape} */
    @Override
    public int inputColumns() {
        return columns;
    }

    /** {@return the number of label values per example} */
    @Override
    public int totalOutcomes() {
        return outcomes;
    }

    /** {@return the batch size} (the last batch of an epoch may be smaller unless {@code dropLast}) */
    @Override
    public int batch() {
        return batchSize;
    }

    /**
     * Sets the pre-processor applied to every {@link DataSet} {@link #next()} hands out, such as
     * {@code ImagePreProcessingScaler} or a fitted {@code NormalizerStandardize}; {@code null} for none.
     *
     * @param preProcessor the pre-processor, or null
     */
    @Override
    public void setPreProcessor(DataSetPreProcessor preProcessor) {
        this.preProcessor = preProcessor;
    }

    /** {@return the pre-processor, or {@code null} if none is set} */
    @Override
    public DataSetPreProcessor getPreProcessor() {
        return preProcessor;
    }

    /**
     * {@return the class names given to {@link Builder#labelNames(List)}, or {@code null} if none were} (null is
     * DL4J's "no names" for {@code Evaluation})
     */
    @Override
    public List<String> getLabels() {
        return labelNames;
    }

    // ------------------------------------------------------------------------------------------ Granary

    /**
     * {@return the position just after the last batch handed out}: batches prefetched but not handed out do not count;
     * after the last batch of epoch {@code e} it is the start of epoch {@code e + 1}. Also valid after
     * {@link #close()}.
     */
    public LoaderState state() {
        return loader.state();
    }

    /**
     * Continues where {@code state} left off: closes the current epoch, and the next batches are exactly the ones the
     * iterator that took the state had not handed out, in the same order. Nothing changes if the state is refused.
     *
     * @param state a state from {@link #state()} of an iterator over the same dataset with the same batch size,
     *              drop-last, shuffle seed, rank and world size
     * @throws IllegalArgumentException if the state is null or from a differently configured iterator
     * @throws IllegalStateException    if the iterator is closed
     */
    public void resume(LoaderState state) {
        ensureOpen();
        if (state == null) {
            throw new IllegalArgumentException("state: null (expected: a LoaderState from iterator.state())");
        }
        loader.resume(state); // validates before it changes anything
        open(state.epoch());
    }

    /** {@return the number of the current epoch, from 0} */
    public long epoch() {
        return epochNumber;
    }

    /** {@return the number of batches in a whole epoch of this rank} */
    public long batchesPerEpoch() {
        return loader.batchesPerEpoch();
    }

    /**
     * {@return the loader's counters since the iterator was built}: samples, batches, the time the trainer waited,
     * and the cache's hits per tier and origin reads; {@link LoaderStats#minus(LoaderStats)} of two snapshots gives
     * one epoch's
     */
    public LoaderStats stats() {
        return loader.stats();
    }

    /** Closes the loader: reads stop and every buffer it held is released. Idempotent; any thread. */
    @Override
    public void close() {
        synchronized (closeLock) {
            closed = true;
        }
        Epoch<Rows> open = epoch;
        loader.close();
        if (open != null) {
            open.close();
        }
    }

    /** The loader, for tests in this package. */
    DataLoader<?> loader() {
        return loader;
    }

    @Override
    public String toString() {
        return "GranaryDataSetIterator[" + loader + ", epoch " + epochNumber + ", features "
                + Arrays.toString(featureShape) + ", labels " + outcomes + (closed ? ", closed" : "") + "]";
    }

    // ------------------------------------------------------------------------------------------ internals

    private void open(long number) {
        Epoch<Rows> previous = epoch;
        epoch = null;
        batches = null;
        if (previous != null) {
            previous.close();
        }
        Epoch<Rows> next = loader.epoch(number);
        epoch = next;
        batches = next.iterator();
        epochNumber = number;
        handed = 0;
    }

    /** Copies the batch from its staging buffer into ND4J memory: features rows, then labels rows. */
    @SuppressWarnings("try") // the scope is the point: arrays made in it are detached from any workspace
    private DataSet toDataSet(Batch<Rows> batch) {
        int n = batch.size();
        MemorySegment staged = batch.staging();
        long featureBytes = (long) n * columns * Float.BYTES;
        long[] shape = new long[featureShape.length + 1];
        shape[0] = n;
        System.arraycopy(featureShape, 0, shape, 1, featureShape.length);
        // Detached: the arrays belong to the caller, whatever workspace its thread is in.
        try (MemoryWorkspace ignored = Nd4j.getWorkspaceManager().scopeOutOfWorkspaces()) {
            INDArray features = array(staged, 0, featureBytes, shape);
            INDArray labels = array(staged, featureBytes, (long) n * outcomes * Float.BYTES, new long[] {n, outcomes});
            return new DataSet(features, labels);
        }
    }

    private static INDArray array(MemorySegment staged, long offset, long bytes, long[] shape) {
        ByteBuffer floats = staged.asSlice(offset, bytes).asByteBuffer().order(ByteOrder.nativeOrder());
        DataBuffer data = Nd4j.createBuffer(floats, DataType.FLOAT, (int) (bytes / Float.BYTES)); // the one copy
        return Nd4j.create(data, shape);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException(
                    "iterator over " + loader.dataset() + " is closed (expected: an open" + " GranaryDataSetIterator)");
        }
    }

    @Serial
    private void writeObject(ObjectOutputStream out) throws NotSerializableException {
        throw new NotSerializableException(getClass().getName() + " holds a loader's threads and off-heap memory"
                + " (expected: serialize its state(), a LoaderState, and build a new iterator with resume(state))");
    }

    @Serial
    private void readObject(ObjectInputStream in) throws NotSerializableException {
        throw new NotSerializableException(getClass().getName());
    }

    /** One encoded sample: its row of features and its row of labels. */
    private record Rows(float[] features, float[] labels) {}

    /** Runs the user's encoder on a worker thread, into fresh arrays. */
    private record EncodingDecoder(SampleEncoder encoder, int columns, int outcomes) implements Decoder<Rows> {
        @Override
        public Rows decode(Sample sample) throws Exception {
            Rows rows = new Rows(new float[columns], new float[outcomes]);
            encoder.encode(sample, rows.features, rows.labels);
            return rows;
        }
    }

    /** Packs a batch as native-order floats: every row's features, then every row's labels. */
    private record RowCollator(int columns, int outcomes) implements Collator<Rows> {
        @Override
        public long collate(List<Rows> items, MemorySegment staging) {
            int n = items.size();
            long labelsAt = (long) n * columns * Float.BYTES;
            for (int i = 0; i < n; i++) {
                Rows rows = items.get(i);
                MemorySegment.copy(
                        rows.features, 0, staging, ValueLayout.JAVA_FLOAT, (long) i * columns * Float.BYTES, columns);
                MemorySegment.copy(
                        rows.labels,
                        0,
                        staging,
                        ValueLayout.JAVA_FLOAT,
                        labelsAt + (long) i * outcomes * Float.BYTES,
                        outcomes);
            }
            return (long) n * (columns + outcomes) * Float.BYTES;
        }
    }

    /**
     * Configures a {@link GranaryDataSetIterator}. {@link #features(int)} (or {@link #featureShape(long...)}) and
     * {@link #labels(int)} are required; every setter validates its argument at once. The loader's options — batch
     * size, shuffle, shard, workers, prefetch, … — have one home, the loader's own builder, reached through
     * {@link #loader(Consumer)}, so the iterator offers every option the loader has
     * (docs/decisions/0020-one-home-per-option.md). Not thread-safe.
     */
    public static final class Builder {

        private final Dataset dataset;
        private final SampleEncoder encoder;
        /** The loader's options; its decoder is {@link #decoder}, known once the shapes are (at build()). */
        private final DataLoader.Builder<Rows> options;

        private EncodingDecoder decoder;
        private long[] featureShape;
        private int columns;
        private int outcomes;
        private List<String> labelNames;
        private DataSetPreProcessor preProcessor;
        private LoaderState resume;

        private Builder(Dataset dataset, SampleEncoder encoder) {
            this.dataset = dataset;
            this.encoder = encoder;
            // The decoder is set by build(), before the loader starts any worker: the workers see it.
            this.options = DataLoader.builder(dataset, sample -> decoder.decode(sample));
        }

        /**
         * Sets the number of feature values per example: features come as {@code [n, columns]}.
         *
         * @param columns {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if less than 1
         */
        public Builder features(int columns) {
            if (columns < 1) {
                throw new IllegalArgumentException("features: " + columns + " (expected: >= 1 columns)");
            }
            return featureShape(columns);
        }

        /**
         * Sets the shape of one example's features: features come as {@code [n, shape…]}, e.g. {@code (1, 28, 28)}
         * for a convolutional network's {@code [n, channels, height, width]}. The encoder fills them row-major.
         *
         * @param shape one or more dimensions, each {@code >= 1}, with a product of at most {@code 2^31 - 1}
         * @return this builder
         * @throws IllegalArgumentException if empty, a dimension is less than 1, or the product is too large
         */
        public Builder featureShape(long... shape) {
            if (shape == null || shape.length == 0) {
                throw new IllegalArgumentException("feature shape: " + Arrays.toString(shape) + " (expected: one or"
                        + " more dimensions, such as (784) or (1, 28, 28))");
            }
            long product = 1;
            for (long d : shape) {
                if (d < 1) {
                    throw new IllegalArgumentException(
                            "feature shape: " + Arrays.toString(shape) + " (expected:" + " every dimension >= 1)");
                }
                product *= d;
                if (product > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException("feature shape: " + Arrays.toString(shape) + " (expected:"
                            + " at most " + Integer.MAX_VALUE + " values per example)");
                }
            }
            this.featureShape = shape.clone();
            this.columns = (int) product;
            return this;
        }

        /**
         * Sets the number of label values per example: labels come as {@code [n, columns]} (a one-hot class: the
         * number of classes).
         *
         * @param columns {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if less than 1
         */
        public Builder labels(int columns) {
            if (columns < 1) {
                throw new IllegalArgumentException("labels: " + columns + " (expected: >= 1 columns)");
            }
            this.outcomes = columns;
            return this;
        }

        /**
         * Names the classes, for {@link GranaryDataSetIterator#getLabels()} and DL4J's {@code Evaluation}.
         * Default: none.
         *
         * @param names one per label column, none null
         * @return this builder
         * @throws IllegalArgumentException if the list is null or holds a null
         */
        public Builder labelNames(List<String> names) {
            if (names == null || names.stream().anyMatch(Objects::isNull)) {
                throw new IllegalArgumentException(
                        "label names: " + names + " (expected: a list of names, one per" + " label column, none null)");
            }
            this.labelNames = List.copyOf(names);
            return this;
        }

        /**
         * Sets the loader's options on the loader's own builder, {@link DataLoader.Builder}, with its defaults: the
         * batch size (default 32; {@link GranaryDataSetIterator#batch()}), the order ({@code shuffle}; default
         * sequential, as for evaluation), this rank's part ({@code shard}, {@code ranksPerNode}), {@code workers} (the
         * threads that run the encoder and collate batches), {@code prefetch}, {@code dropLast},
         * {@code readAhead}, {@code maxBytesInFlight}, {@code skipFailedSamples}, {@code pinnedStaging}, and every
         * other option the loader has or gains. Applied now, to the loader's builder, which validates each at once;
         * calls add up, the last setting of an option wins. Only the staging buffers are the iterator's own — it sizes
         * them from the batch size and the row, and fills them — so {@code staging(...)} is refused.
         *
         * {@snippet :
         * GranaryDataSetIterator.builder(dataset, encoder)
         *         .features(784).labels(10)
         *         .loader(options -> options.batchSize(64).shuffle(42L).shard(rank, worldSize).workers(4))
         *         .build();
         * }
         *
         * <p>The function may be a {@code Consumer<DataLoader.Builder<?>>}, shared with other loaders' builders (the
         * DJL adapter's {@code loader(...)} takes the same).
         *
         * @param configure sets options on the loader's builder
         * @return this builder
         * @throws IllegalArgumentException if null, if it sets an option out of range, or if it sets staging buffers
         */
        public Builder loader(Consumer<? super DataLoader.Builder<?>> configure) {
            if (configure == null) {
                throw new IllegalArgumentException("loader options: null (expected: a function that sets options on"
                        + " the DataLoader.Builder, such as options -> options.batchSize(64).workers(4))");
            }
            long staging = options.options().stagingBytes();
            configure.accept(options);
            long set = options.options().stagingBytes();
            if (set != staging) {
                throw new IllegalArgumentException("staging: " + set + " bytes per batch, set through loader(...)"
                        + " (expected: no staging(...): the iterator sizes its staging buffers from the batch size and"
                        + " the row, and fills them; pinnedStaging(true) page-locks them)");
            }
            return this;
        }

        /**
         * Sets the pre-processor applied to every batch (see
         * {@link GranaryDataSetIterator#setPreProcessor(DataSetPreProcessor)}). Default: none.
         *
         * @param preProcessor the pre-processor, or null for none
         * @return this builder
         */
        public Builder preProcessor(DataSetPreProcessor preProcessor) {
            this.preProcessor = preProcessor;
            return this;
        }

        /**
         * Starts where {@code state} left off instead of at epoch 0: the iterator's first batches are exactly the ones
         * the iterator that took the state had not handed out. The state is checked against the configuration by
         * {@link #build()}.
         *
         * @param state a state from {@link GranaryDataSetIterator#state()}, e.g. {@code LoaderState.decode(text)}
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder resume(LoaderState state) {
            if (state == null) {
                throw new IllegalArgumentException("resume state: null (expected: a LoaderState from"
                        + " iterator.state() or LoaderState.decode(text))");
            }
            this.resume = state;
            return this;
        }

        /**
         * Builds the iterator and starts reading its first epoch.
         *
         * @return a new iterator; close it
         * @throws IllegalStateException    if {@code features} or {@code labels} was not set
         * @throws IllegalArgumentException if the label names do not match the label columns, a batch would not fit a
         *                                  staging buffer, the world size exceeds the dataset, an epoch of this rank
         *                                  has no batch (drop-last with fewer samples than the batch size), or the
         *                                  resume state is from a differently configured iterator
         */
        public GranaryDataSetIterator build() {
            if (featureShape == null) {
                throw new IllegalStateException(
                        "features: not set (expected: features(columns) or" + " featureShape(dims) before build())");
            }
            if (outcomes == 0) {
                throw new IllegalStateException("labels: not set (expected: labels(columns) before build())");
            }
            if (labelNames != null && labelNames.size() != outcomes) {
                throw new IllegalArgumentException("label names: " + labelNames.size() + " names (expected: " + outcomes
                        + ", one per label column)");
            }
            int batchSize = options.options().batchSize();
            long rowBytes = ((long) columns + outcomes) * Float.BYTES;
            if ((long) columns * Float.BYTES > (Integer.MAX_VALUE - 8) / batchSize
                    || (long) outcomes * Float.BYTES > (Integer.MAX_VALUE - 8) / batchSize) {
                throw new IllegalArgumentException("batch of " + batchSize + " rows of " + columns + " features and "
                        + outcomes + " labels (expected: each array of a batch under 2 GiB, which ND4J copies through"
                        + " one ByteBuffer; use a smaller batch size)");
            }
            decoder = new EncodingDecoder(encoder, columns, outcomes);
            DataLoader<Rows> loader = options.staging(batchSize * rowBytes, new RowCollator(columns, outcomes))
                    .build();
            try {
                if (loader.batchesPerEpoch() == 0) {
                    LoaderState s = loader.state();
                    throw new IllegalArgumentException(
                            "batch size: " + batchSize + (s.dropLast() ? " with dropLast" : "") + " for "
                                    + dataset.size() + " samples over " + s.worldSize() + " rank(s) (expected:"
                                    + " at least one " + (s.dropLast() ? "full " : "") + "batch per epoch)");
                }
                long first = 0;
                if (resume != null) {
                    loader.resume(resume);
                    first = resume.epoch();
                }
                return new GranaryDataSetIterator(this, loader, first);
            } catch (RuntimeException | Error e) {
                loader.close();
                throw e;
            }
        }
    }
}
