// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.BaseNDManager;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.Batch;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.listener.TrainingListenerAdapter;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import dev.granary.TieredCache;
import dev.granary.loader.Dataset;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** GranaryDataset driven by DJL's own training loop: EasyTrain.fit, trainer.iterateDataset, Batch.split. */
@Timeout(120)
class TrainerTest {

    private static final int N = 50;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    @BeforeEach
    void setUp() {
        DjlFixture.writeSamples(root, N);
    }

    private static GranaryDataset dataset(Dataset samples, boolean shuffle) {
        GranaryDataset.Builder<DjlFixture.Item> builder = GranaryDataset.builder(samples, DjlFixture::decode)
                .loader(options -> options.batchSize(8))
                .data(new Shape(2), DataType.FLOAT32, (item, slot) -> {
                    slot.setAtIndex(ValueLayout.JAVA_FLOAT, 0, item.index() % 2);
                    slot.setAtIndex(ValueLayout.JAVA_FLOAT, 1, 1 - item.index() % 2);
                })
                .label(
                        new Shape(),
                        DataType.FLOAT32,
                        (item, slot) -> slot.set(ValueLayout.JAVA_FLOAT, 0, item.index() % 2));
        return shuffle ? builder.loader(options -> options.shuffle(3)).build() : builder.build();
    }

    @Test
    void easyTrainFitRunsEveryEpochOfBothDatasetsAndLeavesNoArrayBehind() throws Exception {
        AtomicInteger trainingBatches = new AtomicInteger();
        AtomicInteger validationBatches = new AtomicInteger();
        List<Long> epochs = new ArrayList<>();
        try (TieredCache cache = DjlFixture.cache(leaks, root);
                GranaryDataset train = dataset(Dataset.ofObjects(cache, "train/"), true);
                GranaryDataset validate = dataset(Dataset.ofObjects(cache, "train/"), false);
                Model model = Model.newInstance("tiny")) {
            // A hidden layer: with softmax cross-entropy, a lone Linear layer's gradients sum to zero exactly, which
            // DJL's first step refuses ("Gradient values are all zeros").
            model.setBlock(new SequentialBlock()
                    .add(Linear.builder().setUnits(16).build())
                    .add(Activation::relu)
                    .add(Linear.builder().setUnits(2).build()));
            TrainingListener counter = new TrainingListenerAdapter() {
                @Override
                public void onTrainingBatch(Trainer trainer, BatchData batchData) {
                    trainingBatches.incrementAndGet();
                }

                @Override
                public void onValidationBatch(Trainer trainer, BatchData batchData) {
                    validationBatches.incrementAndGet();
                }

                @Override
                public void onEpoch(Trainer trainer) {
                    epochs.add(train.state().epoch());
                }
            };
            Engine.getInstance().setRandomSeed(1234); // the same initial weights every run
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.adam()
                            .optLearningRateTracker(Tracker.fixed(0.05f))
                            .build())
                    .addTrainingListeners(counter);
            try (Trainer trainer = model.newTrainer(config)) {
                trainer.initialize(new Shape(1, 2));
                int before = ((BaseNDManager) trainer.getManager())
                        .getManagedArrays()
                        .size();
                EasyTrain.fit(trainer, 2, train, validate);
                assertEquals(
                        before,
                        ((BaseNDManager) trainer.getManager())
                                .getManagedArrays()
                                .size(),
                        "the batches' arrays are freed with the batches");
                // The model learnt the (trivial) task from the arrays the dataset made.
                long correct = 0;
                for (Batch batch : trainer.iterateDataset(validate)) {
                    try (batch) {
                        correct += trainer.evaluate(batch.getData())
                                .singletonOrThrow()
                                .argMax(1)
                                .eq(batch.getLabels().singletonOrThrow().toType(DataType.INT64, false))
                                .countNonzero()
                                .getLong();
                    }
                }
                assertTrue(correct >= 40, correct + " of " + N + " right");
            }
            assertEquals(2 * 7, trainingBatches.get());
            assertEquals(2 * 7, validationBatches.get());
            assertEquals(List.of(1L, 2L), epochs, "one Granary epoch per DJL epoch");
            assertEquals(2L * N, train.stats().samples());
            assertEquals(3L * N, validate.stats().samples());
        }
    }

    @Test
    void aBatchSplitsAcrossDevicesAsDjlSplitsItsOwn() throws IOException {
        try (TieredCache cache = DjlFixture.cache(leaks, root);
                GranaryDataset dataset = dataset(Dataset.ofObjects(cache, "train/"), false);
                NDManager manager = NDManager.newBaseManager()) {
            Batch batch = dataset.getData(manager).iterator().next();
            try (batch) {
                Batch[] parts = batch.split(new Device[] {Device.cpu(), Device.cpu()}, false);
                assertEquals(2, parts.length);
                assertEquals(new Shape(4, 2), parts[0].getData().head().getShape());
                assertEquals(new Shape(4), parts[1].getLabels().head().getShape());
                // sequential: samples 4..7, labels index % 2
                assertEquals(
                        List.of(0f, 1f, 0f, 1f),
                        boxed(parts[1].getLabels().head().toFloatArray()));
            }
        }
    }

    private static List<Float> boxed(float[] values) {
        List<Float> list = new ArrayList<>();
        for (float v : values) {
            list.add(v);
        }
        return list;
    }
}
