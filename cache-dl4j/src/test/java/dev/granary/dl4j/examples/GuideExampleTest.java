// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.TieredCache;
import dev.granary.loader.LoaderState;
import dev.granary.loader.ShardWriter;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the guide's example ({@link FashionMnistTraining}) over a tiny Fashion-MNIST look-alike in real shard files: a
 * class is a bright band of pixels, so the MLP learns it in two epochs; then resumes from a checkpoint taken in the
 * middle of an epoch and trains exactly the batches that were left.
 */
@Timeout(120)
class GuideExampleTest {

    private static final int TRAIN = 640;
    private static final int BATCHES = TRAIN / 64;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path data;

    @TempDir
    Path checkpoint;

    private static void pack(Path dir, String split, int count, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        try (ShardWriter writer = ShardWriter.builder(dir)
                .pattern(split + "-%05d.tar")
                .maxCount(256)
                .build()) {
            for (int i = 0; i < count; i++) {
                int cls = random.nextInt(10);
                byte[] raw = new byte[784];
                for (int p = 0; p < raw.length; p++) {
                    raw[p] = (byte) (p / 78 == cls ? 200 + random.nextInt(56) : random.nextInt(60));
                }
                Map<String, byte[]> fields = new LinkedHashMap<>();
                fields.put("raw", raw);
                fields.put("cls", Integer.toString(cls).getBytes(StandardCharsets.US_ASCII));
                writer.write(String.format("%s/%05d", split, i), fields);
            }
        }
    }

    @Test
    void theGuidesExampleTrainsChecksPointsAndResumesMidEpoch() throws IOException {
        pack(data, "train", TRAIN, 1);
        pack(data, "t10k", 200, 2);
        Files.writeString(data.resolve("README.txt"), "not a shard");
        MemoryTier memory =
                MemoryTier.builder().capacity(16L << 20).slabSize(1 << 20).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        TieredCache cache = leaks.watch(TieredCache.builder(FashionMnistTraining.origin(data.toUri()))
                .tier(memory)
                .leakDetection(LeakDetection.PARANOID)
                .build());
        assertEquals(
                PosixOrigin.class, FashionMnistTraining.origin(data.toUri()).getClass());
        assertEquals(3, FashionMnistTraining.shards(cache, "train-").size());

        double accuracy = FashionMnistTraining.train(cache, 0, 1, 2, checkpoint);
        assertTrue(accuracy >= 0.9, "accuracy " + accuracy);
        Path stateFile = checkpoint.resolve("loader-state.txt");
        LoaderState state = LoaderState.decode(Files.readString(stateFile));
        assertEquals(2, state.epoch());
        assertEquals(0, state.nextBatch());
        assertEquals(2 * BATCHES, iterations());

        // As if the job had died 3 batches into epoch 2, with the model of the end of epoch 1.
        Files.writeString(
                stateFile,
                new LoaderState(
                                2,
                                3,
                                state.datasetSize(),
                                state.batchSize(),
                                state.dropLast(),
                                state.shuffled(),
                                state.seed(),
                                state.rank(),
                                state.worldSize())
                        .encode());
        FashionMnistTraining.train(cache, 0, 1, 3, checkpoint);
        assertEquals(2 * BATCHES + (BATCHES - 3), iterations(), "exactly the batches left in epoch 2");
        assertEquals(3, LoaderState.decode(Files.readString(stateFile)).epoch());
    }

    private int iterations() throws IOException {
        return MultiLayerNetwork.load(checkpoint.resolve("model.zip").toFile(), false)
                .getIterationCount();
    }
}
