// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.internal.FlightEvents;
import dev.granary.internal.ReadAccount;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The work of one epoch: a feeder walks the epoch's samples in sampler order and starts each read on a virtual thread
 * (bounded by the read-ahead window and the bytes in flight); a finished read is decoded on the loader's worker pool;
 * a batch whose samples are all decoded completes its future. The trainer takes batches in order from a queue of
 * {@code prefetch} batches: while it is full the feeder waits, so a slow trainer stops the read-ahead.
 *
 * <p>Memory bound: at most {@code prefetch} batches are started and not yet taken; the raw bytes read and not yet
 * decoded stay under {@code maxBytesInFlight} (plus one sample, so a sample larger than the bound still goes).
 *
 * <p>Shards in parts: when {@link StreamPlan} says the epoch's order allows it (a {@link WebDataset} read in an order
 * that keeps few shards open at once), a {@link ShardStream} reads the shards' large parts ahead in order of first use
 * and a sample's read is {@link ShardStream#take(int)} — a slice of its part — instead of a ranged read of its own.
 * The parts held then are the bytes in flight, bounded by the stream against the settings' {@code streamBudget}
 * (plus the parts of the earliest sample not yet served).
 */
final class EpochRun<T> {

    private static final System.Logger LOG = System.getLogger(EpochRun.class.getName());

    /** Whom an epoch tells where the trainer is: the loader, which keeps the resumable position. */
    interface Owner<T> {
        /** The trainer took a batch: the next one it gets is {@code nextBatch}. */
        void advanced(EpochRun<T> run, long nextBatch);

        /** The trainer took the epoch's last batch. */
        void finished(EpochRun<T> run);

        /** The epoch was closed (by the trainer, a new epoch, or the loader). */
        void closed(EpochRun<T> run);
    }

    final long epoch;
    final long firstBatch;
    final long endBatch;
    private final LoaderSettings<T> settings;
    private final LoaderCounters counters;
    private final Executor workers;
    /** The staging buffers of collated batches, or null without staging. */
    private final StagingPool staging;

    private final Owner<T> owner;
    private final int[] order;
    private final ArrayBlockingQueue<PendingBatch<T>> ready;
    private final Semaphore readSlots;
    private final ByteBudget budget;
    /** Reads the shards in parts when the epoch's order allows; null for per-sample reads. */
    private final ShardStream stream;

    private final Set<Thread> readers = ConcurrentHashMap.newKeySet();
    /** Reads and decodes started and not finished; close waits for 0. */
    private final AtomicInteger active = new AtomicInteger();

    private final Object idle = new Object();
    private final Thread feeder;
    private volatile boolean cancelled;
    /** Why the feeder stopped early, if it failed; the trainer gets it instead of waiting forever. */
    private volatile Throwable feedFailure;
    /** The batch the feeder is starting reads for, so that closing or a feeder failure can complete it. */
    private volatile PendingBatch<T> feeding;
    /** The next batch the trainer gets; only the trainer thread moves it. */
    private long next;
    /** A batch taken from the queue whose future the trainer has not seen complete (it was interrupted). */
    private volatile PendingBatch<T> taken;
    /** The batch handed to the trainer last: its staging buffer is reused once the trainer asks for the next. */
    private volatile PendingBatch<T> handed;
    /** The loader's figures when the epoch started, and a source of them; set by the loader before start(). */
    LoaderStats statsAtStart;

    Supplier<LoaderStats> loaderStats;
    /** The loader's figures when the epoch closed (its reads and decodes stopped). */
    private volatile LoaderStats statsAtEnd;

    EpochRun(
            LoaderSettings<T> settings,
            LoaderCounters counters,
            Executor workers,
            StagingPool staging,
            Owner<T> owner,
            long epoch,
            int[] order,
            long firstBatch,
            long endBatch) {
        this.settings = settings;
        this.counters = counters;
        this.workers = workers;
        this.staging = staging;
        this.owner = owner;
        this.epoch = epoch;
        this.order = order;
        this.firstBatch = firstBatch;
        this.endBatch = endBatch;
        this.next = firstBatch;
        this.ready = new ArrayBlockingQueue<>(settings.prefetch());
        this.readSlots = new Semaphore(settings.readAhead());
        this.budget = new ByteBudget(settings.maxBytesInFlight());
        this.feeder = Thread.ofVirtual().name("granary-loader-feeder-" + epoch).unstarted(this::feed);
        long size = settings.batchSize();
        this.stream = openStream(
                (int) Math.min(order.length, firstBatch * size), (int) Math.min(order.length, endBatch * size));
    }

