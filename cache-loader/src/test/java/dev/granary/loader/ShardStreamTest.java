// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.TieredCache;
import dev.granary.internal.ReadAccount;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.spi.Origin;
import dev.granary.testkit.Await;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.Gate;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Epochs that read WebDataset shards in parts ({@link StreamPlan}, {@link ShardStream}) over real tar files written by
 * {@link ShardWriter}, a real POSIX origin (and S3Proxy) wrapped to count and fail reads, and a real memory tier:
 * every sample exactly once with its bytes, samples crossing part boundaries, one origin read per part on a cold
 * epoch and none on a warm one, the memory bound, closing early without a lease left open, a failed part failing
 * exactly its samples' batches, resumption reading only the parts still needed, and the orders that fall back to
 * per-sample reads. Parts are 1 MiB (the smallest allowed) so that 6 shards of ~3.5 MB have many of them.
 */
@Timeout(120)
class ShardStreamTest {

    private static final int PART = ShardParts.MIN_PART_SIZE;
    private static final int SHARDS = 6;
    private static final int PER_SHARD = 50;
    private static final int BATCH = 8;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    /** Every sample as written: key → fields. */
    private final Map<String, Map<String, byte[]>> truth = new LinkedHashMap<>();

    private List<String> shardKeys;

    @BeforeEach
    void writeShards() {
        SplittableRandom random = new SplittableRandom(5);
        try (ShardWriter writer = ShardWriter.builder(root)
                .pattern("shard-%06d.tar")
                .maxCount(PER_SHARD)
                .build()) {
            for (int i = 0; i < SHARDS * PER_SHARD; i++) {
                byte[] jpg = new byte[20_000 + random.nextInt(100_000)];
                random.nextBytes(jpg);
                Map<String, byte[]> fields = new LinkedHashMap<>();
                fields.put("jpg", jpg);
                fields.put("cls", Integer.toString(i).getBytes(US_ASCII));
                String key = String.format("train/%06d", i);
                writer.write(key, fields);
                truth.put(key, fields);
            }
            writer.close();
            shardKeys = writer.shards();
        }
        assertEquals(SHARDS, shardKeys.size());
    }

    // ------------------------------------------------------------------------------------------------ fixtures

