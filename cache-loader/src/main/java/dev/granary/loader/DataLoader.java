// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.CacheSimulation;
import dev.granary.CacheStats;
import dev.granary.EpochDriver;
import dev.granary.TierStats;
import dev.granary.internal.ByteSizes;
import dev.granary.internal.ReadAccount;
import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Turns a {@link Dataset} and a seeded {@link Sampler} into batches for a trainer: reads ahead in the exact order the
 * epoch will be consumed, decodes on a bounded pool of worker threads, and hands batches over in sampler order
 * through a bounded queue.
 *
 * {@snippet :
 * DataLoader<Example> loader = DataLoader.builder(dataset, sample -> decode(sample))
 *         .batchSize(64).shuffle(42L).shard(rank, worldSize).workers(8).prefetch(4).build();
 * for (int epoch = 0; epoch < epochs; epoch++) {
 *     try (Epoch<Example> batches = loader.epoch(epoch)) {
 *         for (Batch<Example> batch : batches) {
 *             train(batch.items());
 *         }
 *     }
 * }
 * }
 *
 * <h2>How the work flows</h2>
 * Each sample read runs on its own virtual thread; at most {@link Builder#readAhead(int)} run at once, the raw bytes
 * read and not yet decoded stay under {@link Builder#maxBytesInFlight(long)}, and the origin's own concurrency limit
 * bounds what reaches the origin. Decoding runs on {@link Builder#workers(int)} platform threads. At most
 * {@link Builder#prefetch(int)} batches are started ahead of the trainer: when the trainer is slow the read-ahead
 * stops, so memory stays bounded whatever the trainer does. {@link LoaderStats#dataWaitNanos()} says how long the
 * trainer waited.
 *
 * <h2>Watching for starvation</h2>
 * The loader measures the trainer's data-wait over a sliding window ({@link #dataWaitRatio()}); when it passes
 * {@link Builder#starvationThreshold(double)} (20 % by default) it logs one warning naming where the time goes
 * ({@link Starvation}) and calls {@link Builder#starvationListener}, and again only when the state changes.
 * {@link #stats()} counts only this loader's reads, even on a cache other loaders share; {@link Epoch#stats()} gives
 * one epoch's. {@code cache-micrometer} exports the same figures, and the JFR event {@code dev.granary.BatchWait}
 * records each batch's wait.
 *
 * <h2>Shards read in parts</h2>
 * Over a {@link WebDataset}, an epoch whose order keeps few shards open at once — sequential, or shuffled within
 * blocks of a few shards — reads each shard in large parts ({@link Builder#shardPartSize(int)}, 8 MiB by default)
 * ahead of the trainer, in parallel, and serves its samples as slices of them: one origin request per part instead of
 * one per sample, each part cached as one unit. The parts held (read ahead, or with samples not yet decoded) are
 * cached pages leased by the epoch; they count against {@link Builder#maxBytesInFlight(long)} if set, else against the
 * larger of 256 MiB and a quarter of the cache's capacity. An order whose parts cannot fit there — a global
 * per-sample shuffle needs the whole dataset — reads each sample as its own extent, and the loader logs why once.
 * Memory for streaming an order of blocks of {@code k} shards: {@code k × shard size} at least, twice that for the
 * next block to load while the trainer consumes this one. See {@link Builder#streamShards(boolean)}.
 *
 * <h2>Caching</h2>
 * By default the loader drives its cache through an {@link EpochDriver}: while an epoch runs, the cache's tiers keep a
 * stable resident set, exclusive across tiers, which reaches the hit-ratio ceiling {@code (C_mem + C_disk) / N} from
 * the second epoch on where LRU and W-TinyLFU do not (see docs/decisions/0005-epoch-aware-caching.md).
 *
 * <h2>Order and resumption</h2>
 * Epoch {@code e} visits this rank's samples in {@code Sampler.of(dataset, shuffle).shard(rank, worldSize,
 * partitioning, ranksPerNode, canonicalPartitions).epoch(e)}, the same on every machine; a rank computes only its own
 * part ({@link Sampler} gives the algorithm). {@link #state()} is the position just after the last batch handed to the
 * trainer; {@link #resume(LoaderState)}, in this JVM or a new one, makes the next {@link #epoch(long)} call yield
 * exactly the batches not handed out yet.
 *
 * <h2>Shuffles</h2>
 * {@link Shuffle#samples(long)} ({@code shuffle(seed)}) permutes all samples every epoch.
 * {@link Shuffle#shardBlocks(long, int)} permutes the shards of a {@link WebDataset}, cuts them into blocks of {@code
 * k} and shuffles samples within a
 * block, so that an epoch reads {@code k} shards at a time and they can be read whole: use it when the dataset does
 * not fit the cache and the origin charges per request or is slow per request; the price is mixing limited to
 * {@code k} shards' samples at a time (docs/benchmarks.md, "Shuffle quality": choose {@code k} so a block holds a few
 * thousand samples from shards written in random order).
 *
 * <h2>Ranks, nodes and partitions</h2>
 * {@link Builder#shard(int, int, Partitioning)}: with {@link Partitioning#PER_EPOCH} (the default, PyTorch's
 * {@code DistributedSampler}) every epoch is dealt afresh, so a rank finds about {@code 1/W} of last epoch's samples in
 * its node's cache. With {@link Partitioning#STABLE} each node keeps one part of the dataset for the whole run — a
 * seeded random partition, whole shards for a {@link WebDataset} — and reshuffles within it every epoch, so a node
 * cache that holds its part serves every read from the second epoch on. {@link Builder#ranksPerNode(int)} makes the
 * ranks of one machine share its part (they split it afresh each epoch), for a cache per machine. The parts are unions
 * of {@link Builder#canonicalPartitions(int)} fixed partitions ({@value Sampler#DEFAULT_CANONICAL_PARTITIONS} by
 * default), so a job restarted on another number of nodes moves whole partitions, and a state at an epoch boundary
 * resumes on any number of ranks. Every rank yields the same number of samples per epoch: shorter parts are padded by
 * repeating their start ({@link Sampler} says by how much).
 *
 * <p>Why a stable partition is sound for data-parallel SGD: the partition is drawn at random, so each node's part is a
 * uniform random subset of the dataset (without replacement), and each step's gradient is the average over all ranks'
 * batches, i.e. over a batch that draws from every part; each epoch still visits every sample once, in a new order
 * within each part. What changes is only which samples can share a rank's batch — a constraint on the joint order,
 * not on the samples' distribution (MosaicML Streaming's canonical nodes and TensorFlow's per-worker file sharding
 * make the same trade). It is not sound when a part is not representative: a tiny dataset (a part of a few hundred
 * samples is a noisy sample of the whole), strongly clustered shards (a shard of one class or one source, with few
 * shards per node, gives nodes different distributions; write shards in random order or use more, smaller shards),
 * few canonical partitions (so few nodes that their parts differ visibly), or anything relying on per-rank statistics
 * such as batch norm without synchronisation. Then use PER_EPOCH (docs/decisions/0006-epoch-orders.md).
 *
 * <p>Thread-safe: one epoch at a time is open; starting a new one closes the previous. Close the loader to stop its
 * worker threads (idle workers also exit by themselves after a few seconds).
 *
 * @param <T> the decoded type
 */
public final class DataLoader<T> implements AutoCloseable {

    /** The bound on bytes read and not yet decoded when the builder did not set one. */
    static final long DEFAULT_MAX_BYTES_IN_FLIGHT = 256L << 20;
    /** The share of the cache's capacity an epoch may hold in shard parts when the builder set no bound. */
    static final int STREAM_SHARE_DIVISOR = 4;

    private static final Cleaner CLEANER = Cleaner.create();

    private final LoaderSettings<T> settings;
    private final LoaderOptions options;
    private final LoaderCounters counters;
    private final Dataset dataset;
    private final Sampler sampler;
    private final int batchSize;
    private final StagingPool staging;
    private final EpochRun.Owner<T> owner = new Positions();
    private final boolean dropLast;
    private final ThreadPoolExecutor workers;
    private final EpochDriver driver;
    private final List<String> tierNames;
    /** What this loader's reads caused in the cache (per-loader figures, not the cache-wide counters). */
    private final ReadAccount account;

    private final Cleaner.Cleanable resources;

    private final Object lock = new Object();
    private EpochRun<T> current;
    private LoaderState position;
    private LoaderState resumeFrom;
    private boolean closed;

    private DataLoader(Builder<T> b) {
        this.dataset = b.dataset;
        this.batchSize = b.batchSize;
        int readAhead = b.readAhead > 0 ? b.readAhead : (int) Math.min(1024, (long) b.batchSize * b.prefetch);
        long maxBytesInFlight = b.maxBytesInFlight > 0 ? b.maxBytesInFlight : DEFAULT_MAX_BYTES_IN_FLIGHT;
        long streamBudget = b.maxBytesInFlight > 0
                ? b.maxBytesInFlight
                : defaultStreamBudget(b.dataset.cache().stats());
        this.settings = new LoaderSettings<>(
                b.dataset,
                b.decoder,
                b.batchSize,
                b.prefetch,
                readAhead,
                maxBytesInFlight,
                streamBudget,
                b.skipFailed,
                b.collator,
                b.streamShards,
                b.partSize);
        this.options = b.options();
        this.account = new ReadAccount(dataset.cache().stats().tiers().size());
        this.counters = new LoaderCounters(
                b.prefetch,
                account,
                new StarvationAlarm(
                        b.starvationThreshold,
                        b.starvationWindow,
                        b.workers,
                        "loader over " + b.dataset,
                        b.starvationListener));
        this.dropLast = b.dropLast;
        this.sampler = b.sampler();
        AtomicInteger n = new AtomicInteger();
        this.workers =
                new ThreadPoolExecutor(b.workers, b.workers, 5, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
                    Thread t = new Thread(r, "granary-loader-worker-" + n.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
        workers.allowCoreThreadTimeOut(true);
        this.driver = b.drive ? dataset.cache().loaderSupport().driver() : null;
        // Buffers for the batches in the prefetch queue, the one the trainer holds and one being collated.
        this.staging = b.collator == null ? null : new StagingPool(b.prefetch + 2, b.stagingBytes, b.pinnedStaging);
        this.tierNames =
                dataset.cache().stats().tiers().stream().map(TierStats::name).toList();
        this.position = state(0, 0);
        // A loader dropped without close() must not keep pinning the cache's resident set nor its threads.
        this.resources = CLEANER.register(this, new Resources(workers, driver, staging));
    }

    /** {@return what epochs of this loader read with (tests: the resolved defaults)} */
    LoaderSettings<T> settings() {
        return settings;
    }

    /**
     * {@return the options this loader was built with}, as its builder held them ({@link Builder#options()}): for
     * code that wraps a loader, such as a framework adapter, and for checking a configuration
     */
    public LoaderOptions options() {
        return options;
    }

    /**
     * The bytes of shard parts an epoch may hold when the builder set no {@code maxBytesInFlight}: held parts are pages
     * in the cache's tiers, so a quarter of the cache — leaving the rest to what the epoch caches — or 256 MiB if
     * that is larger (a stream needs a few parts whatever the cache).
     */
    static long defaultStreamBudget(CacheStats stats) {
        long capacity = 0;
        for (TierStats tier : stats.tiers()) {
            capacity = saturatedAdd(capacity, tier.capacityBytes());
        }
        return Math.max(DEFAULT_MAX_BYTES_IN_FLIGHT, capacity / STREAM_SHARE_DIVISOR);
    }

    private static long saturatedAdd(long a, long b) {
        long sum = a + b;
        return ((a ^ sum) & (b ^ sum)) < 0 ? Long.MAX_VALUE : sum;
    }

    /** What a loader holds beyond the heap: released by close(), or by the cleaner for a forgotten loader. */
    private record Resources(ThreadPoolExecutor workers, EpochDriver driver, StagingPool staging) implements Runnable {
        @Override
        public void run() {
            workers.shutdown();
            if (driver != null) {
                driver.close();
            }
            if (staging != null) {
                try {
                    workers.awaitTermination(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                staging.close(); // frees the buffers: a batch's staging view is invalid after the loader closes
            }
        }
    }

    /**
     * Starts configuring a loader.
     *
     * @param dataset the samples
     * @param decoder turns a sample into what the trainer consumes; runs on worker threads
     * @param <T>     the decoded type
     * @return a builder
     * @throws IllegalArgumentException if either is null
     */
    public static <T> Builder<T> builder(Dataset dataset, Decoder<T> decoder) {
        if (dataset == null) {
            throw new IllegalArgumentException(
                    "dataset: null (expected: a Dataset such as Dataset.ofObjects(cache," + " \"train/\"))");
        }
        if (decoder == null) {
            throw new IllegalArgumentException(
                    "decoder: null (expected: a function from Sample to the trainer's" + " item)");
        }
        return new Builder<>(dataset, decoder);
    }

    /**
     * Starts epoch {@code epoch}: its reads begin at once, ahead of the trainer. Closes the previous epoch if it is
     * still open. After {@link #resume(LoaderState)}, the first call must be for the state's epoch and starts at its
     * next batch.
     *
     * @param epoch the epoch number, {@code >= 0}: it selects the shuffle's permutation
     * @return the epoch's batches; close it
     * @throws IllegalArgumentException if the epoch is negative, or differs from a pending resume state's epoch
     * @throws IllegalStateException    if the loader is closed
     */
    public Epoch<T> epoch(long epoch) {
        if (epoch < 0) {
            throw new IllegalArgumentException("epoch: " + epoch + " (expected: >= 0)");
        }
        EpochRun<T> previous;
        synchronized (lock) {
            ensureOpen();
            previous = current;
        }
        if (previous != null) {
            previous.abandon();
        }
        synchronized (lock) {
            ensureOpen();
            long first = 0;
            if (resumeFrom != null) {
                if (resumeFrom.epoch() != epoch) {
                    throw new IllegalArgumentException("epoch: " + epoch + " (expected: " + resumeFrom.epoch()
                            + ", the epoch of the state passed to resume(), which continues at batch "
                            + resumeFrom.nextBatch() + ")");
                }
                first = resumeFrom.nextBatch();
                resumeFrom = null;
            }
            long end = batchesPerEpoch();
            first = Math.min(first, end);
            int[] order = sampler.epoch(epoch);
            EpochRun<T> run = new EpochRun<>(settings, counters, workers, staging, owner, epoch, order, first, end);
            counters.epochStarted();
            run.statsAtStart = stats();
            run.loaderStats = this::stats;
            current = run;
            position = normalized(epoch, first);
            if (driver != null) {
                if (driver.inEpoch()) {
                    driver.endEpoch();
                }
                driver.startEpoch();
            }
            Epoch<T> handle = new Epoch<>(run, CLEANER);
            run.start();
            if (first == end) {
                owner.finished(run);
            }
            return handle;
        }
    }

    /**
     * Predicts the next {@code epochs} epochs without reading any data: {@link #plan(long, int)} from the epoch the
     * loader would start next — the one after an open epoch, the one a pending {@link #resume} continues (from its
     * batch), else {@link #state()}'s.
     *
     * @param epochs how many epochs to predict, {@code >= 1}
     * @return one prediction per epoch
     * @throws IllegalArgumentException if {@code epochs < 1}
     * @throws IllegalStateException    if the loader is closed, does not drive its cache, or the cache cannot be
     *                                  predicted (see {@link #plan(long, int)})
     */
    public LoaderPlan plan(int epochs) {
        long first;
        synchronized (lock) {
            ensureOpen();
            first = resumeFrom != null ? resumeFrom.epoch() : current != null ? current.epoch + 1 : position.epoch();
        }
        return plan(first, epochs);
    }

    /**
     * Predicts epochs {@code firstEpoch .. firstEpoch + epochs - 1}, run one after another with {@link #epoch(long)}
     * from the cache's contents now, without reading any data: per epoch, the reads each tier would serve, the origin
     * requests (data reads and metadata requests), the origin bytes and the hit ratio (see {@link EpochPlan}).
     *
     * <p>It runs this loader's own sampler (the same orders {@code epoch(e)} reads) against a copy of every tier
     * ({@link dev.granary.spi.Tier#simulation()}): what each holds now — a disk tier reopened over an earlier run's
     * pages included — its exact capacity with its per-page overhead (memory blocks and slabs, disk record headers and
     * whole segments), and the admission rule the tiers apply while a loader drives them (a stable resident set: pages
     * enter free room or replace dead ones). If a resume is pending for {@code firstEpoch}, that epoch starts at the
     * resumed batch, as {@code epoch(firstEpoch)} would. Nothing is read and nothing changes: not the cache, its
     * counters, its tiers' policies, nor an epoch that is running (whose remaining reads the plan does not include:
     * plan between epochs for exact figures).
     *
     * <p>How close: the loader reads a window of samples concurrently, so where a tier fills up the samples it admits
     * may differ by a window's worth; with samples of unequal sizes their number may then differ slightly. The plan
     * assumes no other reader uses the cache meanwhile, that versions the cache trusts stay trusted (a metadata TTL
     * shorter than an epoch adds up to one request per object read after it expired), and that no tier fails.
     * {@code PlanVersusRunTest} holds predictions against measured runs.
     *
     * @param firstEpoch the first epoch, {@code >= 0}
     * @param epochs     how many epochs, {@code >= 1}
     * @return one prediction per epoch
     * @throws IllegalArgumentException if {@code firstEpoch < 0} or {@code epochs < 1}
     * @throws IllegalStateException    if the loader is closed; if it does not drive its cache
     *                                  ({@code driveCache(false)}: its tiers' own policies then decide, which depend
     *                                  on timing and are not predicted); if a tier offers no simulation; or if an
     *                                  object's size is unknown to the dataset and the cache
     */
    public LoaderPlan plan(long firstEpoch, int epochs) {
        if (firstEpoch < 0) {
            throw new IllegalArgumentException("first epoch: " + firstEpoch + " (expected: >= 0)");
        }
        if (epochs < 1) {
            throw new IllegalArgumentException("epochs to plan: " + epochs + " (expected: >= 1)");
        }
        if (firstEpoch > Long.MAX_VALUE - epochs) {
            throw new IllegalArgumentException("first epoch: " + firstEpoch + " with " + epochs + " epochs"
                    + " (expected: epoch numbers within a long)");
        }
        long firstBatch;
        synchronized (lock) {
            ensureOpen();
            if (driver == null) {
                throw new IllegalStateException("plan of " + this + ": the loader does not drive its cache"
                        + " (driveCache(false)), so its tiers' own policies decide what stays, which depends on"
                        + " timing and is not predicted (expected: a loader built with driveCache(true), the"
                        + " default)");
            }
            firstBatch = resumeFrom != null && resumeFrom.epoch() == firstEpoch ? resumeFrom.nextBatch() : 0;
        }
        long end = batchesPerEpoch();
        List<DryRun.EpochSpec> specs = new ArrayList<>(epochs);
        for (int i = 0; i < epochs; i++) {
            long epoch = firstEpoch + i;
            specs.add(new DryRun.EpochSpec(
                    epoch, () -> sampler.epoch(epoch), i == 0 ? Math.min(firstBatch, end) : 0, end, batchSize));
        }
        CacheSimulation sim;
        try {
            sim = dataset.cache().loaderSupport().simulation(driver);
        } catch (IllegalStateException e) {
            synchronized (lock) {
                ensureOpen(); // closed meanwhile: say so, not that the driver is closed
            }
            throw e;
        }
        return new DryRun(sim, ReadUnits.of(settings)).run(specs);
    }

    /** {@return the number of batches in a whole epoch of this rank} */
    public long batchesPerEpoch() {
        int n = sampler.epochSize();
        return dropLast ? n / batchSize : (n + (long) batchSize - 1) / batchSize;
    }

    /** {@return the dataset} */
    public Dataset dataset() {
        return dataset;
    }

    /**
     * {@return whether the staging buffers are page-locked}: {@code "locked"}, {@code "not requested"}, {@code "no
     * staging"}, or the OS's reason for refusing ({@code RLIMIT_MEMLOCK}, …)
     */
    public String stagingPinning() {
        return staging == null ? "no staging" : staging.pinning();
    }

    /**
     * {@return the position just after the last batch handed to the trainer}: batches prefetched but not handed out
     * do not count. After the last batch of epoch {@code e} it is the start of epoch {@code e + 1}.
     */
    public LoaderState state() {
        synchronized (lock) {
            return position;
        }
    }

    /**
     * Makes the next {@link #epoch(long)} call continue where {@code state} left off (closing an open epoch): it must
     * be for
     * {@code state.epoch()}, and yields the batches from {@code state.nextBatch()} on — exactly the ones the loader
     * that took the state had not handed out, in the same order.
     *
     * <p>At an epoch boundary ({@code state.nextBatch() == 0}) the rank, world size and ranks per node may differ
     * from the loader's that took the state: an elastic restart on another number of ranks sees every sample of that
     * epoch once, like any epoch, and under {@link Partitioning#STABLE} each node's part is still a union of the same
     * canonical partitions. Within an epoch they must be equal.
     *
     * @param state a state from {@link #state()} of a loader with the same dataset size, batch size, drop-last,
     *              shuffle, partitioning, canonical partitions, and (within an epoch) rank, world size and ranks per
     *              node
     * @throws IllegalArgumentException if the state is null or from a differently configured loader, or its batch is
     *                                  past the epoch's end
     * @throws IllegalStateException    if the loader is closed
     */
    public void resume(LoaderState state) {
        if (state == null) {
            throw new IllegalArgumentException("state: null (expected: a LoaderState from loader.state())");
        }
        LoaderState mine = state(state.epoch(), state.nextBatch());
        boolean elastic = state.nextBatch() == 0
                && mine.equals(new LoaderState(
                        state.epoch(),
                        0,
                        state.datasetSize(),
                        state.batchSize(),
                        state.dropLast(),
                        state.shuffle(),
                        state.partitioning(),
                        sampler.rank(),
                        sampler.worldSize(),
                        sampler.ranksPerNode(),
                        state.canonicalPartitions()));
        if (!mine.equals(state) && !elastic) {
            throw new IllegalArgumentException("state: " + state.encode() + " (expected: a state of a loader"
                    + " configured like this one: " + mine.encode() + ")");
        }
        if (state.nextBatch() > batchesPerEpoch()) {
            throw new IllegalArgumentException("state: batch " + state.nextBatch() + " of epoch " + state.epoch()
                    + " (expected: at most " + batchesPerEpoch() + " batches per epoch)");
        }
        EpochRun<T> open;
        synchronized (lock) {
            ensureOpen();
            open = current;
        }
        if (open != null) {
            open.abandon(); // its position no longer matters: the resumed one does
        }
        synchronized (lock) {
            ensureOpen();
            resumeFrom = state;
            position = normalized(state.epoch(), state.nextBatch());
        }
    }

    /**
     * {@return a snapshot of the loader's counters since it was built} The tier hits, misses and origin figures are
     * this loader's own: the reads its epochs made and the origin reads their misses started — not the cache's
     * counters, which another loader or reader on the same cache also moves. A miss that joined another reader's
     * origin read of the same bytes counts as this loader's miss, but the origin read as the other's. For one
     * epoch's figures see {@link Epoch#stats()}.
     */
    public LoaderStats stats() {
        int queued;
        synchronized (lock) {
            queued = current == null ? 0 : current.readyDepth();
        }
        LoaderCounters c = counters;
        return new LoaderStats(
                c.samples.sum(),
                c.skipped.sum(),
                c.failed.sum(),
                c.batches.sum(),
                c.bytes.sum(),
                c.dataWait.sum(),
                queued,
                c.depthAtTake(),
                account.tierHits(),
                tierNames,
                account.misses(),
                account.originReads(),
                account.originBytes(),
                c.epochNanos());
    }

    /**
     * {@return the share of the starvation window (see {@link Builder#starvationWindow}) the trainer spent waiting
     * for batches, in [0, 1]} A wait in progress counts up to now, so a trainer stuck on a batch shows at once.
     * Also what {@code granary.loader.data.wait.ratio} reports. 0 before the trainer first asked for a batch.
     */
    public double dataWaitRatio() {
        return counters.dataWaitRatio();
    }

    /** {@return whether the starvation alarm is raised now: see {@link Builder#starvationThreshold}} */
    public boolean starved() {
        return counters.starved();
    }

    /**
     * Closes the open epoch (if any), stops the worker threads and stops driving the cache. The cache stays open: it
     * belongs to the caller. Idempotent.
     */
    @Override
    public void close() {
        EpochRun<T> run;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            run = current;
        }
        if (run != null) {
            run.abandon();
        }
        resources.clean(); // shuts the workers down and closes the driver
        try {
            workers.awaitTermination(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ------------------------------------------------------------------------------------- the epochs' position

    /** Keeps the resumable position as the open epoch's trainer moves, and ends the cache's epoch with it. */
    private final class Positions implements EpochRun.Owner<T> {

        @Override
        public void advanced(EpochRun<T> run, long nextBatch) {
            synchronized (lock) {
                if (current == run) {
                    position = normalized(run.epoch, nextBatch);
                }
            }
        }

        /** The trainer took the epoch's last batch: the cache no longer needs to hold its resident set for it. */
        @Override
        public void finished(EpochRun<T> run) {
            synchronized (lock) {
                if (current == run && driver != null && !closed) {
                    driver.endEpoch();
                }
            }
        }

        @Override
        public void closed(EpochRun<T> run) {
            run.endStats();
            synchronized (lock) {
                if (current == run) {
                    current = null;
                    if (driver != null && !closed) {
                        driver.endEpoch();
                    }
                }
            }
        }
    }

    /** Threads of the open epoch still running (tests: closing stops them). */
    List<Thread> epochThreads() {
        synchronized (lock) {
            return current == null ? List.of() : current.threads();
        }
    }

    private LoaderState normalized(long epoch, long nextBatch) {
        return nextBatch >= batchesPerEpoch() ? state(epoch + 1, 0) : state(epoch, nextBatch);
    }

    private LoaderState state(long epoch, long nextBatch) {
        return new LoaderState(
                epoch,
                nextBatch,
                dataset.size(),
                batchSize,
                dropLast,
                sampler.shuffle(),
                sampler.partitioning(),
                sampler.rank(),
                sampler.worldSize(),
                sampler.ranksPerNode(),
                sampler.canonicalPartitions());
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("loader over " + dataset + " is closed (expected: an open loader)");
        }
    }

    @Override
    public String toString() {
        return "DataLoader[" + dataset + ", batch " + batchSize + ", " + sampler.shuffle() + ", rank " + sampler.rank()
                + "/" + sampler.worldSize() + " " + sampler.partitioning() + "]";
    }

    /**
     * Configures a {@link DataLoader}. Every setter validates its argument at once. Not thread-safe.
     *
     * @param <T> the decoded type
     */
    public static final class Builder<T> {

        private final Dataset dataset;
        private final Decoder<T> decoder;
        private int batchSize = 32;
        private Shuffle shuffle = Shuffle.none();
        private int rank;
        private int worldSize = 1;
        private Partitioning partitioning = Partitioning.PER_EPOCH;
        private int ranksPerNode = 1;
        private int canonicalPartitions = Sampler.DEFAULT_CANONICAL_PARTITIONS;
        private int workers = Math.max(1, Runtime.getRuntime().availableProcessors());
        private int prefetch = 4;
        private int readAhead;
        /** 0 until set: then {@link #DEFAULT_MAX_BYTES_IN_FLIGHT}, and the stream budget from the cache's size. */
        private long maxBytesInFlight;

        private boolean dropLast;
        private boolean skipFailed;
        private boolean drive = true;
        private Collator<T> collator;
        private long stagingBytes;
        private boolean pinnedStaging;
        private boolean streamShards = true;
        private int partSize = ShardParts.DEFAULT_PART_SIZE;
        private double starvationThreshold = 0.2;
        private Duration starvationWindow = Duration.ofSeconds(30);
        private Consumer<Starvation> starvationListener;

        private Builder(Dataset dataset, Decoder<T> decoder) {
            this.dataset = dataset;
            this.decoder = decoder;
        }

        /**
         * Sets the number of samples per batch. Default 32.
         *
         * @param size {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if less than 1
         */
        public Builder<T> batchSize(int size) {
            if (size < 1) {
                throw new IllegalArgumentException("batch size: " + size + " (expected: >= 1)");
            }
            this.batchSize = size;
            return this;
        }

        /**
         * Shuffles every epoch with the global per-sample shuffle: {@code shuffle(Shuffle.samples(seed))}. Default: no
         * shuffle.
         *
         * @param seed any value
         * @return this builder
         */
        public Builder<T> shuffle(long seed) {
            return shuffle(Shuffle.samples(seed));
        }

        /**
         * Sets how every epoch is ordered: {@link Shuffle#samples(long)}, {@link Shuffle#shardBlocks(long, int)} (a
         * {@link WebDataset} only; checked by {@link #build()}) or {@link Shuffle#none()}. Default: none.
         *
         * @param shuffle the order
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder<T> shuffle(Shuffle shuffle) {
            if (shuffle == null) {
                throw new IllegalArgumentException("shuffle: null (expected: Shuffle.none(), Shuffle.samples(seed)"
                        + " or Shuffle.shardBlocks(seed, k))");
            }
            this.shuffle = shuffle;
            return this;
        }

        /**
         * Makes this loader rank {@code rank} of {@code worldSize}, the epochs split afresh every epoch:
         * {@code shard(rank, worldSize, Partitioning.PER_EPOCH)}. Default: rank 0 of 1.
         *
         * @param rank      {@code 0 <= rank < worldSize}
         * @param worldSize {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder<T> shard(int rank, int worldSize) {
            return shard(rank, worldSize, Partitioning.PER_EPOCH);
        }

        /**
         * Makes this loader rank {@code rank} of {@code worldSize}: it yields its part of every epoch, split as
         * {@code partitioning} says (see the {@link DataLoader} class comment, "Ranks, nodes and partitions", and
         * {@link Sampler} for the exact rule and the padding). Default: rank 0 of 1, {@link Partitioning#PER_EPOCH}.
         *
         * @param rank         {@code 0 <= rank < worldSize}
         * @param worldSize    {@code >= 1}
         * @param partitioning {@link Partitioning#PER_EPOCH} or {@link Partitioning#STABLE}
         * @return this builder
         * @throws IllegalArgumentException if out of range or null
         */
        public Builder<T> shard(int rank, int worldSize, Partitioning partitioning) {
            EpochOrder.checkShard(rank, worldSize, partitioning, 1, canonicalPartitions);
            this.rank = rank;
            this.worldSize = worldSize;
            this.partitioning = partitioning;
            return this;
        }

        /**
         * Sets how many consecutive ranks share one node (ranks {@code n g … n g + g − 1} are node {@code n}): under
         * {@link Partitioning#STABLE} they share the node's part, which they split afresh every epoch, so that a cache
         * of the node's (one {@code TieredCache} per machine, or a shared disk tier) holds one part, not {@code g}.
         * Under PER_EPOCH it matters only for shard blocks (a node's ranks read the same blocks). Must divide the world
         * size (checked by {@link #build()}). Default 1.
         *
         * @param ranks {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if less than 1
         */
        public Builder<T> ranksPerNode(int ranks) {
            if (ranks < 1) {
                throw new IllegalArgumentException("ranks per node: " + ranks + " (expected: >= 1)");
            }
            this.ranksPerNode = ranks;
            return this;
        }

        /**
         * Sets the number {@code P} of canonical partitions {@link Partitioning#STABLE} cuts the dataset into; a node
         * owns {@code P / nodes} of them. Keep it fixed for the life of a job: a restart on another number of nodes
         * then moves whole partitions. Default {@value Sampler#DEFAULT_CANONICAL_PARTITIONS} (exactly equal parts for
         * 1–6,
         * 8, 10, 12, 16, 20, 24, 32, 48, 64, … nodes; other counts get parts differing by up to {@code N / P} samples,
         * the shorter ones padded).
         *
         * @param partitions in {@code [1, 2^24]}, at least the number of nodes
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder<T> canonicalPartitions(int partitions) {
            if (partitions < 1 || partitions > EpochOrder.MAX_CANONICAL_PARTITIONS) {
                throw new IllegalArgumentException("canonical partitions: " + partitions + " (expected: 1.."
                        + EpochOrder.MAX_CANONICAL_PARTITIONS + ")");
            }
            this.canonicalPartitions = partitions;
            return this;
        }

        /** The sampler of the loader being built; validates the order's settings against the dataset. */
        private Sampler sampler() {
            Sampler s = Sampler.of(dataset, shuffle);
            if (worldSize == 1 && partitioning == Partitioning.PER_EPOCH && ranksPerNode == 1) {
                return s;
            }
            return s.shard(rank, worldSize, partitioning, ranksPerNode, canonicalPartitions);
        }

        /**
         * Sets the number of decode threads. Default: the available processors.
         *
         * @param threads in {@code [1, 1024]}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder<T> workers(int threads) {
            if (threads < 1 || threads > 1024) {
                throw new IllegalArgumentException("workers: " + threads + " (expected: 1..1024 threads)");
            }
            this.workers = threads;
            return this;
        }

        /**
         * Sets how many batches may be started ahead of the trainer (read, decoded, or waiting to be taken). Default
         * 4.
         *
         * @param batches in {@code [1, 1024]}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder<T> prefetch(int batches) {
            if (batches < 1 || batches > 1024) {
                throw new IllegalArgumentException("prefetch: " + batches + " (expected: 1..1024 batches)");
            }
            this.prefetch = batches;
            return this;
        }

        /**
         * Sets how many sample reads may run at once. Default: {@code batchSize × prefetch}, at most 1024. The origin's
         * own concurrency limit (e.g. {@code S3Origin.builder().maxConcurrency}) still bounds origin requests.
         *
         * @param samples in {@code [1, 65536]}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder<T> readAhead(int samples) {
            if (samples < 1 || samples > 65536) {
                throw new IllegalArgumentException("read-ahead: " + samples + " (expected: 1..65536 samples)");
            }
            this.readAhead = samples;
            return this;
        }

        /**
         * Bounds the bytes of samples read and not yet decoded. Default 256 MiB. A single sample larger than the bound
         * is still read, alone. When an epoch reads its shards in parts, the bound covers the parts held — read ahead,
         * or holding samples not yet decoded — so it also decides which orders can stream: the parts an order needs
         * at once must fit (see the class comment). Unset, the parts held may reach the larger of 256 MiB and a
         * quarter of the cache's capacity (the sum of its tiers'), because held parts are cached pages: a loader
         * over a cache of 4 GiB streams shard blocks of up to 1 GiB without configuration.
         *
         * @param bytes {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if less than 1
         */
        public Builder<T> maxBytesInFlight(long bytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException("max bytes in flight: " + bytes + " (expected: >= 1)");
            }
            this.maxBytesInFlight = bytes;
            return this;
        }

        /**
         * Sets whether an epoch over a {@link WebDataset} reads its shards in large parts when its order allows (see
         * the class comment). Default {@code true}; {@code false} reads every sample as its own extent, one origin
         * request per sample not cached. Over other datasets it changes nothing.
         *
         * @param stream whether to stream shards in parts
         * @return this builder
         */
        public Builder<T> streamShards(boolean stream) {
            this.streamShards = stream;
            return this;
        }

        /**
         * Sets the size of the parts shards are read in when an epoch streams them: part {@code i} of a shard is its
         * bytes {@code [i × size, (i + 1) × size)}. Default 8 MiB — the size {@code WebDataset.of} reads shards
         * without an index in, so that indexing leaves the first epoch's parts in the cache; with another size the
         * first epoch reads them again. Larger parts mean fewer requests and more memory held per open shard.
         *
         * @param bytes in {@code [1 MiB, 1 GiB]}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder<T> shardPartSize(int bytes) {
            if (bytes < ShardParts.MIN_PART_SIZE || bytes > (1 << 30)) {
                throw new IllegalArgumentException("shard part size: " + bytes + " bytes (expected: "
                        + ShardParts.MIN_PART_SIZE + ".." + (1 << 30) + ")");
            }
            this.partSize = bytes;
            return this;
        }

        /**
         * Drops the last batch of an epoch if it is smaller than the batch size. Default {@code false}.
         *
         * @param drop whether to drop it
         * @return this builder
         */
        public Builder<T> dropLast(boolean drop) {
            this.dropLast = drop;
            return this;
        }

        /**
         * Skips samples that fail to read or decode, counting them in {@link LoaderStats#skipped()}, instead of
         * failing their batch with a {@link SampleException}. Default {@code false}: a failure is an error.
         *
         * @param skip whether to skip and count
         * @return this builder
         */
        public Builder<T> skipFailedSamples(boolean skip) {
            this.skipFailed = skip;
            return this;
        }

        /**
         * Collates every batch into a reusable off-heap staging buffer of {@code bytesPerBatch} bytes (see
         * {@link Batch#staging()}), so the trainer copies a batch to its device in one transfer. The loader keeps
         * {@code prefetch + 2} such buffers and reuses a batch's buffer once the trainer asks for the next batch.
         * Default: no staging.
         *
         * @param bytesPerBatch the size of one buffer, in {@code [1, 2^40]}
         * @param collator      packs a batch's items into a buffer; runs on worker threads
         * @return this builder
         * @throws IllegalArgumentException if the size is out of range or the collator null
         */
        public Builder<T> staging(long bytesPerBatch, Collator<T> collator) {
            if (bytesPerBatch < 1 || bytesPerBatch > (1L << 40)) {
                throw new IllegalArgumentException("staging buffer size: " + bytesPerBatch + " bytes (expected: "
                        + ByteSizes.range(1, 1L << 40) + ")");
            }
            if (collator == null) {
                throw new IllegalArgumentException(
                        "collator: null (expected: a Collator that packs a batch into" + " the staging buffer)");
            }
            this.stagingBytes = bytesPerBatch;
            this.collator = collator;
            return this;
        }

        /**
         * Page-locks the staging buffers ({@code mlock}), as a device's DMA wants. A refusal by the OS is logged once
         * and reported by {@link DataLoader#stagingPinning()}; the buffers work unlocked. Default {@code false}.
         *
         * @param pinned whether to lock them
         * @return this builder
         */
        public Builder<T> pinnedStaging(boolean pinned) {
            this.pinnedStaging = pinned;
            return this;
        }

        /**
         * Sets whether the loader drives the cache through an {@link EpochDriver} (stable resident set, exclusive
         * tiers, while an epoch runs). Default {@code true}; {@code false} leaves the tiers' own policies in charge.
         *
         * @param drive whether to drive
         * @return this builder
         */
        public Builder<T> driveCache(boolean drive) {
            this.drive = drive;
            return this;
        }

        /**
         * Sets the data-wait share that raises the starvation alarm: when the trainer spends at least this share of
         * the alarm's window waiting for batches, the loader logs one warning naming where the time goes (see
         * {@link Starvation}) and calls the listener; it logs again only when the share falls back under it.
         * Default 0.2 (20 %, the usual warning line for I/O wait; 0.5 is the usual paging line).
         *
         * @param ratio in (0, 1]
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder<T> starvationThreshold(double ratio) {
            if (!(ratio > 0 && ratio <= 1)) {
                throw new IllegalArgumentException("starvation threshold: " + ratio + " (expected: a share in (0,"
                        + " 1], such as 0.2 for 20 % data-wait)");
            }
            this.starvationThreshold = ratio;
            return this;
        }

        /**
         * Sets the sliding window over which the data-wait share is measured, for the starvation alarm and
         * {@link DataLoader#dataWaitRatio()}. The alarm is armed once the loader has run for one window. Default
         * 30 s.
         *
         * @param window from 1 ms to 1 day
         * @return this builder
         * @throws IllegalArgumentException if null or out of range
         */
        public Builder<T> starvationWindow(Duration window) {
            if (window == null
                    || window.compareTo(Duration.ofMillis(1)) < 0
                    || window.compareTo(Duration.ofDays(1)) > 0) {
                throw new IllegalArgumentException("starvation window: " + window + " (expected: 1 ms to 1 day)");
            }
            this.starvationWindow = window;
            return this;
        }

        /**
         * Sets a listener called on each change of the starvation state (raised, cleared), on the trainer's thread
         * as it takes a batch; it should return quickly. An exception it throws is logged, not propagated. Default
         * none: the alarm only logs.
         *
         * @param listener the listener, or null for none
         * @return this builder
         */
        public Builder<T> starvationListener(Consumer<Starvation> listener) {
            this.starvationListener = listener;
            return this;
        }

        /**
         * {@return the options set so far}: one component per setter of this builder, a snapshot that later calls do
         * not change (see {@link LoaderOptions} for the defaults)
         */
        public LoaderOptions options() {
            return new LoaderOptions(
                    batchSize,
                    shuffle,
                    rank,
                    worldSize,
                    partitioning,
                    ranksPerNode,
                    canonicalPartitions,
                    workers,
                    prefetch,
                    readAhead,
                    maxBytesInFlight,
                    streamShards,
                    partSize,
                    dropLast,
                    skipFailed,
                    stagingBytes,
                    pinnedStaging,
                    drive,
                    starvationThreshold,
                    starvationWindow,
                    starvationListener);
        }

        /**
         * Builds the loader.
         *
         * @return a new loader
         * @throws IllegalArgumentException if the dataset has fewer samples than the world size has ranks, the shuffle
         *                                  needs shards the dataset has not, the ranks per node do not divide the world
         *                                  size, or STABLE has more nodes than canonical partitions or a node without
         *                                  samples
         */
        public DataLoader<T> build() {
            if (pinnedStaging && collator == null) {
                throw new IllegalArgumentException("pinned staging without staging buffers (expected:"
                        + " staging(bytes, collator) as well as pinnedStaging(true))");
            }
            if (worldSize > 1 && dataset.size() < worldSize) {
                throw new IllegalArgumentException("world size: " + worldSize + " for a dataset of " + dataset.size()
                        + " samples (expected: at most one rank per sample)");
            }
            sampler(); // refuses a bad combination here, before the loader starts threads
            return new DataLoader<>(this);
        }
    }
}
