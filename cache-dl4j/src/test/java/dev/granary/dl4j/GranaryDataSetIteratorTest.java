// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.Dataset;
import dev.granary.loader.LoaderState;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.Partitioning;
import dev.granary.loader.SampleException;
import dev.granary.loader.Sampler;
import dev.granary.loader.Shuffle;
import dev.granary.testkit.LeakCheck;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.NotSerializableException;
import java.io.ObjectOutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Set;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.api.ndarray.INDArray;
import org.nd4j.linalg.dataset.DataSet;
import org.nd4j.linalg.dataset.api.DataSetPreProcessor;
import org.nd4j.linalg.dataset.api.preprocessor.ImagePreProcessingScaler;
import org.nd4j.linalg.learning.config.Sgd;
import org.nd4j.linalg.lossfunctions.LossFunctions;

/**
 * The DL4J iterator over a small WebDataset in real tar files (PosixOrigin, MemoryTier, every lease tracked): rows
 * equal what was written, in sampler order, epoch after epoch through reset(); seeds, shards, resume, the
 * pre-processor, DL4J's own fit loop, failures, arguments and closing.
 */
@Timeout(60)
class GranaryDataSetIteratorTest {

    private static final int N = 50;
    private static final int BATCH = 8;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path dir;

    private Shards shards;
    private TieredCache cache;
    private Dataset dataset;

    @BeforeEach
    void setUp() throws IOException {
        shards = Shards.write(dir, N, 16);
        cache = Shards.cache(leaks, dir);
        dataset = shards.dataset(cache);
    }

    private GranaryDataSetIterator.Builder builder() {
        return GranaryDataSetIterator.builder(dataset, Shards.ENCODER)
                .features(Shards.COLUMNS)
                .labels(Shards.CLASSES)
                .loader(o -> o.batchSize(BATCH).workers(2).prefetch(2));
    }

    /** The dataset index of every row of the iterator's current epoch, checking each row against what was written. */
    private List<Integer> drainEpoch(GranaryDataSetIterator it) {
        List<Integer> order = new ArrayList<>();
        while (it.hasNext()) {
            order.addAll(check(it.next()));
        }
        return order;
    }

    /** Checks every row of a batch against the sample it claims to be (its first feature) and returns the samples. */
    private List<Integer> check(DataSet batch) {
        INDArray f = batch.getFeatures();
        INDArray l = batch.getLabels();
        assertEquals(2, f.rank());
        assertEquals(Shards.COLUMNS, f.columns());
        assertEquals(Shards.CLASSES, l.columns());
        assertEquals(f.rows(), l.rows());
        List<Integer> ids = new ArrayList<>();
        for (int r = 0; r < f.rows(); r++) {
            int id = (int) f.getFloat(r, 0);
            assertArrayEquals(shards.features(id), f.getRow(r).toFloatVector(), "features of sample " + id);
            assertArrayEquals(shards.labels(id), l.getRow(r).toFloatVector(), "labels of sample " + id);
            ids.add(id);
        }
        return ids;
    }

    private static List<Integer> boxed(int[] order) {
        return Arrays.stream(order).boxed().toList();
    }

    @Test
    void twoEpochsThroughResetYieldWhatWasWrittenInSamplerOrder() {
        Sampler sampler = Sampler.shuffled(N, 7);
        try (GranaryDataSetIterator it = builder().loader(o -> o.shuffle(7)).build()) {
            assertEquals(7, it.batchesPerEpoch());
            for (int e = 0; e < 2; e++) {
                assertEquals(e, it.epoch());
                List<Integer> sizes = new ArrayList<>();
                List<Integer> order = new ArrayList<>();
                while (it.hasNext()) {
                    DataSet batch = it.next();
                    sizes.add(batch.numExamples());
                    order.addAll(check(batch));
                }
                assertEquals(boxed(sampler.epoch(e)), order, "epoch " + e);
                assertEquals(List.of(8, 8, 8, 8, 8, 8, 2), sizes);
                assertThrows(NoSuchElementException.class, it::next);
                it.reset();
            }
            assertEquals(2, it.epoch());
            assertNotEquals(boxed(sampler.epoch(0)), boxed(sampler.epoch(1)));
        }
    }

    @Test
    void withoutShuffleTheOrderIsTheDatasetsEveryEpoch() {
        try (GranaryDataSetIterator it = builder().build()) {
            List<Integer> expected = boxed(Sampler.sequential(N).epoch(0));
            assertEquals(expected, drainEpoch(it));
            it.reset();
            assertEquals(expected, drainEpoch(it));
        }
    }