    private TieredCache cache(Origin origin, long memory) {
        // Slabs of 4 MiB: a 1 MiB part fits one, so parts are cached as the units they are.
        MemoryTier tier =
                MemoryTier.builder().capacity(memory).slabSize(4 << 20).build();
        leaks.released("memory tier", () -> tier.stats().usedBytes() == 0);
        return leaks.watch(TieredCache.builder(origin)
                .tier(tier)
                .pageSize(64 << 10)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }

    /** A decoder's copy of a sample. */
    record Item(String key, int index, byte[] jpg, byte[] cls) {}

    private static Item copy(Sample sample) {
        return new Item(
                sample.key(),
                sample.index(),
                bytes(sample.fields().get("jpg")),
                bytes(sample.fields().get("cls")));
    }

    private static byte[] bytes(ByteBuffer buffer) {
        byte[] b = new byte[buffer.remaining()];
        buffer.duplicate().get(b);
        return b;
    }

    private DataLoader.Builder<Item> builder(WebDataset dataset) {
        return DataLoader.builder(dataset, ShardStreamTest::copy)
                .batchSize(BATCH)
                .workers(2)
                .prefetch(3)
                .shardPartSize(PART);
    }

    private void check(Item item) {
        Map<String, byte[]> fields = truth.get(item.key());
        assertNotNull(fields, item.key());
        assertArrayEquals(fields.get("jpg"), item.jpg(), item.key());
        assertArrayEquals(fields.get("cls"), item.cls(), item.key());
    }

    /** Every item of an epoch, checked against what was written. */
    private List<Item> drain(Epoch<Item> epoch) {
        List<Item> items = new ArrayList<>();
        for (Batch<Item> batch : epoch) {
            for (Item item : batch.items()) {
                check(item);
                items.add(item);
            }
        }
        return items;
    }

    private static void assertEachOnce(List<Item> items, int from, int to) {
        Set<Integer> seen = new TreeSet<>();
        for (Item item : items) {
            assertTrue(seen.add(item.index()), "sample " + item.index() + " delivered twice");
        }
        Set<Integer> expected = new TreeSet<>();
        for (int i = from; i < to; i++) {
            expected.add(i);
        }
        assertEquals(expected, seen);
    }

    private static int[] identity(int n) {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        return order;
    }

    /** The parts positions {@code [from, to)} overlap, as (shard, part) pairs: computed apart from StreamPlan. */
    private static Set<Long> partsUsed(WebDataset dataset, int[] order, int from, int to) {
        Set<Long> parts = new HashSet<>();
        for (int p = from; p < to; p++) {
            int sample = order[p];
            long start = dataset.sampleStart(sample);
            long end = start + dataset.sampleLength(sample);
            for (long q = start / PART; q <= (end - 1) / PART; q++) {
                parts.add((long) dataset.shardOf(sample) << 32 | q);
            }
        }
        return parts;
    }

    private static List<Integer> crossing(WebDataset dataset) {
        List<Integer> samples = new ArrayList<>();
        for (int i = 0; i < dataset.size(); i++) {
            long start = dataset.sampleStart(i);
            if (start / PART != (start + dataset.sampleLength(i) - 1) / PART) {
                samples.add(i);
            }
        }
        return samples;
    }

    /** An order over shard blocks: shards permuted, cut into blocks of {@code k}, samples shuffled in a block. */
    private static int[] blockOrder(WebDataset dataset, int k, long seed) {
        Random random = new Random(seed);
        List<Integer> shards = new ArrayList<>();
        for (int s = 0; s < dataset.shardCount(); s++) {
            shards.add(s);
        }
        Collections.shuffle(shards, random);
        int[] order = new int[dataset.size()];
        int n = 0;
        for (int b = 0; b < shards.size(); b += k) {
            List<Integer> block = new ArrayList<>();
            for (int s : shards.subList(b, Math.min(shards.size(), b + k))) {
                for (int i = dataset.firstSample(s); i < dataset.firstSample(s + 1); i++) {
                    block.add(i);
                }
            }
            Collections.shuffle(block, random);
            for (int i : block) {
                order[n++] = i;
            }
        }
        return order;
    }

    private static long blockBytes(WebDataset dataset, int[] order, int k) {
        long max = 0;
        long sum = 0;
        Set<Integer> seen = new HashSet<>();
        for (int sample : order) {
            int s = dataset.shardOf(sample);
            if (seen.add(s)) {
                if ((seen.size() - 1) % k == 0) {
                    sum = 0;
                }
                sum += dataset.shardInfo(s).size();
                max = Math.max(max, sum);
            }
        }
        return max;
    }

    private static final EpochRun.Owner<Item> NOBODY = new EpochRun.Owner<>() {
        @Override
        public void advanced(EpochRun<Item> run, long nextBatch) {}

        @Override
        public void finished(EpochRun<Item> run) {}

        @Override
        public void closed(EpochRun<Item> run) {}
    };

    private static LoaderSettings<Item> settings(WebDataset dataset, long budget) {
        return new LoaderSettings<>(
                dataset, ShardStreamTest::copy, BATCH, 3, 32, budget, budget, false, null, true, PART);
    }

    // ------------------------------------------------------------------------------------------------ reading

    @Test
    void aSequentialEpochReadsEachPartOnceAndServesEverySampleOnceWithItsBytes() throws IOException {
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root));
        TieredCache cache = cache(origin, 64L << 20);
        WebDataset dataset = WebDataset.of(cache, shardKeys);
        assertTrue(
                crossing(dataset).size() >= 10,
                "the shards must have samples crossing part boundaries: "
                        + crossing(dataset).size());
        int parts =
                partsUsed(dataset, identity(dataset.size()), 0, dataset.size()).size();
        long bound = 0;
        for (int s = 0; s < dataset.shardCount(); s++) {
            bound += (dataset.shardInfo(s).size() + PART - 1) / PART;
        }
        assertTrue(parts <= bound && parts * 10 < dataset.size(), parts + " parts, bound " + bound);
        List<Item> streamed;
        try (DataLoader<Item> loader = builder(dataset).build()) {
            int before = origin.reads();
            try (Epoch<Item> epoch = loader.epoch(0)) {
                streamed = drain(epoch);
            }
            assertEquals(parts, origin.reads() - before, "one origin read per part, each once");
            assertEachOnce(streamed, 0, dataset.size());
            assertEquals(0, cache.stats().openLeases(), "every part released by the last of its samples");

            int warm = origin.reads();
            try (Epoch<Item> epoch = loader.epoch(1)) {
                assertEachOnce(drain(epoch), 0, dataset.size());
            }
            assertEquals(warm, origin.reads(), "a warm epoch finds every part in the cache");
        }
        // The same samples read one by one, each as its own extent, are the same bytes.
        for (Item item : streamed) {
            Sample sample = dataset.read(item.index());
            try {
                Item single = copy(sample);
                assertEquals(item.key(), single.key());
                assertArrayEquals(single.jpg(), item.jpg(), item.key());
                assertArrayEquals(single.cls(), item.cls(), item.key());
            } finally {
                sample.release();
            }
        }
    }

    @Test
    void aBlockOrderReadsEachPartOnceAndHoldsNoMoreThanTheBudget() throws Exception {
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root));
        TieredCache cache = cache(origin, 64L << 20);
        WebDataset dataset = WebDataset.of(cache, shardKeys);
        int[] order = blockOrder(dataset, 2, 9);
        long block = blockBytes(dataset, order, 2);
        long budget = 12L << 20;
        StreamPlan plan = StreamPlan.decide(dataset, order, 0, order.length, PART, budget);
        assertTrue(plan.streams(), plan.reason());
        assertTrue(
                plan.workingSet() <= block && plan.workingSet() > block / 2,
                "working set " + plan.workingSet() + " for blocks of up to " + block + " bytes");
        Set<Long> expected = partsUsed(dataset, order, 0, order.length);
        assertEquals(expected.size(), plan.partCount());

        ExecutorService workers = Executors.newFixedThreadPool(2);
        EpochRun<Item> run = new EpochRun<>(
                settings(dataset, budget),
                new LoaderCounters(
                        3, new ReadAccount(1), new StarvationAlarm(0.2, Duration.ofSeconds(30), 2, "test", null)),
                workers,
                null,
                NOBODY,
                0,
                order,
                0,
                (order.length + BATCH - 1) / BATCH);
        List<Item> items = new ArrayList<>();
        int before = origin.reads();
        try {
            run.start();
            assertTrue(run.streams());
            int position = 0;
            while (run.hasNext()) {
                for (Item item : run.next().items()) {
                    assertEquals(order[position++], item.index(), "served in the epoch's order");
                    check(item);
                    items.add(item);
                }
            }
            assertEquals(expected.size(), origin.reads() - before, "one origin read per part");
            assertEachOnce(items, 0, dataset.size());
            ShardStream stream = run.shardStream();
            assertTrue(
                    stream.peakHeld() <= budget + 2L * PART,
                    "held " + stream.peakHeld() + " bytes at most," + " budget " + budget + " plus one sample's parts");
            // A worker releases its sample just after it completes the sample's slot, so the last batch can reach
            // the trainer a moment before its samples are released: wait for the workers to finish, then count.
            workers.shutdown();
            assertTrue(workers.awaitTermination(30, TimeUnit.SECONDS), "workers finished");
            assertEquals(0, stream.held(), "everything released once every sample was");
        } finally {
            run.abandon();
            workers.shutdown();
        }
        assertEquals(0, cache.stats().openLeases());
    }

    // ------------------------------------------------------------------------------------------------ deciding

    @Test
    void theDecisionFollowsTheOrdersWorkingSet() throws IOException {
        TieredCache cache = cache(PosixOrigin.of(root), 16L << 20);
        WebDataset dataset = WebDataset.of(cache, shardKeys);
        int n = dataset.size();
        long total = 0;
        for (int s = 0; s < dataset.shardCount(); s++) {
            total += dataset.shardInfo(s).size();
        }
        StreamPlan sequential = StreamPlan.decide(dataset, identity(n), 0, n, PART, 4L << 20);
        assertTrue(sequential.streams(), sequential.reason());
        assertTrue(sequential.workingSet() <= 2L * PART, "sequential: " + sequential.workingSet());
        assertEquals(partsUsed(dataset, identity(n), 0, n).size(), sequential.partCount());
        for (int i = 1; i < sequential.partCount(); i++) {
            assertTrue(sequential.firstUse(i - 1) <= sequential.firstUse(i), "parts in order of first use");
            assertTrue(sequential.firstUse(i) <= sequential.lastUse(i));
        }

        int[] shuffled = Sampler.shuffled(n, 3).epoch(0);
        StreamPlan global = StreamPlan.decide(dataset, shuffled, 0, n, PART, 4L << 20);
        assertFalse(global.streams());
        assertTrue(global.reason().contains("held at once"), global.reason());
        assertTrue(global.workingSet() > total * 9 / 10, global.workingSet() + " of " + total);
        // The same shuffle over a dataset that fits the budget whole: read whole, once.
        assertTrue(StreamPlan.decide(dataset, shuffled, 0, n, PART, 2 * total).streams());

        // A rank taking every 4th sample would read 4 times the bytes it uses.
        int[] strided =
                IntStream.range(0, (n + 3) / 4).map(k -> (1 + 4 * k) % n).toArray();
        StreamPlan rank = StreamPlan.decide(dataset, strided, 0, strided.length, PART, 256L << 20);
        assertFalse(rank.streams());
        assertTrue(rank.reason().contains("per-sample reads move fewer bytes"), rank.reason());

        // Objects are read whole: nothing to stream.
        Files.writeString(root.resolve("obj.bin"), "x");
        Dataset objects = Dataset.ofKeys(cache, List.of("obj.bin"));
        assertFalse(
                StreamPlan.decide(objects, new int[] {0}, 0, 1, PART, 1L << 30).streams());

        // A resumed epoch plans only the positions left.
        StreamPlan tail = StreamPlan.decide(dataset, identity(n), n / 2, n, PART, 4L << 20);
        assertEquals(partsUsed(dataset, identity(n), n / 2, n).size(), tail.partCount());
        assertTrue(tail.partCount() < sequential.partCount());

        assertThrows(IllegalArgumentException.class, () -> StreamPlan.decide(dataset, identity(n), 0, n + 1, PART, 1));
        assertThrows(
                IllegalArgumentException.class,
                () -> StreamPlan.decide(dataset, identity(n), 0, n, PART - 1, 1L << 30));
        assertThrows(
                IllegalArgumentException.class, () -> StreamPlan.decide(dataset, new int[] {n}, 0, 1, PART, 1L << 30));
    }

    @Test
    void anUnsetBoundLetsStreamsHoldAQuarterOfTheCache() throws IOException {
        WebDataset small = WebDataset.of(cache(PosixOrigin.of(root), 64L << 20), shardKeys);
        try (DataLoader<Item> loader = builder(small).build()) {
            assertEquals(256L << 20, loader.settings().maxBytesInFlight());
            assertEquals(256L << 20, loader.settings().streamBudget(), "a small cache: the 256 MiB floor");
        }
        Path disk = Files.createDirectories(root.resolve("disk"));
        DiskTier big = DiskTier.builder().directory(disk).capacity(8L << 30).build(); // files grow as pages come
        try (TieredCache cache =
                TieredCache.builder(PosixOrigin.of(root)).tier(big).build()) {
            WebDataset shards = WebDataset.of(cache, shardKeys);
            try (DataLoader<Item> loader = builder(shards).build()) {
                assertEquals(256L << 20, loader.settings().maxBytesInFlight(), "per-sample reads keep 256 MiB");
                assertEquals(2L << 30, loader.settings().streamBudget(), "a quarter of the 8 GiB cache");
                // An order of blocks of 8 shards of 200 MiB (1.6 GiB) streams here without configuration.
                assertTrue(8 * (200L << 20) <= loader.settings().streamBudget());
            }
            try (DataLoader<Item> loader =
                    builder(shards).maxBytesInFlight(4L << 20).build()) {
                assertEquals(4L << 20, loader.settings().maxBytesInFlight());
                assertEquals(4L << 20, loader.settings().streamBudget(), "a bound the user set covers both");
            }
        }
    }

    @Test
    void aGlobalShuffleThatDoesNotFitFallsBackToOneReadPerSample() throws IOException {
        // Each loader on a cache of its own, so that none finds what another read.
        FaultyOrigin shuffledOrigin = new FaultyOrigin(PosixOrigin.of(root));
        WebDataset shuffled = WebDataset.of(cache(shuffledOrigin, 64L << 20), shardKeys);
        try (DataLoader<Item> loader =
                builder(shuffled).shuffle(3).maxBytesInFlight(4L << 20).build()) {
            int before = shuffledOrigin.reads();
            try (Epoch<Item> epoch = loader.epoch(0)) {
                assertEachOnce(drain(epoch), 0, shuffled.size());
            }
            assertEquals(shuffled.size(), shuffledOrigin.reads() - before, "one origin read per sample");
        }
        FaultyOrigin offOrigin = new FaultyOrigin(PosixOrigin.of(root));
        WebDataset off = WebDataset.of(cache(offOrigin, 64L << 20), shardKeys);
        try (DataLoader<Item> loader =
                builder(off).maxBytesInFlight(4L << 20).streamShards(false).build()) {
            int before = offOrigin.reads();
            try (Epoch<Item> epoch = loader.epoch(0)) {
                assertEachOnce(drain(epoch), 0, off.size());
            }
            assertEquals(off.size(), offOrigin.reads() - before, "streamShards(false): one origin read per sample");
        }
        FaultyOrigin sequentialOrigin = new FaultyOrigin(PosixOrigin.of(root));
        WebDataset sequential = WebDataset.of(cache(sequentialOrigin, 64L << 20), shardKeys);
        try (DataLoader<Item> loader =
                builder(sequential).maxBytesInFlight(4L << 20).build()) {
            int before = sequentialOrigin.reads();
            try (Epoch<Item> epoch = loader.epoch(0)) {
                assertEachOnce(drain(epoch), 0, sequential.size());
            }
            assertEquals(
                    partsUsed(sequential, identity(sequential.size()), 0, sequential.size())
                            .size(),
                    sequentialOrigin.reads() - before,
                    "the same budget streams a sequential order");
        }
        assertThrows(IllegalArgumentException.class, () -> builder(sequential).shardPartSize(PART - 1));
        assertThrows(IllegalArgumentException.class, () -> builder(sequential).shardPartSize((1 << 30) + 1));
    }

    // ------------------------------------------------------------------------------------------------ closing

    @Test
    void leavingAnEpochEarlyReleasesEveryPart() throws IOException {
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root));
        TieredCache cache = cache(origin, 64L << 20);
        WebDataset dataset = WebDataset.of(cache, shardKeys);
        DataLoader<Item> loader = builder(dataset).build();
        try {
            // The trainer stops after three batches and closes the epoch.
            try (Epoch<Item> epoch = loader.epoch(0)) {
                Iterator<Batch<Item>> batches = epoch.iterator();
                for (int b = 0; b < 3; b++) {
                    batches.next().items().forEach(this::check);
                }
                Await.until(() -> cache.stats().openLeases() > 0, () -> "no part held mid-epoch");
            }
            assertEquals(0, cache.stats().openLeases(), "closing the epoch closes every part lease");
            assertTrue(loader.epochThreads().isEmpty(), "threads left: " + loader.epochThreads());

            // A new epoch while one is open closes it; the new one is whole.
            Epoch<Item> open = loader.epoch(1);
            open.iterator().next();
            try (Epoch<Item> next = loader.epoch(2)) {
                assertEachOnce(drain(next), 0, dataset.size());
            }
            assertThrows(IllegalStateException.class, () -> open.iterator().next());
            assertEquals(0, cache.stats().openLeases());

            // The loader closes mid-epoch.
            Epoch<Item> last = loader.epoch(3);
            last.iterator().next();
            loader.close();
            assertEquals(0, cache.stats().openLeases(), "closing the loader closes every part lease");
            assertTrue(loader.epochThreads().isEmpty());
        } finally {
            loader.close();
        }
    }

    @Test
    void closingWhilePartReadsWaitAtTheOriginLeavesNoLease() throws IOException {
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root));
        TieredCache cache = cache(origin, 64L << 20);
        WebDataset dataset = WebDataset.of(cache, shardKeys);
        Gate gate = new Gate();
        try (DataLoader<Item> loader = builder(dataset).build()) {
            origin.holdReads(gate);
            Epoch<Item> epoch = loader.epoch(0);
            Await.until(() -> gate.waiting() > 0, () -> "no part read reached the origin");
            epoch.close();
            assertEquals(0, cache.stats().openLeases());
            assertTrue(loader.epochThreads().isEmpty(), "threads left: " + loader.epochThreads());
        } finally {
            gate.open();
        }
    }

    // ------------------------------------------------------------------------------------------------ failures

    @Test
    void aFailedPartFailsExactlyTheBatchesOfItsSamples() throws IOException {
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root));
        TieredCache cache = cache(origin, 64L << 20);
        WebDataset dataset = WebDataset.of(cache, shardKeys);
        int shard = 2;
        String shardKey = shardKeys.get(shard);
        origin.onRead((object, position, length) -> {
            if (object.key().equals(shardKey) && position == PART) {
                throw new IOException("injected failure of part 1");
            }
        });
        Set<Integer> affected = new TreeSet<>();
        for (int i = dataset.firstSample(shard); i < dataset.firstSample(shard + 1); i++) {
            long start = dataset.sampleStart(i);
            if (start / PART <= 1 && (start + dataset.sampleLength(i) - 1) / PART >= 1) {
                affected.add(i);
            }
        }
        assertTrue(affected.size() >= 5, "samples in part 1: " + affected);
        Set<Long> expectedFailed = new TreeSet<>();
        for (int i : affected) {
            expectedFailed.add((long) i / BATCH); // sequential order: sample i is at position i
        }
        try (DataLoader<Item> loader = builder(dataset).build()) {
            Set<Long> failed = new TreeSet<>();
            List<Item> items = new ArrayList<>();
            try (Epoch<Item> epoch = loader.epoch(0)) {
                Iterator<Batch<Item>> batches = epoch.iterator();
                while (batches.hasNext()) {
                    try {
                        for (Item item : batches.next().items()) {
                            check(item);
                            items.add(item);
                        }
                    } catch (SampleException e) {
                        failed.add(e.batch());
                        assertTrue(affected.contains(e.index()), e.getMessage());
                        assertTrue(
                                e.getMessage()
                                        .contains(
                                                "shard '" + shardKey + "' at offset " + dataset.sampleStart(e.index())),
                                e.getMessage());
                        assertEquals("injected failure of part 1", e.getCause().getMessage(), "the origin's failure");
                    }
                }
            }
            assertEquals(expectedFailed, failed, "exactly the batches holding a sample of the failed part");
            assertEquals(dataset.size() - expectedFailed.size() * BATCH, items.size());
            assertEquals(0, cache.stats().openLeases());
        }
        try (DataLoader<Item> loader = builder(dataset).skipFailedSamples(true).build()) {
            List<Item> items;
            try (Epoch<Item> epoch = loader.epoch(0)) {
                items = drain(epoch);
            }
            assertEquals(dataset.size() - affected.size(), items.size());
            for (Item item : items) {
                assertFalse(affected.contains(item.index()));
            }
            assertEquals(affected.size(), loader.stats().skipped());
        }
    }

    // ------------------------------------------------------------------------------------------------ resuming

    @Test
    void aResumedEpochReadsOnlyThePartsItStillNeeds() throws IOException {
        LoaderState state;
        List<Item> first = new ArrayList<>();
        TieredCache cacheA = cache(PosixOrigin.of(root), 64L << 20);
        WebDataset datasetA = WebDataset.of(cacheA, shardKeys);
        try (DataLoader<Item> loader = builder(datasetA).build()) {
            Epoch<Item> epoch = loader.epoch(0);
            Iterator<Batch<Item>> batches = epoch.iterator();
            for (int b = 0; b < 19; b++) {
                first.addAll(batches.next().items());
            }
            state = loader.state();
            epoch.close();
        }
        assertEquals(19, state.nextBatch());

        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root));
        TieredCache cacheB = cache(origin, 64L << 20);
        WebDataset dataset = WebDataset.of(cacheB, shardKeys);
        int from = 19 * BATCH;
        int needed = partsUsed(dataset, identity(dataset.size()), from, dataset.size())
                .size();
        assertTrue(needed
                < partsUsed(dataset, identity(dataset.size()), 0, dataset.size())
                        .size());
        try (DataLoader<Item> loader = builder(dataset).build()) {
            loader.resume(LoaderState.decode(state.encode()));
            int before = origin.reads();
            List<Item> rest;
            try (Epoch<Item> epoch = loader.epoch(0)) {
                rest = drain(epoch);
            }
            assertEquals(needed, origin.reads() - before, "only the parts of the positions left");
            assertEachOnce(rest, from, dataset.size());
            List<Item> all = new ArrayList<>(first);
            all.addAll(rest);
            assertEachOnce(all, 0, dataset.size());
        }
    }

    // ------------------------------------------------------------------------------------------------ over S3

    @Test
    void overS3AColdEpochIsOneGetPerPart() throws IOException {
        S3ProxyServer server = S3ProxyServer.shared();
        String bucket = "stream-" + Long.toHexString(System.nanoTime());
        try (S3Client client = server.client()) {
            client.createBucket(b -> b.bucket(bucket));
            for (String key : shardKeys) {
                client.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromFile(root.resolve(key)));
            }
        }
        S3Origin origin = S3Origin.builder()
                .bucket(bucket)
                .endpoint(server.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .retryBackoff(Duration.ofMillis(2))
                .build();
        TieredCache cache = cache(origin, 64L << 20);
        WebDataset dataset = WebDataset.of(cache, shardKeys);
        try (DataLoader<Item> loader = builder(dataset).build()) {
            long before = cache.stats().origin().reads();
            try (Epoch<Item> epoch = loader.epoch(0)) {
                assertEachOnce(drain(epoch), 0, dataset.size());
            }
            assertEquals(
                    partsUsed(dataset, identity(dataset.size()), 0, dataset.size())
                            .size(),
                    cache.stats().origin().reads() - before,
                    "one GET per part");
        }
    }
}
