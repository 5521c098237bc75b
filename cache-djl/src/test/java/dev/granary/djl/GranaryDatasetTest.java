// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.BaseNDManager;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.Batch;
import dev.granary.TieredCache;
import dev.granary.loader.Dataset;
import dev.granary.loader.LoaderState;
import dev.granary.loader.Partitioning;
import dev.granary.loader.Sampler;
import dev.granary.loader.Shuffle;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * GranaryDataset over real files (PosixOrigin) and a memory tier, with DJL's PyTorch engine: the arrays carry what
 * was written, in the sampler's order; epochs, seeds, shards and resume behave as the loader's; arguments are
 * checked; nothing leaks — neither cache leases nor NDArrays.
 */
@Timeout(120)
class GranaryDatasetTest {

    private static final int N = 50;
    private static final int BATCH = 8;
    private static final long SEED = 7;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private NDManager manager;

    @BeforeEach
    void setUp() {
        DjlFixture.writeSamples(root, N);
        manager = NDManager.newBaseManager();
    }

    @AfterEach
    void closeManager() {
        manager.close();
    }

    /** A batch's content, read back from the engine's arrays. */
    record Seen(int[] indices, float[] values, byte[] raw, long[] labels, long progress) {}

    /** Checks a batch against what was written for its indices, then closes it. */
    private static Seen check(Batch batch) {
        try (batch) {
            int n = batch.getSize();
            int[] indices = batch.getIndices().stream()
                    .mapToInt(i -> ((Long) i).intValue())
                    .toArray();
            assertEquals(n, indices.length);
            assertEquals(2, batch.getData().size());
            assertEquals(1, batch.getLabels().size());
            NDArray values = batch.getData().get(0);
            NDArray raw = batch.getData().get(1);
            NDArray labels = batch.getLabels().get(0);
            assertEquals(new Shape(n, 2), values.getShape());
            assertEquals(DataType.FLOAT32, values.getDataType());
            assertEquals(new Shape(n, 3), raw.getShape());
            assertEquals(DataType.UINT8, raw.getDataType());
            assertEquals(new Shape(n), labels.getShape());
            assertEquals(DataType.INT64, labels.getDataType());
            assertEquals(batch.getManager(), values.getManager(), "the arrays belong to the batch's manager");
            float[] v = values.toFloatArray();
            byte[] r = raw.toByteArray();
            long[] l = labels.toLongArray();
            for (int i = 0; i < n; i++) {
                int index = indices[i];
                byte[] written = DjlFixture.bytesOf(index);
                assertEquals(index * 0.5f, v[2 * i], "data 0 of sample " + index);
                assertEquals(written[1] & 0xff, v[2 * i + 1], "data 0 of sample " + index);
                assertArrayEquals(written, Arrays.copyOfRange(r, 3 * i, 3 * i + 3), "data 1 of sample " + index);
                assertEquals(index % 7, l[i], "label of sample " + index);
            }
            return new Seen(indices, v, r, l, batch.getProgress());
        }
    }

    /** The indices of one epoch as DJL sees them, every batch checked. */
    private static int[] epoch(GranaryDataset dataset, NDManager manager) {
        List<Integer> order = new ArrayList<>();
        for (Batch batch : dataset.getData(manager)) {
            for (int i : check(batch).indices()) {
                order.add(i);
            }
        }
        return order.stream().mapToInt(Integer::intValue).toArray();
    }

    @Test
    void successiveGetDataCallsAreSuccessiveEpochsInSamplerOrder() throws IOException {
        try (TieredCache cache = DjlFixture.cache(leaks, root);
                GranaryDataset dataset = DjlFixture.builder(Dataset.ofObjects(cache, "train/"))
                        .loader(options -> options.batchSize(BATCH).shuffle(SEED))
                        .build()) {
            Sampler sampler = Sampler.shuffled(N, SEED);
            for (int e = 0; e < 2; e++) {
                List<Seen> seen = new ArrayList<>();
                for (Batch batch : dataset.getData(manager)) {
                    seen.add(check(batch));
                }
                assertEquals(7, seen.size(), "ceil(50 / 8) batches");
                assertEquals(2, seen.getLast().indices().length, "the last batch is partial");
                int[] order = seen.stream()
                        .flatMapToInt(s -> Arrays.stream(s.indices()))
                        .toArray();
                assertArrayEquals(sampler.epoch(e), order, "epoch " + e + " in the sampler's order");
                assertEquals(
                        List.of(1L, 2L, 3L, 4L, 5L, 6L, 7L),
                        seen.stream().map(Seen::progress).toList());
                assertEquals(new LoaderState(e + 1, 0, N, BATCH, false, true, SEED, 0, 1), dataset.state());
            }
            assertNotEquals(
                    Arrays.toString(sampler.epoch(0)),
                    Arrays.toString(sampler.epoch(1)),
                    "epochs are shuffled differently");
            assertEquals(2L * N, dataset.stats().samples());
            assertTrue(
                    ((BaseNDManager) manager).getManagedArrays().isEmpty(),
                    "closed batches leave no array in the manager");
        }
    }

