// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.NoSuchObjectException;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Await;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.Gate;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** The DataLoader over real files: order, coverage, sharding, resumption, failures, closing and back-pressure. */
class DataLoaderTest {

    private static final int N = 103;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private dev.granary.testkit.Dataset files;

    @BeforeEach
    void setUp() {
        files = new dev.granary.testkit.Dataset(root, 11);
        for (int i = 0; i < N; i++) {
            files.put(String.format("train/%05d.bin", i), 1000 + (i * 37) % 3000);
        }
    }

    private DataLoader.Builder<LoaderFixture.Item> builder(TieredCache cache) throws IOException {
        return DataLoader.builder(Dataset.ofObjects(cache, "train/"), LoaderFixture::copy)
                .batchSize(8)
                .workers(3)
                .prefetch(3);
    }

    /** Every batch of an epoch, checked byte for byte against the files. */
    private List<Batch<LoaderFixture.Item>> drain(Epoch<LoaderFixture.Item> epoch) {
        List<Batch<LoaderFixture.Item>> batches = new ArrayList<>();
        for (Batch<LoaderFixture.Item> batch : epoch) {
            for (LoaderFixture.Item item : batch.items()) {
                assertArrayEquals(files.bytes(item.key()), item.bytes(), item.key());
            }
            batches.add(batch);
        }
        return batches;
    }

    private static List<Integer> indices(List<Batch<LoaderFixture.Item>> batches) {
        List<Integer> order = new ArrayList<>();
        for (Batch<LoaderFixture.Item> b : batches) {
            for (LoaderFixture.Item item : b.items()) {
                order.add(item.index());
            }
        }
        return order;
    }