    @Test
    void resetOnAnEpochThatHandedNothingOutStaysAtItsStart() {
        try (GranaryDataSetIterator it = builder().loader(o -> o.shuffle(3)).build()) {
            it.reset();
            it.reset();
            assertEquals(0, it.epoch());
            assertEquals(boxed(Sampler.shuffled(N, 3).epoch(0)), drainEpoch(it));
            it.reset();
            it.reset(); // nothing handed out of epoch 1 yet
            assertEquals(1, it.epoch());
            it.next();
            it.reset(); // mid-epoch: the rest of epoch 1 is skipped
            assertEquals(2, it.epoch());
            assertEquals(boxed(Sampler.shuffled(N, 3).epoch(2)), drainEpoch(it));
        }
    }

    @Test
    void theSameSeedGivesTheSameOrderAndAnotherSeedAnother() {
        List<Integer> first;
        List<Integer> second;
        List<Integer> other;
        try (GranaryDataSetIterator a = builder().loader(o -> o.shuffle(11)).build();
                GranaryDataSetIterator b = builder()
                        .loader(o -> o.shuffle(11).workers(1).prefetch(5))
                        .build();
                GranaryDataSetIterator c = builder().loader(o -> o.shuffle(12)).build()) {
            first = drainEpoch(a);
            second = drainEpoch(b);
            other = drainEpoch(c);
        }
        assertEquals(first, second);
        assertNotEquals(first, other);
        assertEquals(Set.copyOf(first), Set.copyOf(other));
    }

    @Test
    void shardsAreDisjointAndCoverEveryEpoch() {
        int world = 5; // divides N: no padding
        for (int e = 0; e < 2; e++) {
            Set<Integer> seen = new HashSet<>();
            int total = 0;
            for (int r = 0; r < world; r++) {
                int rank = r; // for the lambda
                try (GranaryDataSetIterator it =
                        builder().loader(o -> o.shuffle(9).shard(rank, world)).build()) {
                    assertEquals(2, it.batchesPerEpoch()); // 10 samples: 8 + 2
                    if (e == 1) {
                        drainEpoch(it);
                        it.reset();
                    }
                    List<Integer> part = drainEpoch(it);
                    assertEquals(boxed(Sampler.shuffled(N, 9).shard(rank, world).epoch(e)), part);
                    assertEquals(N / world, part.size());
                    seen.addAll(part);
                    total += part.size();
                }
            }
            assertEquals(N, total);
            assertEquals(N, seen.size(), "epoch " + e + ": the ranks' parts are disjoint and cover the dataset");
        }
    }

    @Test
    void shardBlocksAndStablePartsAreSetOnTheIteratorsBuilder() {
        int world = 2;
        Shuffle blocks = Shuffle.shardBlocks(9, 2);
        Set<Integer> seen = new HashSet<>();
        for (int r = 0; r < world; r++) {
            int rank = r; // for the lambda
            try (GranaryDataSetIterator it = builder()
                    .loader(o -> o.shuffle(blocks).shard(rank, world, Partitioning.STABLE))
                    .build()) {
                List<Integer> first = drainEpoch(it);
                it.reset();
                List<Integer> second = drainEpoch(it);
                Sampler sampler = Sampler.of(dataset, blocks).shard(rank, world, Partitioning.STABLE);
                assertEquals(boxed(sampler.epoch(0)), first);
                assertEquals(boxed(sampler.epoch(1)), second);
                assertEquals(new HashSet<>(first), new HashSet<>(second), "a stable part keeps its samples");
                assertEquals(Partitioning.STABLE, it.state().partitioning());
                assertEquals(blocks, it.state().shuffle());
                seen.addAll(first);
            }
        }
        assertEquals(N, seen.size(), "the ranks' stable parts cover the dataset");
    }

    @Test
    void aStateTakenMidEpochResumesExactlyInANewIterator() {
        List<List<Integer>> reference = new ArrayList<>();
        try (GranaryDataSetIterator it = builder().loader(o -> o.shuffle(5)).build()) {
            for (int e = 0; e < 2; e++) {
                while (it.hasNext()) {
                    reference.add(check(it.next()));
                }
                it.reset();
            }
        }
        String checkpoint;
        try (GranaryDataSetIterator it = builder().loader(o -> o.shuffle(5)).build()) {
            for (int b = 0; b < 3; b++) {
                assertEquals(reference.get(b), check(it.next()));
            }
            checkpoint = it.state().encode();
        }
        LoaderState state = LoaderState.decode(checkpoint);
        assertEquals(0, state.epoch());
        assertEquals(3, state.nextBatch());
        List<List<Integer>> resumed = new ArrayList<>();
        try (GranaryDataSetIterator it =
                builder().loader(o -> o.shuffle(5)).resume(state).build()) {
            it.reset(); // nothing handed out since the resume: stays (DL4J's fit may call it)
            for (int e = 0; e < 2; e++) {
                while (it.hasNext()) {
                    resumed.add(check(it.next()));
                }
                it.reset();
            }
        }
        assertEquals(reference.subList(3, reference.size()), resumed);
    }