    @Test
    void arraysAreCopiesThatOutliveTheStagingBuffersAndTheDataset() throws IOException {
        List<Batch> kept = new ArrayList<>();
        try (TieredCache cache = DjlFixture.cache(leaks, root)) {
            try (GranaryDataset dataset = DjlFixture.builder(Dataset.ofObjects(cache, "train/"))
                    .loader(options -> options.batchSize(BATCH).shuffle(SEED).prefetch(1))
                    .build()) {
                // Hold every batch of two epochs: with prefetch 1 the loader has 3 staging buffers, so later batches
                // are collated into the buffers of earlier ones while those are still held.
                for (int e = 0; e < 2; e++) {
                    for (Batch batch : dataset.getData(manager)) {
                        kept.add(batch);
                    }
                }
            } // the loader is closed: its staging buffers are freed
            assertEquals(14, kept.size());
            Sampler sampler = Sampler.shuffled(N, SEED);
            int[] expected = IntStream.concat(Arrays.stream(sampler.epoch(0)), Arrays.stream(sampler.epoch(1)))
                    .toArray();
            int[] seen = kept.stream()
                    .flatMapToInt(b -> Arrays.stream(check(b).indices()))
                    .toArray();
            assertArrayEquals(expected, seen);
        }
    }

    @Test
    void theSameSeedGivesTheSameOrderAndAnotherSeedAnother() throws IOException {
        try (TieredCache cache = DjlFixture.cache(leaks, root)) {
            Dataset samples = Dataset.ofObjects(cache, "train/");
            Function<Long, int[]> firstEpoch = seed -> {
                try (GranaryDataset dataset = DjlFixture.builder(samples)
                        .loader(options -> options.batchSize(BATCH).shuffle(seed))
                        .build()) {
                    return epoch(dataset, manager);
                }
            };
            int[] a = firstEpoch.apply(SEED);
            assertArrayEquals(a, firstEpoch.apply(SEED));
            assertFalse(Arrays.equals(a, firstEpoch.apply(SEED + 1)));
            assertArrayEquals(
                    IntStream.range(0, N).toArray(), IntStream.of(a).sorted().toArray(), "every sample once");
        }
    }

    @Test
    void shardsAreDisjointAndCoverTheEpoch() throws IOException {
        int worldSize = 5; // divides 50: no padding
        try (TieredCache cache = DjlFixture.cache(leaks, root)) {
            Dataset samples = Dataset.ofObjects(cache, "train/");
            Set<Integer> all = new HashSet<>();
            for (int r = 0; r < worldSize; r++) {
                int rank = r; // for the lambda
                try (GranaryDataset dataset = DjlFixture.builder(samples)
                        .loader(options -> options.batchSize(4).shuffle(SEED).shard(rank, worldSize))
                        .build()) {
                    epoch(dataset, manager); // epoch 0
                    int[] part = epoch(dataset, manager); // epoch 1
                    assertArrayEquals(
                            Sampler.shuffled(N, SEED).shard(rank, worldSize).epoch(1), part);
                    assertEquals(N / worldSize, part.length);
                    for (int i : part) {
                        assertTrue(all.add(i), "sample " + i + " is in two shards");
                    }
                }
            }
            assertEquals(N, all.size());
        }
    }

