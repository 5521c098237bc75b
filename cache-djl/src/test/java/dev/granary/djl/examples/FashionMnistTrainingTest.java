// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Model;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.evaluator.Accuracy;
import ai.djl.training.listener.TrainingListenerAdapter;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import dev.granary.TieredCache;
import dev.granary.djl.FashionMnistOnS3;
import dev.granary.djl.GranaryDataset;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.testkit.FashionMnist;
import dev.granary.testkit.LeakCheck;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Real training, end to end: the 60 000 Fashion-MNIST training images as WebDataset shards on a real S3 server
 * (S3Proxy), read through Granary into DJL's PyTorch engine by the guide's {@link FashionMnistMlp#dataset}, an MLP
 * trained for 2 epochs with {@code EasyTrain.fit}, then tested on the 10 000 t10k images with
 * {@code trainer.iterateDataset}. Epoch 2 must come from the cache. Needs Debian's {@code dataset-fashion-mnist}; runs
 * with {@code ./mvnw -q -o -pl cache-djl verify -Ptraining}.
 */
@Tag("training")
@Timeout(600)
class FashionMnistTrainingTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    /** One epoch as the trainer saw it: wall time and the loader's counters. */
    record EpochRecord(long nanos, LoaderStats stats) {}

    @Test
    void anMlpLearnsFashionMnistFromS3AndItsSecondEpochComesFromTheCache() throws Exception {
        FashionMnist.requireInstalled();
        FashionMnistOnS3 data = FashionMnistOnS3.get();
        List<EpochRecord> epochs = new ArrayList<>();
        double accuracy;
        long indexingReads;
        try (TieredCache cache = data.cache(leaks)) {
            long t0 = System.nanoTime();
            try (GranaryDataset train = FashionMnistMlp.dataset(cache, "train-", 0, 1, true);
                    GranaryDataset test = FashionMnistMlp.dataset(cache, "t10k-", 0, 1, false)) {
                indexingReads = cache.stats().origin().reads();
                System.out.printf(
                        "listing and indexing the %d shards: %.1f s, %d requests to S3%n",
                        data.trainShards().size() + data.testShards().size(),
                        (System.nanoTime() - t0) / 1e9,
                        cache.stats().origin().reads());
                accuracy = train(train, test, epochs);
            }
        }
        for (int e = 0; e < epochs.size(); e++) {
            LoaderStats s = epochs.get(e).stats();
            double seconds = epochs.get(e).nanos() / 1e9;
            System.out.printf(
                    "epoch %d: %.2f s wall, %.0f samples/s, hit ratio %.4f, origin reads %d (%.1f MB),"
                            + " trainer waited %.2f s for data%n",
                    e + 1,
                    seconds,
                    s.samples() / seconds,
                    s.hitRatio(0),
                    s.originReads(),
                    s.originBytes() / 1e6,
                    s.dataWaitNanos() / 1e9);
        }
        assertEquals(2, epochs.size());
        assertEquals(60_000, epochs.get(0).stats().samples());
        // The shards have no index files, so indexing reads them in 8 MiB parts, which stay in the cache: epoch 1
        // streams those parts, and S3 is read while indexing or in epoch 1 — once.
        assertTrue(indexingReads + epochs.get(0).stats().originReads() > 0, "the shards come from S3");
        LoaderStats second = epochs.get(1).stats();
        assertEquals(60_000, second.samples());
        assertEquals(0, second.originReads(), "epoch 2 asks nothing of S3");
        assertEquals(0, second.misses(), "epoch 2 misses nothing");
        assertEquals(1.0, second.hitRatio(0), "epoch 2 is served by the memory tier");
        assertTrue(accuracy >= 0.80, "test accuracy " + accuracy + " (expected: >= 0.80)");
    }

    /** Trains the MLP for 2 epochs, recording each, and returns its accuracy on {@code test}. */
    private static double train(GranaryDataset train, GranaryDataset test, List<EpochRecord> epochs) throws Exception {
        try (Model model = Model.newInstance("fashion-mlp")) {
            model.setBlock(new SequentialBlock()
                    .add(Linear.builder().setUnits(256).build())
                    .add(Activation::relu)
                    .add(Linear.builder().setUnits(10).build()));
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.adam().build())
                    .addEvaluator(new Accuracy())
                    .addTrainingListeners(new TrainingListenerAdapter() {
                        private long start;
                        private LoaderStats before;

                        @Override
                        public void onTrainingBegin(Trainer trainer) {
                            start = System.nanoTime();
                            before = train.stats();
                        }

                        @Override
                        public void onEpoch(Trainer trainer) { // no validation set: right after the epoch's last step
                            long now = System.nanoTime();
                            LoaderStats stats = train.stats();
                            epochs.add(new EpochRecord(now - start, stats.minus(before)));
                            start = now;
                            before = stats;
                        }
                    });
            try (Trainer trainer = model.newTrainer(config)) {
                trainer.initialize(new Shape(1, 784));
                EasyTrain.fit(trainer, 2, train, null);
                long t0 = System.nanoTime();
                double accuracy = FashionMnistMlp.accuracy(trainer, test);
                System.out.printf("test accuracy on t10k: %.4f (%.1f s)%n", accuracy, (System.nanoTime() - t0) / 1e9);
                return accuracy;
            }
        }
    }
}