    @Test
    void resumeOnALiveIteratorReplaysFromTheStateAndARefusedStateChangesNothing() {
        try (GranaryDataSetIterator it = builder().loader(o -> o.shuffle(4)).build()) {
            it.next();
            LoaderState afterOne = it.state();
            List<Integer> second = check(it.next());
            List<Integer> third = check(it.next());
            LoaderState foreign;
            try (GranaryDataSetIterator other =
                    builder().loader(o -> o.shuffle(99)).build()) {
                foreign = other.state();
            }
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> it.resume(foreign));
            assertTrue(refused.getMessage().contains("seed=99"), refused.getMessage());
            assertEquals(
                    boxed(Arrays.copyOfRange(Sampler.shuffled(N, 4).epoch(0), 3 * BATCH, 4 * BATCH)),
                    check(it.next()),
                    "a refused state leaves the epoch where it was");
            it.resume(afterOne);
            assertEquals(second, check(it.next()));
            assertEquals(third, check(it.next()));
            assertThrows(IllegalArgumentException.class, () -> it.resume(null));
        }
    }

    @Test
    void theStateAtAnEpochsEndIsTheNextEpochsStart() {
        try (GranaryDataSetIterator it = builder().loader(o -> o.shuffle(8)).build()) {
            drainEpoch(it);
            LoaderState end = it.state();
            assertEquals(1, end.epoch());
            assertEquals(0, end.nextBatch());
            try (GranaryDataSetIterator resumed =
                    builder().loader(o -> o.shuffle(8)).resume(end).build()) {
                assertEquals(1, resumed.epoch());
                assertEquals(boxed(Sampler.shuffled(N, 8).epoch(1)), drainEpoch(resumed));
            }
        }
    }

    @Test
    void thePreProcessorIsAppliedToEveryBatch() {
        ImagePreProcessingScaler scaler = new ImagePreProcessingScaler(0, 1);
        try (GranaryDataSetIterator it = builder().preProcessor(scaler).build()) {
            assertSame(scaler, it.getPreProcessor());
            int rows = 0;
            while (it.hasNext()) {
                DataSet batch = it.next();
                for (int r = 0; r < batch.numExamples(); r++) {
                    float[] expected = shards.features(rows + r);
                    for (int i = 0; i < expected.length; i++) {
                        expected[i] /= 255f;
                    }
                    assertArrayEquals(expected, batch.getFeatures().getRow(r).toFloatVector(), 1e-6f);
                    assertArrayEquals(
                            shards.labels(rows + r), batch.getLabels().getRow(r).toFloatVector());
                }
                rows += batch.numExamples();
            }
            assertEquals(N, rows);
            DataSetPreProcessor doubling = data -> data.getFeatures().muli(2);
            it.setPreProcessor(doubling);
            assertSame(doubling, it.getPreProcessor());
            it.reset();
            assertEquals(2 * (shards.raw[0][1] & 0xFF), it.next().getFeatures().getFloat(0, 1));
            it.setPreProcessor(null);
            assertNull(it.getPreProcessor());
            assertEquals(shards.raw[BATCH][1] & 0xFF, it.next().getFeatures().getFloat(0, 1));
        }
    }

    @Test
    void batchesStayValidAfterLaterBatchesReuseTheStagingBuffers() {
        try (GranaryDataSetIterator it = builder().build()) {
            List<DataSet> kept = new ArrayList<>();
            while (it.hasNext()) {
                kept.add(it.next());
            }
            int row = 0;
            for (DataSet batch : kept) {
                for (int id : check(batch)) {
                    assertEquals(row++, id);
                }
            }
        }
    }

    @Test
    void dl4jFitRunsEpochsOnTheTrainersThreadWithoutAsyncWrapping() {
        List<Thread> threads = new ArrayList<>();
        MultiLayerNetwork net = new MultiLayerNetwork(new NeuralNetConfiguration.Builder()
                .seed(1)
                .updater(new Sgd(0.01))
                .list()
                .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                        .nIn(Shards.COLUMNS)
                        .nOut(Shards.CLASSES)
                        .activation(Activation.SOFTMAX)
                        .build())
                .build());
        net.init();
        try (GranaryDataSetIterator it = builder().loader(o -> o.shuffle(2)).build()) {
            it.setPreProcessor(data -> threads.add(Thread.currentThread()));
            assertFalse(it.asyncSupported());
            net.fit(it, 2); // DL4J resets the exhausted iterator before the second epoch
            assertEquals(1, it.epoch());
            assertFalse(it.hasNext());
            LoaderStats stats = it.stats();
            assertEquals(2 * it.batchesPerEpoch(), stats.batches());
            assertEquals(2L * N, stats.samples());
        }
        assertEquals(14, threads.size());
        assertTrue(
                threads.stream().allMatch(t -> t == Thread.currentThread()),
                "every batch was taken on the trainer's thread, not an AsyncDataSetIterator's: " + threads);
    }

    @Test
    void describesItselfToDl4j() {
        try (GranaryDataSetIterator it = builder()
                .featureShape(1, 2, 3)
                .labelNames(List.of("a", "b", "c", "d"))
                .build()) {
            assertFalse(it.asyncSupported());
            assertTrue(it.resetSupported());
            assertEquals(Shards.COLUMNS, it.inputColumns());
            assertEquals(Shards.CLASSES, it.totalOutcomes());
            assertEquals(BATCH, it.batch());
            assertEquals(List.of("a", "b", "c", "d"), it.getLabels());
            DataSet batch = it.next(BATCH);
            assertArrayEquals(new long[] {BATCH, 1, 2, 3}, batch.getFeatures().shape());
            assertArrayEquals(
                    shards.features(0),
                    batch.getFeatures().slice(0).reshape(Shards.COLUMNS).toFloatVector());
            UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, () -> it.next(5));
            assertTrue(
                    e.getMessage().startsWith("next(5): batches are cut by the Granary loader at batch size 8"),
                    e.getMessage());
            assertTrue(it.toString().contains("epoch 0"), it.toString());
        }
        try (GranaryDataSetIterator it = builder().build()) {
            assertNull(it.getLabels());
        }
    }

    @Test
    void dropLastDropsTheShortBatch() {
        try (GranaryDataSetIterator it = builder().loader(o -> o.dropLast(true)).build()) {
            assertEquals(6, it.batchesPerEpoch());
            assertEquals(48, drainEpoch(it).size());
        }
    }

    @Test
    void aSampleTheEncoderRejectsFailsItsBatchByKeyAndTheEpochGoesOn() {
        SampleEncoder failing = (sample, features, labels) -> {
            if (sample.index() == 13) {
                throw new IllegalStateException("bad pixels");
            }
            Shards.ENCODER.encode(sample, features, labels);
        };
        try (GranaryDataSetIterator it = GranaryDataSetIterator.builder(dataset, failing)
                .features(Shards.COLUMNS)
                .labels(Shards.CLASSES)
                .loader(o -> o.batchSize(BATCH).workers(2))
                .build()) {
            check(it.next());
            SampleException e = assertThrows(SampleException.class, it::next);
            assertEquals("s/0013", e.key());
            assertTrue(e.getMessage().contains("bad pixels"), e.getMessage());
            assertEquals(2, it.state().nextBatch(), "the failed batch counts as handed out");
            assertEquals(List.of(16, 17, 18, 19, 20, 21, 22, 23), check(it.next()));
        }
    }

    @Test
    void closingStopsTheLoaderAndReleasesEveryLease() {
        GranaryDataSetIterator it =
                builder().loader(o -> o.shuffle(1).prefetch(4)).build();
        it.next(); // the loader is reading ahead now
        it.close();
        assertEquals(0, cache.stats().openLeases(), "close() waits for reads in flight and releases them");
        IllegalStateException e = assertThrows(IllegalStateException.class, it::hasNext);
        assertTrue(e.getMessage().contains("is closed"), e.getMessage());
        assertThrows(IllegalStateException.class, it::next);
        assertThrows(IllegalStateException.class, it::reset);
        assertThrows(
                IllegalStateException.class,
                () -> it.resume(LoaderState.decode(it.state().encode())));
        assertEquals(1, it.state().nextBatch(), "the state stays readable for a last checkpoint");
        it.close(); // idempotent
        // LeakCheck then closes the cache and requires the memory tier's slabs to be freed.
    }

    @Test
    void anIteratorIsNotSerializable() throws IOException {
        try (GranaryDataSetIterator it = builder().build();
                ObjectOutputStream out = new ObjectOutputStream(new ByteArrayOutputStream())) {
            NotSerializableException e = assertThrows(NotSerializableException.class, () -> out.writeObject(it));
            assertTrue(e.getMessage().contains("LoaderState"), e.getMessage());
        }
    }

    @Test
    void everyLoaderOptionIsReachableThroughTheLoadersOwnBuilder() {
        try (GranaryDataSetIterator it = builder()
                .loader(o -> o.readAhead(3)
                        .maxBytesInFlight(1 << 20)
                        .skipFailedSamples(true)
                        .driveCache(false)
                        .shuffle(6))
                .build()) {
            assertEquals(N, drainEpoch(it).size(), "the iterator runs with the loader's own options");
        }
        assertEquals(0, cache.stats().openLeases(), "closing the iterator released every lease it read ahead");
        GranaryDataSetIterator.Builder b = builder();
        assertMessage("read-ahead: 0 (expected: 1..65536 samples)", () -> b.loader(o -> o.readAhead(0)));
        assertMessage("loader options: null", () -> b.loader(null));
        b.loader(o -> o.batchSize(3)); // the staging buffers are sized by the loader's batch size
        try (GranaryDataSetIterator it = b.build()) {
            assertEquals(3, it.batch());
            assertEquals(3, check(it.next()).size());
        }
    }

    @Test
    void badArgumentsAreRefusedNamingTheValueAndTheExpectation() {
        assertMessage("dataset: null", () -> GranaryDataSetIterator.builder(null, Shards.ENCODER));
        assertMessage("encoder: null", () -> GranaryDataSetIterator.builder(dataset, null));
        GranaryDataSetIterator.Builder b = GranaryDataSetIterator.builder(dataset, Shards.ENCODER);
        assertMessage("features: 0 (expected: >= 1 columns)", () -> b.features(0));
        assertMessage("feature shape: [] (expected: one or more dimensions", () -> b.featureShape());
        assertMessage("feature shape: [1, 0, 3] (expected: every dimension >= 1)", () -> b.featureShape(1, 0, 3));
        assertMessage(
                "feature shape: [65536, 65536] (expected: at most 2147483647 values per example)",
                () -> b.featureShape(65536, 65536));
        assertMessage("labels: -1 (expected: >= 1 columns)", () -> b.labels(-1));
        assertMessage("label names: null", () -> b.labelNames(null));
        assertMessage("batch size: 0 (expected: >= 1)", () -> b.loader(o -> o.batchSize(0)));
        assertMessage("world size: 0 (expected: >= 1)", () -> b.loader(o -> o.shard(0, 0)));
        assertMessage("rank: 3 (expected: 0 <= rank < world size 3)", () -> b.loader(o -> o.shard(3, 3)));
        assertMessage("workers: 0 (expected: 1..1024 threads)", () -> b.loader(o -> o.workers(0)));
        assertMessage("prefetch: 2000 (expected: 1..1024 batches)", () -> b.loader(o -> o.prefetch(2000)));
        assertMessage("resume state: null", () -> b.resume(null));

        IllegalStateException noFeatures = assertThrows(IllegalStateException.class, b::build);
        assertTrue(noFeatures.getMessage().startsWith("features: not set"), noFeatures.getMessage());
        b.features(Shards.COLUMNS);
        IllegalStateException noLabels = assertThrows(IllegalStateException.class, b::build);
        assertTrue(noLabels.getMessage().startsWith("labels: not set"), noLabels.getMessage());
        b.labels(Shards.CLASSES);
        b.labelNames(List.of("only one"));
        assertMessage("label names: 1 names (expected: 4, one per label column)", b::build);
        b.labelNames(List.of("a", "b", "c", "d"));
        b.loader(o -> o.batchSize(64).dropLast(true));
        assertMessage(
                "batch size: 64 with dropLast for 50 samples over 1 rank(s) (expected: at least one full"
                        + " batch per epoch)",
                b::build);
        b.loader(o -> o.batchSize(BATCH).dropLast(false)).resume(new LoaderState(0, 0, N, 16, false, false, 0, 0, 1));
        assertMessage("state: ", b::build);
        assertEquals(0, cache.stats().openLeases(), "refused builds leave nothing open");
    }

    private static void assertMessage(String start, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(
                e.getMessage().startsWith(start),
                "message: " + e.getMessage() + " (expected to start with: " + start + ")");
    }
}