    /** Plans the epoch's reads: a stream of shard parts if its order allows, else null (per-sample reads). */
    private ShardStream openStream(int from, int to) {
        StreamPlan plan = StreamPlan.forEpoch(settings, order, from, to);
        if (!plan.considered()) {
            return null; // the loader or the dataset does not stream: nothing to tell
        }
        ShardedDataset shards = (ShardedDataset) settings.dataset();
        if (!plan.streams()) {
            // Once per loader at INFO (the order is a configuration choice, the same every epoch), then DEBUG.
            System.Logger.Level level = counters.firstFallback() ? System.Logger.Level.INFO : System.Logger.Level.DEBUG;
            LOG.log(
                    level,
                    () -> "loader over " + shards + ": epoch " + epoch + " reads each sample as its own extent,"
                            + " not the shards in parts: " + plan.reason());
            return null;
        }
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> "loader over " + shards + ": epoch " + epoch + " streams its shards: " + plan.reason());
        long parallelism = Math.max(1, Math.min(settings.readAhead(), settings.streamBudget() / settings.partSize()));
        return new ShardStream(
                shards,
                plan,
                order,
                (int) parallelism,
                settings.streamBudget(),
                Long.toString(epoch),
                counters.account);
    }

    /** Freezes the epoch's figures (the first call counts). */
    void endStats() {
        if (statsAtEnd == null && loaderStats != null) {
            counters.epochEnded();
            statsAtEnd = loaderStats.get();
        }
    }

    /** {@return the figures of this epoch alone: until now while it runs, until it closed once closed} */
    LoaderStats stats() {
        LoaderStats end = statsAtEnd;
        return (end != null ? end : loaderStats.get()).minus(statsAtStart);
    }

    void start() {
        if (stream != null) {
            stream.start();
        }
        feeder.start();
    }

    /** {@return whether this epoch reads its shards in parts} */
    boolean streams() {
        return stream != null;
    }

    /** {@return the epoch's shard stream, or null if it reads per sample (tests: what it held)} */
    ShardStream shardStream() {
        return stream;
    }

    boolean hasNext() {
        ensureOpen();
        return next < endBatch;
    }

    /**
     * Hands the trainer the next batch. An interrupt leaves the position where it was (the same batch comes on the
     * next call); a failed batch counts as handed out.
     */
    Batch<T> next() {
        ensureOpen();
        PendingBatch<T> previous = handed;
        if (previous != null) {
            handed = null;
            releaseStaging(previous);
        }
        long wait0 = System.nanoTime();
        int depth = readyDepth();
        Object event = FlightEvents.batchWaitBegin();
        counters.waitingSince = wait0;
        try {
            while (taken == null) {
                taken = ready.poll(100, TimeUnit.MILLISECONDS); // wakes to notice a close or a failed feeder
                if (taken == null) {
                    ensureOpen();
                    Throwable failure = feedFailure;
                    if (failure != null && ready.isEmpty()) {
                        throw new IllegalStateException(
                                "epoch " + epoch + ": the loader's feeder failed at batch " + next + ": " + failure,
                                failure);
                    }
                }
            }
            Batch<T> batch = taken.future.get();
            ensureOpen(); // closed meanwhile: its batches were cut short by the close, not real ones
            advance();
            counters.delivered(batch.size(), System.nanoTime() - wait0, depth);
            FlightEvents.batchWaitEnd(event, settings.dataset(), epoch, next - 1, depth, batch.size(), false);
            return batch;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(
                    "interrupted while waiting for batch " + next + " of epoch " + epoch
                            + " (the position is kept: the next call waits for the same batch)",
                    e);
        } catch (CancellationException e) {
            ensureOpen();
            throw new IllegalStateException("epoch " + epoch + " was closed", e);
        } catch (ExecutionException e) {
            advance();
            counters.took(System.nanoTime() - wait0, depth);
            FlightEvents.batchWaitEnd(event, settings.dataset(), epoch, next - 1, depth, 0, true);
            Throwable cause = e.getCause();
            if (cause instanceof SampleException se) {
                se.addSuppressed(new SampleException.TrainerFrame(epoch, next - 1)); // where the trainer asked
                throw se;
            }
            throw new IllegalStateException("batch " + (next - 1) + " of epoch " + epoch + " failed: " + cause, cause);
        } finally {
            counters.waitingSince = 0;
        }
    }

    private void advance() {
        handed = taken;
        taken = null;
        next++;
        owner.advanced(this, next);
        if (next == endBatch) {
            owner.finished(this);
        }
    }

    private void ensureOpen() {
        if (cancelled) {
            throw new IllegalStateException(
                    "epoch " + epoch + " is closed (expected: an open epoch; call" + " loader.epoch(n) for a new one)");
        }
    }

    // --------------------------------------------------------------------------------------------- the feeder

    private void feed() {
        int batchSize = settings.batchSize();
        try {
            for (long b = firstBatch; b < endBatch && !cancelled; b++) {
                int from = (int) (b * batchSize);
                int to = (int) Math.min(order.length, from + (long) batchSize);
                PendingBatch<T> pending =
                        new PendingBatch<>(epoch, b, Arrays.copyOfRange(order, from, to), this::finish);
                feeding = pending;
                ready.put(pending); // blocks while prefetch batches wait for the trainer: back-pressure
                for (int j = 0; j < pending.indices.length && !cancelled; j++) {
                    int index = pending.indices[j];
                    int position = from + j;
                    if (stream != null) { // the stream counts the bytes: its parts and copies
                        readSlots.acquire();
                        if (cancelled) {
                            readSlots.release();
                            break;
                        }
                        startRead(pending, j, index, position, 0);
                        continue;
                    }
                    long estimate = estimate(index);
                    budget.acquire(estimate);
                    readSlots.acquire();
                    if (cancelled) {
                        readSlots.release();
                        budget.release(estimate);
                        break;
                    }
                    startRead(pending, j, index, position, estimate);
                }
            }
            feeding = null;
        } catch (InterruptedException e) {
            // closed: abandon() completes the batches
        } catch (RuntimeException | Error e) {
            LOG.log(
                    System.Logger.Level.ERROR,
                    "loader over " + settings.dataset() + ": feeder of epoch " + epoch + " failed",
                    e);
            feedFailure = e;
            PendingBatch<T> current = feeding;
            if (current != null) { // some of its samples were never started: the batch cannot complete
                current.future.completeExceptionally(e);
            }
        }
    }

    /** Bytes to reserve before reading a sample: its size if known, else the mean of those read so far. */
    private long estimate(int index) {
        long known = settings.dataset().byteSize(index);
        if (known >= 0) {
            return known;
        }
        long mean = counters.meanSampleBytes();
        // Before any size is known, one read at a time: a dataset of huge objects must not start readAhead of them.
        return mean < 0 ? settings.maxBytesInFlight() : mean;
    }

    private void startRead(PendingBatch<T> pending, int slot, int index, int position, long estimate) {
        active.incrementAndGet();
        Thread.ofVirtual().name("granary-loader-read").start(() -> {
            readers.add(Thread.currentThread());
            Sample sample = null;
            SampleException failure = null;
            long held = estimate;
            try {
                if (!cancelled) {
                    ShardStream parts = stream;
                    sample = ReadAccount.call(
                            counters.account,
                            () -> parts != null
                                    ? parts.take(position)
                                    : settings.dataset().read(index));
                    long actual = sample.size();
                    if (parts == null) {
                        budget.adjust(actual - estimate);
                        held = actual;
                    }
                    counters.observed(actual);
                }
            } catch (IOException | RuntimeException | Error e) {
                failure = failure(pending, index, e);
            } finally {
                readers.remove(Thread.currentThread());
                readSlots.release();
                Thread.interrupted(); // an interrupt from close is consumed here, not leaked to the next task
            }
            if (sample == null) {
                budget.release(held);
                slotFailed(pending, slot, failure);
                done();
                return;
            }
            decode(pending, slot, sample, held);
        });
    }

    private void decode(PendingBatch<T> pending, int slot, Sample sample, long held) {
        Runnable task = () -> {
            try {
                if (!cancelled) {
                    long decode0 = System.nanoTime();
                    T item = settings.decoder().decode(sample);
                    counters.decodeNanos.add(System.nanoTime() - decode0);
                    if (item == null) {
                        throw new NullPointerException("decoder returned null (expected: a decoded item)");
                    }
                    pending.set(slot, item, sample.size(), counters);
                } else {
                    slotFailed(pending, slot, null);
                }
            } catch (InternalError e) {
                // A zero-copy sample is a view of a cache file; if that file was truncated or its device failed
                // under the decoder, the JVM reports the fault as an InternalError: hand the trainer an I/O failure.
                slotFailed(
                        pending,
                        slot,
                        failure(
                                pending,
                                sample.index(),
                                new IOException(
                                        "cannot read"
                                                + " sample " + sample.index()
                                                + ": the cache file under it was damaged (truncated or"
                                                + " failing)",
                                        e)));
            } catch (Exception | Error e) {
                slotFailed(pending, slot, failure(pending, sample.index(), e));
            } finally {
                sample.release();
                budget.release(held);
                done();
            }
        };
        try {
            workers.execute(task);
        } catch (RejectedExecutionException e) { // the loader is closed
            sample.release();
            budget.release(held);
            slotFailed(pending, slot, cancelled ? null : failure(pending, sample.index(), e));
            done();
        }
    }

    /** A slot that yields nothing: cancelled ({@code failure == null}), skipped and counted, or failing its batch. */
    private void slotFailed(PendingBatch<T> pending, int slot, SampleException failure) {
        boolean skip = failure == null || cancelled || settings.skipFailed();
        if (failure != null && !cancelled) {
            counters.sampleFailed(skip);
        }
        pending.slotFailed(slot, skip ? null : failure);
    }

    private SampleException failure(PendingBatch<T> pending, int index, Throwable cause) {
        Dataset dataset = settings.dataset();
        return new SampleException(dataset.key(index), index, dataset.source(index), epoch, pending.number, cause);
    }

    private void done() {
        if (active.decrementAndGet() == 0) {
            synchronized (idle) {
                idle.notifyAll();
            }
        }
    }

    // --------------------------------------------------------------------------------------------- closing

    /** Stops the work, waits for reads and decodes in progress (reads are interrupted), releases everything. */
    void abandon() {
        cancelled = true;
        feeder.interrupt();
        for (Thread reader : readers) {
            reader.interrupt();
        }
        try {
            feeder.join(TimeUnit.SECONDS.toMillis(30));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            synchronized (idle) {
                while (active.get() > 0 && System.nanoTime() < deadline) {
                    for (Thread reader : readers) {
                        reader.interrupt();
                    }
                    idle.wait(10);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (stream != null) {
            stream.close(); // every part lease: none outlives the epoch
        }
        // Whatever the trainer may be waiting for completes now: it gets "closed", never a hang.
        CancellationException closed = new CancellationException("epoch " + epoch + " closed");
        PendingBatch<T> current = feeding;
        if (current != null) {
            current.future.completeExceptionally(closed);
        }
        for (PendingBatch<T> p : ready) {
            p.future.completeExceptionally(closed);
            releaseStaging(p);
        }
        ready.clear();
        releaseStaging(current);
        releaseStaging(taken);
        releaseStaging(handed);
        owner.closed(this);
    }

    /** {@return the batches decoded and waiting for the trainer, at the head of the queue} */
    int readyDepth() {
        int depth = 0;
        for (PendingBatch<T> p : ready) {
            if (!p.future.isDone()) {
                break;
            }
            depth++;
        }
        return depth;
    }

    /** Threads of this epoch still running: the feeder and the readers (for tests and diagnostics). */
    List<Thread> threads() {
        List<Thread> threads = new ArrayList<>(readers);
        if (feeder.isAlive()) {
            threads.add(feeder);
        }
        if (stream != null) {
            threads.addAll(stream.threads());
        }
        return threads;
    }

    // --------------------------------------------------------------------------------------------- parts

    /** A batch being read and decoded: one slot per sample, completed when every slot is. */
    static final class PendingBatch<T> {
        final long epoch;
        final long number;
        final int[] indices;
        final CompletableFuture<Batch<T>> future = new CompletableFuture<>();
        private final Object[] items;
        private final boolean[] skipped;
        private int remaining;
        private SampleException firstFailure;
        private final Finisher<T> finisher;
        /** The staging buffer the batch was collated into, until the trainer is done with it. */
        private MemorySegment buffer;

        PendingBatch(long epoch, long number, int[] indices, Finisher<T> finisher) {
            this.finisher = finisher;
            this.epoch = epoch;
            this.number = number;
            this.indices = indices;
            this.items = new Object[indices.length];
            this.skipped = new boolean[indices.length];
            this.remaining = indices.length;
            if (remaining == 0) {
                future.complete(new Batch<>(epoch, number, List.of(), indices, null));
            }
        }

        void set(int slot, T item, long bytes, LoaderCounters counters) {
            synchronized (this) {
                items[slot] = item;
            }
            counters.bytes.add(bytes);
            complete();
        }

        /** A slot that yields nothing: skipped, or failing the batch with {@code failure} if not null. */
        void slotFailed(int slot, SampleException failure) {
            synchronized (this) {
                skipped[slot] = true;
                if (failure != null && firstFailure == null) {
                    firstFailure = failure;
                }
            }
            complete();
        }

        private void complete() {
            Batch<T> batch = null;
            SampleException failure = null;
            synchronized (this) {
                if (--remaining > 0) {
                    return;
                }
                if (firstFailure != null) {
                    failure = firstFailure;
                } else {
                    List<T> list = new ArrayList<>(items.length);
                    int[] kept = new int[items.length];
                    int n = 0;
                    for (int i = 0; i < items.length; i++) {
                        if (!skipped[i]) {
                            @SuppressWarnings("unchecked")
                            T item = (T) items[i];
                            list.add(item);
                            kept[n++] = indices[i];
                        }
                    }
                    batch = new Batch<>(
                            epoch, number, Collections.unmodifiableList(list), Arrays.copyOf(kept, n), null);
                }
                Arrays.fill(items, null);
            }
            if (failure != null) {
                future.completeExceptionally(failure);
                return;
            }
            try {
                future.complete(finisher.finish(this, batch));
            } catch (Exception | Error e) {
                future.completeExceptionally(new IllegalStateException(
                        "collating batch " + number + " of epoch " + epoch + " failed: " + e, e));
            }
        }

        synchronized void staged(MemorySegment buffer) {
            this.buffer = buffer;
        }

        synchronized MemorySegment bufferView(long written) {
            return buffer.asSlice(0, written).asReadOnly();
        }

        /** {@return the staging buffer, handing it over once: later calls return null} */
        synchronized MemorySegment takeBuffer() {
            MemorySegment b = buffer;
            buffer = null;
            return b;
        }
    }

    /** Turns a complete batch into what the trainer gets: collated into a staging buffer when configured. */
    @FunctionalInterface
    interface Finisher<T> {
        Batch<T> finish(PendingBatch<T> pending, Batch<T> batch) throws Exception;
    }

    private Batch<T> finish(PendingBatch<T> pending, Batch<T> batch) throws Exception {
        StagingPool pool = staging;
        if (pool == null || cancelled) {
            return batch;
        }
        MemorySegment buffer = pool.acquire();
        try {
            long written = settings.collator().collate(batch.items(), buffer);
            if (written < 0 || written > buffer.byteSize()) {
                throw new IllegalStateException("collator wrote " + written + " bytes (expected: 0.."
                        + buffer.byteSize() + ", the staging buffer's size)");
            }
            pending.staged(buffer);
            buffer = null;
            return new Batch<>(
                    batch.epoch(), batch.index(), batch.items(), batch.indices(), pending.bufferView(written));
        } finally {
            if (buffer != null) {
                pool.release(buffer);
            }
        }
    }

    /** Returns a batch's staging buffer to the pool, once. */
    private void releaseStaging(PendingBatch<T> pending) {
        if (pending != null && staging != null) {
            MemorySegment buffer = pending.takeBuffer();
            if (buffer != null) {
                staging.release(buffer);
            }
        }
    }

    /** Bytes read and not yet decoded, bounded; one sample may exceed the bound when nothing else is held. */
    static final class ByteBudget {
        private final long limit;
        private long used;

        ByteBudget(long limit) {
            this.limit = limit;
        }

        synchronized void acquire(long bytes) throws InterruptedException {
            while (used > 0 && used + bytes > limit) {
                wait();
            }
            used += bytes;
        }

        synchronized void adjust(long delta) {
            used += delta;
            if (delta < 0) {
                notifyAll();
            }
        }

        synchronized void release(long bytes) {
            used -= bytes;
            notifyAll();
        }

        synchronized long used() {
            return used;
        }
    }
}
