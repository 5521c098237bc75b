// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.dl4j.examples.FashionMnistTraining;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.WebDataset;
import dev.granary.loader.testkit.FashionMnist;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.spi.Origin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.nd4j.evaluation.classification.Evaluation;
import org.nd4j.linalg.dataset.api.preprocessor.ImagePreProcessingScaler;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Real training, end to end: Fashion-MNIST from Debian's {@code dataset-fashion-mnist}, packed into WebDataset shards,
 * served by a real S3 server (S3Proxy), read through S3Origin and a memory tier that holds all of it, and fed to a DL4J
 * MLP (784-256-10, Adam) by {@link GranaryDataSetIterator} for two epochs; evaluated on the 10 000 test images through
 * a second iterator. Passes at test accuracy ≥ 0.80 with epoch 2 served wholly from the cache. Runs with
 * {@code -Ptraining}; without the package it fails saying how to install it.
 */
@Tag("training")
@Timeout(900)
class FashionMnistTrainingTest {

    private static final int PER_SHARD = 5_000;
    private static final int BATCH = 64;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path packed;

    @Test
    void anMlpTrainedThroughGranaryFromS3ReachesEightyPercentWithEpochTwoFromTheCache() throws Exception {
        FashionMnist.requireInstalled();
        long phase = System.nanoTime();
        FashionMnist.Split trainSplit = FashionMnist.read("train");
        FashionMnist.Split testSplit = FashionMnist.read("t10k");
        assertEquals(60_000, trainSplit.count());
        assertEquals(10_000, testSplit.count());
        List<String> trainShards = FashionMnist.pack(trainSplit, trainSplit.count(), "train", PER_SHARD, packed);
        List<String> testShards = FashionMnist.pack(testSplit, testSplit.count(), "t10k", PER_SHARD, packed);
        assertEquals(12, trainShards.size());
        assertEquals(2, testShards.size());
        phase = report("read and pack 70 000 images", phase);

        S3ProxyServer server = S3ProxyServer.shared();
        String bucket = "fashion-mnist-dl4j-" + Long.toHexString(System.nanoTime());
        try (S3Client client = server.client()) {
            client.createBucket(b -> b.bucket(bucket));
            for (String shard :
                    Stream.concat(trainShards.stream(), testShards.stream()).toList()) {
                client.putObject(
                        b -> b.bucket(bucket).key("fashion-mnist/" + shard),
                        RequestBody.fromFile(packed.resolve(shard)));
            }
        }
        phase = report("upload " + (trainShards.size() + testShards.size()) + " shards to S3Proxy", phase);
        Origin origin = FashionMnistTraining.s3Compatible(
                server.endpoint(), bucket, "fashion-mnist", S3ProxyServer.credentials());
        MemoryTier memory = MemoryTier.builder().capacity(384L << 20).build(); // the shards are ~180 MB
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        TieredCache cache = leaks.watch(TieredCache.builder(origin).tier(memory).build());
        assertEquals(trainShards, FashionMnistTraining.shards(cache, "train-"), "listed from S3");
        assertEquals(testShards, FashionMnistTraining.shards(cache, "t10k-"));

        MultiLayerNetwork net = new MultiLayerNetwork(FashionMnistTraining.mlp());
        net.init();
        List<LoaderStats> epochs = new ArrayList<>();
        List<Long> wallNanos = new ArrayList<>();
        WebDataset trainSet = WebDataset.of(cache, trainShards);
        long indexingReads = cache.stats().origin().reads();
        try (GranaryDataSetIterator train = GranaryDataSetIterator.builder(trainSet, FashionMnistTraining.ENCODER)
                .features(FashionMnist.PIXELS)
                .labels(10)
                .loader(options ->
                        options.batchSize(BATCH).shuffle(42L).workers(2).prefetch(4))
                .preProcessor(new ImagePreProcessingScaler(0, 1))
                .build()) {
            LoaderStats previous = null;
            for (int e = 0; e < 2; e++) {
                long t0 = System.nanoTime();
                net.fit(train); // epoch 0, then (after DL4J's reset of the exhausted iterator) epoch 1
                long wall = System.nanoTime() - t0;
                assertEquals(e, train.epoch());
                LoaderStats now = train.stats();
                LoaderStats epoch = previous == null ? now : now.minus(previous);
                previous = now;
                epochs.add(epoch);
                wallNanos.add(wall);
                System.out.printf(
                        "dl4j epoch %d: %.1f s, %.0f samples/s, hit ratio %.3f, origin reads %d,"
                                + " trainer waited for data %.2f s%n",
                        e + 1,
                        wall / 1e9,
                        epoch.samples() / (wall / 1e9),
                        epoch.hitRatio(),
                        epoch.originReads(),
                        epoch.dataWaitNanos() / 1e9);
            }
        }
        assertEquals(60_000, epochs.get(0).samples());
        assertEquals(60_000, epochs.get(1).samples());
        // The shards have no index files: indexing reads them in 8 MiB parts, which stay in the cache and which
        // epoch 1 streams, so S3 is read once — while indexing or in epoch 1.
        assertTrue(indexingReads + epochs.get(0).originReads() > 0, "read from S3: " + epochs.get(0));
        assertEquals(0, epochs.get(1).originReads(), "epoch 2 asked nothing of S3");
        assertEquals(1.0, epochs.get(1).hitRatio(0), "epoch 2: every read a memory-tier hit");

        phase = report("index the shards and train 2 epochs", phase);
        Evaluation evaluation;
        try (GranaryDataSetIterator test = GranaryDataSetIterator.builder(
                        WebDataset.of(cache, testShards), FashionMnistTraining.ENCODER)
                .features(FashionMnist.PIXELS)
                .labels(10)
                .loader(options -> options.batchSize(500).workers(2))
                .preProcessor(new ImagePreProcessingScaler(0, 1))
                .build()) {
            evaluation = net.evaluate(test);
            assertEquals(20, test.stats().batches());
        }
        report("evaluate", phase);
        System.out.printf(
                "dl4j test accuracy %.4f over %d images; epoch 2 / epoch 1 wall time %.2f%n",
                evaluation.accuracy(), evaluation.getNumRowCounter(), (double) wallNanos.get(1) / wallNanos.get(0));
        assertEquals(10_000, evaluation.getNumRowCounter());
        assertTrue(evaluation.accuracy() >= 0.80, "test accuracy " + evaluation.accuracy());
    }

    private static long report(String what, long since) {
        long now = System.nanoTime();
        System.out.printf("%s: %.1f s%n", what, (now - since) / 1e9);
        return now;
    }
}