    @Test
    void resumeContinuesExactlyWhereTheStateWasTaken() throws IOException {
        try (TieredCache cache = DjlFixture.cache(leaks, root)) {
            Dataset samples = Dataset.ofObjects(cache, "train/");
            List<int[]> reference = new ArrayList<>();
            try (GranaryDataset dataset = DjlFixture.builder(samples)
                    .loader(options -> options.batchSize(BATCH).shuffle(SEED))
                    .build()) {
                for (int e = 0; e < 2; e++) {
                    for (Batch batch : dataset.getData(manager)) {
                        reference.add(check(batch).indices());
                    }
                }
            }
            String checkpoint;
            try (GranaryDataset dataset = DjlFixture.builder(samples)
                    .loader(options -> options.batchSize(BATCH).shuffle(SEED))
                    .build()) {
                Iterator<Batch> it = dataset.getData(manager).iterator();
                for (int b = 0; b < 3; b++) {
                    assertArrayEquals(reference.get(b), check(it.next()).indices());
                }
                assertTrue(it.hasNext()); // takes batch 3 from the loader; DJL has not had it
                checkpoint = dataset.state().encode();
            }
            assertEquals(new LoaderState(0, 3, N, BATCH, false, true, SEED, 0, 1), LoaderState.decode(checkpoint));
            try (GranaryDataset dataset = DjlFixture.builder(samples)
                    .loader(options -> options.batchSize(BATCH).shuffle(SEED))
                    .build()) {
                dataset.resume(LoaderState.decode(checkpoint));
                List<int[]> rest = new ArrayList<>();
                for (int e = 0; e < 2; e++) {
                    for (Batch batch : dataset.getData(manager)) {
                        rest.add(check(batch).indices());
                    }
                }
                assertEquals(reference.size() - 3, rest.size());
                for (int b = 0; b < rest.size(); b++) {
                    assertArrayEquals(reference.get(b + 3), rest.get(b), "batch " + (b + 3) + " of the reference");
                }
                assertEquals(new LoaderState(2, 0, N, BATCH, false, true, SEED, 0, 1), dataset.state());
            }
            try (GranaryDataset other = DjlFixture.builder(samples)
                    .loader(options -> options.batchSize(BATCH).shuffle(SEED + 1))
                    .build()) {
                IllegalArgumentException e = assertThrows(
                        IllegalArgumentException.class, () -> other.resume(LoaderState.decode(checkpoint)));
                assertTrue(e.getMessage().contains("seed=7") && e.getMessage().contains("expected"), e.getMessage());
            }
        }
    }

    @Test
    void aStablePartitionResumesWithItsOrderAndPartitioningInTheState() throws IOException {
        try (TieredCache cache = DjlFixture.cache(leaks, root)) {
            Dataset samples = Dataset.ofObjects(cache, "train/");
            List<int[]> reference = new ArrayList<>();
            try (GranaryDataset dataset = DjlFixture.builder(samples)
                    .loader(options -> options.batchSize(BATCH)
                            .shuffle(Shuffle.samples(SEED))
                            .shard(1, 2, Partitioning.STABLE))
                    .build()) {
                for (int e = 0; e < 2; e++) {
                    for (Batch batch : dataset.getData(manager)) {
                        reference.add(check(batch).indices());
                    }
                }
            }
            String checkpoint;
            try (GranaryDataset dataset = DjlFixture.builder(samples)
                    .loader(options -> options.batchSize(BATCH)
                            .shuffle(Shuffle.samples(SEED))
                            .shard(1, 2, Partitioning.STABLE))
                    .build()) {
                Iterator<Batch> it = dataset.getData(manager).iterator();
                assertArrayEquals(reference.get(0), check(it.next()).indices());
                assertTrue(it.hasNext()); // the loader's batch 1 is taken; the state must still say batch 1
                LoaderState state = dataset.state();
                assertEquals(Partitioning.STABLE, state.partitioning());
                assertEquals(Shuffle.samples(SEED), state.shuffle());
                assertEquals(1, state.nextBatch());
                checkpoint = state.encode();
            }
            try (GranaryDataset dataset = DjlFixture.builder(samples)
                    .loader(options -> options.batchSize(BATCH)
                            .shuffle(Shuffle.samples(SEED))
                            .shard(1, 2, Partitioning.STABLE))
                    .build()) {
                dataset.resume(LoaderState.decode(checkpoint));
                List<int[]> rest = new ArrayList<>();
                for (int e = 0; e < 2; e++) {
                    for (Batch batch : dataset.getData(manager)) {
                        rest.add(check(batch).indices());
                    }
                }
                assertEquals(reference.size() - 1, rest.size());
                for (int b = 0; b < rest.size(); b++) {
                    assertArrayEquals(reference.get(b + 1), rest.get(b), "batch " + (b + 1) + " of the reference");
                }
            }
            try (GranaryDataset perEpoch = DjlFixture.builder(samples)
                    .loader(options -> options.batchSize(BATCH)
                            .shuffle(Shuffle.samples(SEED))
                            .shard(1, 2))
                    .build()) {
                assertThrows(
                        IllegalArgumentException.class,
                        () -> perEpoch.resume(LoaderState.decode(checkpoint)),
                        "a state of a STABLE partition does not resume a PER_EPOCH dataset");
            }
        }
    }