    @Test
    void everySampleExactlyOncePerEpochInSamplerOrder() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<LoaderFixture.Item> loader =
                        builder(cache).shuffle(42).build()) {
            assertEquals(
                    List.of("train/00000.bin", "train/00001.bin"),
                    List.of(loader.dataset().key(0), loader.dataset().key(1)),
                    "keys sorted");
            for (int e = 0; e < 3; e++) {
                List<Batch<LoaderFixture.Item>> batches;
                try (Epoch<LoaderFixture.Item> epoch = loader.epoch(e)) {
                    batches = drain(epoch);
                }
                assertEquals(13, batches.size());
                for (int b = 0; b < batches.size(); b++) {
                    assertEquals(b, batches.get(b).index());
                    assertEquals(b < 12 ? 8 : 7, batches.get(b).size());
                }
                List<Integer> order = indices(batches);
                assertEquals(
                        Arrays.stream(Sampler.shuffled(N, 42).epoch(e)).boxed().toList(),
                        order,
                        "epoch " + e + " in sampler order");
                assertEquals(N, new HashSet<>(order).size(), "every sample once");
            }
            LoaderStats stats = loader.stats();
            assertEquals(3L * N, stats.samples());
            assertEquals(39, stats.batches());
            assertTrue(stats.tierHits()[0] > 0, "epochs 2 and 3 hit the memory tier: " + stats);
        }
    }

    @Test
    void sameSeedSameOrderDifferentSeedsDiffer() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<LoaderFixture.Item> a = builder(cache).shuffle(7).build();
                DataLoader<LoaderFixture.Item> b = builder(cache).shuffle(7).build();
                DataLoader<LoaderFixture.Item> c = builder(cache).shuffle(8).build()) {
            List<Integer> first;
            List<Integer> second;
            List<Integer> other;
            List<Integer> nextEpoch;
            try (Epoch<LoaderFixture.Item> e = a.epoch(1)) {
                first = indices(drain(e));
            }
            try (Epoch<LoaderFixture.Item> e = b.epoch(1)) {
                second = indices(drain(e));
            }
            try (Epoch<LoaderFixture.Item> e = c.epoch(1)) {
                other = indices(drain(e));
            }
            try (Epoch<LoaderFixture.Item> e = a.epoch(2)) {
                nextEpoch = indices(drain(e));
            }
            assertEquals(first, second);
            assertNotEquals(first, other);
            assertNotEquals(first, nextEpoch);
        }
    }

    @Test
    void sameOrderInAnotherJvm() throws Exception {
        List<Integer> here;
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<LoaderFixture.Item> loader =
                        builder(cache).shuffle(5).shard(1, 3).build();
                Epoch<LoaderFixture.Item> e = loader.epoch(4)) {
            here = indices(drain(e));
        }
        String out = LoaderChildMain.run(root, "order", "5", "1", "3", "4");
        assertEquals(here.toString(), out);
    }

    @Test
    void shardsAreDisjointAndCoverTheEpoch() throws IOException {
        int world = 3;
        List<Integer> all = new ArrayList<>();
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            for (int rank = 0; rank < world; rank++) {
                try (DataLoader<LoaderFixture.Item> loader =
                                builder(cache).shuffle(3).shard(rank, world).build();
                        Epoch<LoaderFixture.Item> e = loader.epoch(0)) {
                    List<Integer> part = indices(drain(e));
                    assertEquals(35, part.size(), "ceil(103 / 3) per rank");
                    all.addAll(part);
                }
            }
        }
        assertEquals(N, new HashSet<>(all).size(), "the parts cover the epoch");
        assertEquals(105, all.size(), "two padding samples, repeated from the start of the order");
    }

    @Test
    void resumeYieldsExactlyTheRemainingBatches() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            List<Integer> whole;
            try (DataLoader<LoaderFixture.Item> loader =
                            builder(cache).shuffle(9).build();
                    Epoch<LoaderFixture.Item> e = loader.epoch(2)) {
                whole = indices(drain(e));
            }
            LoaderState state;
            List<Integer> head = new ArrayList<>();
            try (DataLoader<LoaderFixture.Item> loader =
                            builder(cache).shuffle(9).build();
                    Epoch<LoaderFixture.Item> e = loader.epoch(2)) {
                var it = e.iterator();
                for (int b = 0; b < 5; b++) {
                    it.next().items().forEach(item -> head.add(item.index()));
                }
                state = loader.state(); // batches prefetched beyond the fifth do not count
                assertEquals(2, state.epoch());
                assertEquals(5, state.nextBatch());
            }
            List<Integer> tail;
            try (DataLoader<LoaderFixture.Item> loader =
                    builder(cache).shuffle(9).build()) {
                loader.resume(LoaderState.decode(state.encode()));
                IllegalArgumentException wrong = assertThrows(IllegalArgumentException.class, () -> loader.epoch(3));
                assertTrue(wrong.getMessage().contains("expected: 2"), wrong.getMessage());
                try (Epoch<LoaderFixture.Item> e = loader.epoch(2)) {
                    assertEquals(8, e.batches());
                    tail = indices(drain(e));
                }
                assertEquals(
                        new LoaderState(3, 0, N, 8, false, true, 9, 0, 1),
                        loader.state(),
                        "after the last batch: the start of the next epoch");
            }
            List<Integer> joined = new ArrayList<>(head);
            joined.addAll(tail);
            assertEquals(whole, joined);

            try (DataLoader<LoaderFixture.Item> other =
                    builder(cache).shuffle(10).build()) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> other.resume(state));
                assertTrue(e.getMessage().contains("seed=9") && e.getMessage().contains("seed=10"), e.getMessage());
            }
        }
    }

    @Test
    void resumeInANewJvmEqualsUninterrupted() throws Exception {
        List<Integer> whole;
        LoaderState state;
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            try (DataLoader<LoaderFixture.Item> loader =
                            builder(cache).shuffle(5).shard(1, 3).build();
                    Epoch<LoaderFixture.Item> e = loader.epoch(4)) {
                whole = indices(drain(e));
            }
            try (DataLoader<LoaderFixture.Item> loader =
                            builder(cache).shuffle(5).shard(1, 3).build();
                    Epoch<LoaderFixture.Item> e = loader.epoch(4)) {
                var it = e.iterator();
                it.next();
                it.next();
                state = loader.state();
            }
        }
        String out = LoaderChildMain.run(root, "resume", state.encode());
        assertEquals(whole.subList(16, whole.size()).toString(), out);
    }

    @Test
    void aMissingObjectFailsItsBatchWithTheKeyAndTheEpochGoesOn() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            List<String> keys = new ArrayList<>(files.objects().keySet()).subList(0, 20);
            List<String> withMissing = new ArrayList<>(keys);
            withMissing.add(9, "train/missing.bin");
            Dataset dataset = Dataset.ofKeys(cache, withMissing);
            try (DataLoader<LoaderFixture.Item> loader = DataLoader.builder(dataset, LoaderFixture::copy)
                            .batchSize(4)
                            .workers(2)
                            .build();
                    Epoch<LoaderFixture.Item> e = loader.epoch(0)) {
                var it = e.iterator();
                assertEquals(4, it.next().size());
                assertEquals(4, it.next().size());
                SampleException failed = assertThrows(SampleException.class, it::next);
                assertEquals("train/missing.bin", failed.key());
                assertEquals(9, failed.index());
                assertEquals(2, failed.batch());
                assertTrue(failed.getMessage().contains("train/missing.bin"), failed.getMessage());
                assertTrue(failed.getCause() instanceof NoSuchObjectException, failed.toString());
                // The trainer's own frame rides along: a log shows where the training loop met the failure.
                assertEquals(1, failed.getSuppressed().length, Arrays.toString(failed.getSuppressed()));
                Throwable trainer = failed.getSuppressed()[0];
                assertTrue(trainer instanceof SampleException.TrainerFrame, trainer.toString());
                assertTrue(
                        trainer.getMessage()
                                        .contains("'" + Thread.currentThread().getName() + "'")
                                || trainer.getMessage()
                                        .contains("(" + Thread.currentThread().getName() + ")"),
                        trainer.getMessage());
                assertTrue(
                        Arrays.stream(trainer.getStackTrace())
                                .anyMatch(f -> f.getMethodName()
                                        .equals("aMissingObjectFailsItsBatchWithTheKeyAndTheEpochGoesOn")),
                        "the test's own frame is in it");
                int rest = 0;
                while (it.hasNext()) {
                    rest += it.next().size();
                }
                assertEquals(9, rest, "the epoch goes on after the failed batch");
                assertEquals(1, loader.stats().failed());
            }
            try (DataLoader<LoaderFixture.Item> loader = DataLoader.builder(dataset, LoaderFixture::copy)
                            .batchSize(4)
                            .skipFailedSamples(true)
                            .build();
                    Epoch<LoaderFixture.Item> e = loader.epoch(0)) {
                int n = 0;
                for (Batch<LoaderFixture.Item> b : e) {
                    n += b.size();
                }
                assertEquals(20, n);
                assertEquals(1, loader.stats().skipped());
            }
        }
    }

    @Test
    void aDecoderFailureNamesTheSample() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<String> loader = DataLoader.builder(Dataset.ofObjects(cache, "train/"), s -> {
                            if (s.index() == 13) {
                                throw new IllegalArgumentException("not an image");
                            }
                            return s.key();
                        })
                        .batchSize(10)
                        .build();
                Epoch<String> e = loader.epoch(0)) {
            var it = e.iterator();
            it.next();
            SampleException failed = assertThrows(SampleException.class, it::next);
            assertTrue(
                    failed.getMessage().contains("'train/00013.bin'")
                            && failed.getMessage().contains("not an image"),
                    failed.getMessage());
        }
    }

    @Test
    void aSampleWhoseCacheFileIsTruncatedUnderTheDecoderFailsWithAnIOExceptionNotAnError() throws Exception {
        Path disk = root.resolve("disk");
        DiskTier tier = DiskTier.builder()
                .directory(disk)
                .capacity(16L << 20)
                .segmentSize(1L << 20)
                .build();
        AtomicBoolean truncated = new AtomicBoolean();
        try (TieredCache cache = leaks.watch(TieredCache.builder(PosixOrigin.of(root))
                .tier(tier)
                .pageSize(64 << 10)
                .build())) {
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            try (DataLoader<LoaderFixture.Item> loader = DataLoader.builder(dataset, LoaderFixture::copy)
                            .batchSize(8)
                            .build();
                    Epoch<LoaderFixture.Item> e = loader.epoch(0)) {
                e.forEach(batch -> {}); // fills the disk tier: from now on a sample is a view of a segment file
            }
            List<SampleException> failures = new ArrayList<>();
            try (DataLoader<LoaderFixture.Item> loader = DataLoader.builder(dataset, sample -> {
                                if (truncated.compareAndSet(false, true)) {
                                    // someone truncates the cache's files under the running loader: every payload is
                                    // past the end
                                    try (var files = Files.list(disk.resolve("segments"))) {
                                        for (Path f : files.toList()) {
                                            try (var channel = FileChannel.open(f, StandardOpenOption.WRITE)) {
                                                channel.truncate(4096);
                                            }
                                        }
                                    } catch (IOException x) {
                                        throw new UncheckedIOException(x);
                                    }
                                }
                                return LoaderFixture.copy(sample);
                            })
                            .batchSize(8)
                            .build();
                    Epoch<LoaderFixture.Item> e = loader.epoch(1)) {
                var it = e.iterator();
                while (it.hasNext()) {
                    try {
                        it.next();
                    } catch (SampleException failed) {
                        failures.add(failed);
                    }
                }
            }
            assertTrue(truncated.get());
            assertFalse(failures.isEmpty(), "the sample being decoded was a view of the truncated file");
            for (SampleException failed : failures) {
                assertTrue(
                        failed.getCause() instanceof IOException
                                && failed.getCause().getMessage().contains("the cache file under it was damaged"),
                        "an I/O failure, not an Error: " + failed);
            }
        }
    }

    @Test
    void closingMidEpochStopsEveryThreadAndReleasesEveryLease() throws Exception {
        Gate gate = new Gate();
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root)).holdReads(gate);
        try (TieredCache cache = LoaderFixture.cache(leaks, origin, 16L << 20)) {
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            DataLoader<LoaderFixture.Item> loader = DataLoader.builder(dataset, LoaderFixture::copy)
                    .batchSize(8)
                    .prefetch(4)
                    .workers(2)
                    .build();
            Epoch<LoaderFixture.Item> epoch = loader.epoch(0);
            Await.until(() -> gate.waiting() >= 8, () -> "reads held at the origin: " + gate.waiting());
            assertFalse(loader.epochThreads().isEmpty());
            epoch.close();
            assertTrue(loader.epochThreads().isEmpty(), "threads left: " + loader.epochThreads());
            assertEquals(0, cache.stats().openLeases(), cache.stats().toString());
            IllegalStateException closed = assertThrows(
                    IllegalStateException.class, () -> epoch.iterator().next());
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            gate.open();
            loader.close();
            assertTrue(loader.epochThreads().isEmpty());
        }
    }

    @Test
    void aTrainerWaitingWhileAnotherThreadClosesTheEpochIsWokenNotHung() throws Exception {
        Gate gate = new Gate();
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root)).holdReads(gate);
        try (TieredCache cache = LoaderFixture.cache(leaks, origin, 16L << 20);
                DataLoader<LoaderFixture.Item> loader = DataLoader.builder(
                                Dataset.ofObjects(cache, "train/"), LoaderFixture::copy)
                        .batchSize(8)
                        .build()) {
            Epoch<LoaderFixture.Item> epoch = loader.epoch(0);
            var it = epoch.iterator();
            CompletableFuture<Throwable> trainer = new CompletableFuture<>();
            Thread t = Thread.ofPlatform().start(() -> {
                try {
                    it.next();
                    trainer.complete(null);
                } catch (Throwable e) {
                    trainer.complete(e);
                }
            });
            Await.until(
                    () -> gate.waiting() >= 8 && t.getState() != Thread.State.RUNNABLE,
                    () -> "trainer waiting: " + t.getState());
            epoch.close();
            Throwable woken = trainer.get(30, TimeUnit.SECONDS);
            assertTrue(
                    woken instanceof IllegalStateException && woken.getMessage().contains("closed"),
                    String.valueOf(woken));
            gate.open();
        }
    }

    @Test
    void anInterruptedTrainerKeepsItsPosition() throws Exception {
        Gate gate = new Gate();
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root)).holdReads(gate);
        try (TieredCache cache = LoaderFixture.cache(leaks, origin, 16L << 20);
                DataLoader<LoaderFixture.Item> loader = DataLoader.builder(
                                Dataset.ofObjects(cache, "train/"), LoaderFixture::copy)
                        .batchSize(8)
                        .shuffle(4)
                        .build();
                Epoch<LoaderFixture.Item> epoch = loader.epoch(0)) {
            var it = epoch.iterator();
            Thread.currentThread().interrupt();
            IllegalStateException interrupted = assertThrows(IllegalStateException.class, it::next);
            assertTrue(Thread.interrupted(), "the interrupt flag is kept");
            assertTrue(interrupted.getMessage().contains("position is kept"), interrupted.getMessage());
            assertEquals(new LoaderState(0, 0, N, 8, false, true, 4, 0, 1), loader.state());
            gate.open();
            List<Integer> order = new ArrayList<>();
            while (it.hasNext()) {
                it.next().items().forEach(item -> order.add(item.index()));
            }
            assertEquals(
                    Arrays.stream(Sampler.shuffled(N, 4).epoch(0)).boxed().toList(),
                    order,
                    "no batch lost or repeated");
        }
    }

    @Test
    void anAbandonedEpochIsClosedByTheNextOne() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<LoaderFixture.Item> loader =
                        builder(cache).shuffle(1).build()) {
            Epoch<LoaderFixture.Item> first = loader.epoch(0);
            first.iterator().next(); // then dropped without close
            try (Epoch<LoaderFixture.Item> second = loader.epoch(1)) {
                assertThrows(IllegalStateException.class, () -> first.iterator());
                assertEquals(N, indices(drain(second)).size());
            }
            assertEquals(0, cache.stats().openLeases());
        }
    }

    @Test
    void memoryStaysBoundedWhenTheTrainerNeverConsumes() throws IOException {
        AtomicInteger decoded = new AtomicInteger();
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<Integer> loader = DataLoader.builder(Dataset.ofObjects(cache, "train/"), s -> {
                            decoded.incrementAndGet();
                            return s.index();
                        })
                        .batchSize(4)
                        .prefetch(3)
                        .workers(2)
                        .build();
                Epoch<Integer> epoch = loader.epoch(0)) {
            // The feeder starts prefetch batches and then waits for the trainer, with nothing else in flight.
            Await.until(
                    () -> decoded.get() == 12
                            && feederWaiting(loader)
                            && cache.stats().openLeases() == 0,
                    () -> "decoded " + decoded.get() + ", threads " + loader.epochThreads() + ", leases "
                            + cache.stats().openLeases());
            assertEquals(12, decoded.get(), "read-ahead beyond prefetch × batch size");
            assertEquals(3, loader.stats().queueDepth());
            var it = epoch.iterator();
            it.next();
            Await.until(() -> decoded.get() == 16 && feederWaiting(loader), () -> "decoded " + decoded.get());
            assertEquals(16, decoded.get(), "one batch taken, one more read");
        }
    }

    private static boolean feederWaiting(DataLoader<?> loader) {
        List<Thread> threads = loader.epochThreads();
        return threads.size() == 1 && threads.getFirst().getState() == Thread.State.WAITING;
    }

    @Test
    void badArgumentsAreRefusedWithClearMessages() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            assertMessage(() -> DataLoader.builder(null, LoaderFixture::copy), "dataset: null");
            assertMessage(() -> DataLoader.builder(dataset, null), "decoder: null");
            var b = DataLoader.builder(dataset, LoaderFixture::copy);
            assertMessage(() -> b.batchSize(0), "batch size: 0 (expected: >= 1)");
            assertMessage(() -> b.shard(3, 3), "rank: 3");
            assertMessage(() -> b.shard(0, 0), "world size: 0");
            assertMessage(() -> b.workers(0), "workers: 0");
            assertMessage(() -> b.prefetch(0), "prefetch: 0");
            assertMessage(() -> b.maxBytesInFlight(0), "max bytes in flight: 0");
            assertMessage(() -> Dataset.ofObjects(cache, "nothing/"), "no objects");
            assertMessage(() -> Dataset.ofKeys(cache, List.of("a", "a")), "appears twice");
            assertMessage(() -> Dataset.ofKeys(cache, List.of("../etc/passwd")), "'..'");
            assertMessage(() -> Dataset.ofKeys(cache, List.of()), "empty");
            try (DataLoader<LoaderFixture.Item> loader = b.batchSize(4).build()) {
                assertMessage(() -> loader.epoch(-1), "epoch: -1");
                assertMessage(() -> loader.resume(null), "state: null");
                assertMessage(() -> LoaderState.decode("garbage"), "expected: the output of LoaderState.encode()");
            }
        }
    }

    private static void assertMessage(Executable call, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(expected), "'" + e.getMessage() + "' should contain '" + expected + "'");
    }

    /** The child JVM: prints an epoch's order, or the batches left after resuming a state. */
    static final class LoaderChildMain {

        static String run(Path dir, String... args) throws Exception {
            String java =
                    Path.of(System.getProperty("java.home"), "bin", "java").toString();
            List<String> command = new ArrayList<>(List.of(
                    java,
                    "-cp",
                    System.getProperty("java.class.path"),
                    LoaderChildMain.class.getName(),
                    dir.toString()));
            command.addAll(List.of(args));
            Process child =
                    new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            assertTrue(child.waitFor(60, TimeUnit.SECONDS), out);
            assertEquals(0, child.exitValue(), out);
            String[] lines = out.split("\n");
            return lines[lines.length - 1];
        }

        public static void main(String[] args) throws Exception {
            Path dir = Path.of(args[0]);
            try (TieredCache cache = TieredCache.builder(PosixOrigin.of(dir))
                    .tier(MemoryTier.builder().capacity(16L << 20).build())
                    .build()) {
                Dataset dataset = Dataset.ofObjects(cache, "train/");
                DataLoader<Integer> loader;
                long epoch;
                if (args[1].equals("order")) {
                    loader = DataLoader.builder(dataset, Sample::index)
                            .batchSize(8)
                            .shuffle(Long.parseLong(args[2]))
                            .shard(Integer.parseInt(args[3]), Integer.parseInt(args[4]))
                            .build();
                    epoch = Long.parseLong(args[5]);
                } else {
                    LoaderState state = LoaderState.decode(args[2]);
                    loader = DataLoader.builder(dataset, Sample::index)
                            .batchSize(state.batchSize())
                            .shuffle(state.seed())
                            .shard(state.rank(), state.worldSize())
                            .build();
                    loader.resume(state);
                    epoch = state.epoch();
                }
                List<Integer> order = new ArrayList<>();
                try (loader;
                        Epoch<Integer> e = loader.epoch(epoch)) {
                    for (Batch<Integer> b : e) {
                        order.addAll(b.items());
                    }
                }
                System.out.println(order);
            }
        }
    }
}