    @Test
    void badArgumentsAreRefusedNamingTheValueAndTheExpectation() throws IOException {
        try (TieredCache cache = DjlFixture.cache(leaks, root)) {
            Dataset samples = Dataset.ofObjects(cache, "train/");
            assertMessage(() -> GranaryDataset.builder(null, DjlFixture::decode), "samples: null (expected:");
            assertMessage(() -> GranaryDataset.builder(samples, null), "decoder: null (expected:");
            GranaryDataset.Builder<DjlFixture.Item> b = GranaryDataset.builder(samples, DjlFixture::decode);
            ArrayWriter<DjlFixture.Item> none = (item, slot) -> {};
            assertMessage(() -> b.loader(options -> options.batchSize(0)), "batch size: 0 (expected: >= 1)");
            assertMessage(
                    () -> b.loader(options -> options.shard(3, 3)), "rank: 3 (expected: 0 <= rank < world size 3)");
            assertMessage(() -> b.data(null, DataType.FLOAT32, none), "data array 0 shape: null (expected:");
            assertMessage(
                    () -> b.data(new Shape(3, 0), DataType.FLOAT32, none),
                    "data array 0 shape: (3, 0) (expected: every dimension >= 1");
            assertMessage(() -> b.data(new Shape(-1), DataType.FLOAT32, none), "(expected: every dimension >= 1");
            assertMessage(
                    () -> b.data(new Shape(3), DataType.STRING, none),
                    "data array 0 type: string (expected: a fixed-size type");
            assertMessage(() -> b.label(new Shape(3), null, none), "label array 0 type: null (expected:");
            assertMessage(() -> b.data(new Shape(3), DataType.FLOAT32, null), "data array 0 writer: null (expected:");
            assertMessage(
                    () -> b.data(new Shape(1 << 20, 1 << 20), DataType.FLOAT32, none),
                    "bytes per item (expected: at most 2147483647)");
            assertMessage(() -> b.loader(null), "loader options: null (expected:");
            assertMessage(() -> b.loader(options -> options.prefetch(0)), "prefetch: 0 (expected: 1..1024");
            assertMessage(b::build, "data arrays: none (expected: at least one data(shape, type, writer))");
            assertMessage(
                    () -> GranaryDataset.builder(samples, DjlFixture::decode)
                            .loader(options -> options.batchSize(1 << 20))
                            .data(new Shape(1 << 10), DataType.FLOAT32, none)
                            .build(),
                    "data array 0: 4294967296 bytes per batch");
            assertMessage(
                    () -> b.loader(options -> options.staging(64, (items, staging) -> 0)),
                    "staging: 64 bytes per batch, set through loader(...) (expected: no staging(...)");

            GranaryDataset dataset = DjlFixture.builder(samples)
                    .loader(options -> options.batchSize(BATCH))
                    .build();
            assertMessage(() -> dataset.getData(null), "manager: null (expected:");
            assertMessage(() -> dataset.resume(null), "state: null (expected:");
            assertMessage(
                    () -> dataset.resume(new LoaderState(0, 0, N + 1, BATCH, false, false, 0, 0, 1)), "datasetSize=51");
            Iterable<Batch> batches = dataset.getData(manager);
            assertNotNull(batches.iterator(), "the first iterator");
            IllegalStateException twice = assertThrows(IllegalStateException.class, batches::iterator);
            assertTrue(twice.getMessage().contains("call getData again"), twice.getMessage());
            dataset.close();
            dataset.close(); // idempotent
            IllegalStateException closed = assertThrows(IllegalStateException.class, () -> dataset.getData(manager));
            assertTrue(closed.getMessage().contains("is closed"), closed.getMessage());
            assertThrows(IllegalStateException.class, dataset::prepare);
        }
    }

    private static void assertMessage(Executable call, String part) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(part), "'" + e.getMessage() + "' should contain '" + part + "'");
    }

    @Test
    void closingMidEpochReleasesEveryLeaseAndStagingBuffer() throws IOException {
        try (TieredCache cache = DjlFixture.cache(leaks, root)) {
            GranaryDataset dataset = DjlFixture.builder(Dataset.ofObjects(cache, "train/"))
                    .loader(options ->
                            options.batchSize(4).shuffle(SEED).prefetch(4).workers(2))
                    .build();
            Iterator<Batch> it = dataset.getData(manager).iterator();
            Batch first = it.next();
            assertTrue(it.hasNext()); // the loader is reading ahead now
            dataset.close();
            assertEquals(0, cache.stats().openLeases(), "closing the dataset releases every lease");
            IllegalStateException closed = assertThrows(IllegalStateException.class, it::next);
            assertTrue(closed.getMessage().contains("epoch 0 is closed: the dataset was closed"), closed.getMessage());
            assertEquals(
                    new LoaderState(0, 1, N, 4, false, true, SEED, 0, 1),
                    dataset.state(),
                    "the batch fetched by hasNext() was never handed to DJL");
            check(first); // still valid: a copy in the engine
        } // LeakCheck: no lease open, the memory tier released
    }

    @Test
    void aBatchWhoseSamplesAllFailedIsLeftOutAndAFailedWriterNamesItsArray() throws IOException {
        try (TieredCache cache = DjlFixture.cache(leaks, root)) {
            Dataset samples = Dataset.ofObjects(cache, "train/");
            // Sequential: batch 1 holds samples 8..15, all of which fail to decode and are skipped.
            try (GranaryDataset dataset = GranaryDataset.builder(samples, sample -> {
                        if (sample.index() >= 8 && sample.index() < 16) {
                            throw new IOException("unreadable " + sample.key());
                        }
                        return DjlFixture.decode(sample);
                    })
                    .loader(options -> options.batchSize(BATCH))
                    .data(new Shape(), DataType.INT32, (item, slot) -> slot.set(ValueLayout.JAVA_INT, 0, item.index()))
                    .loader(options -> options.skipFailedSamples(true))
                    .build()) {
                List<Integer> order = new ArrayList<>();
                int batches = 0;
                for (Batch batch : dataset.getData(manager)) {
                    try (batch) {
                        batches++;
                        for (int i : batch.getData().singletonOrThrow().toIntArray()) {
                            order.add(i);
                        }
                    }
                }
                assertEquals(6, batches, "7 batches, one of them empty");
                assertEquals(
                        IntStream.range(0, N)
                                .filter(i -> i < 8 || i >= 16)
                                .boxed()
                                .toList(),
                        order);
                assertEquals(8, dataset.stats().skipped());
            }
            try (GranaryDataset dataset = GranaryDataset.builder(samples, DjlFixture::decode)
                    .loader(options -> options.batchSize(BATCH))
                    .data(new Shape(2), DataType.FLOAT32, (item, slot) -> {
                        if (item.index() == 20) {
                            throw new IllegalStateException("no pixels for sample 20");
                        }
                    })
                    .build()) {
                Iterator<Batch> it = dataset.getData(manager).iterator();
                int good = 0;
                IllegalStateException failure = null;
                while (true) {
                    try {
                        if (!it.hasNext()) {
                            break;
                        }
                        it.next().close();
                        good++;
                    } catch (IllegalStateException e) {
                        failure = e;
                    }
                }
                assertEquals(6, good, "the other batches go on");
                assertTrue(
                        failure != null
                                && failure.getMessage().contains("batch 2 of epoch 0")
                                && String.valueOf(failure.getCause().getMessage())
                                        .contains("into data array 0 ((2) float32 per item) failed"),
                        String.valueOf(failure));
            }
        }
    }
}
