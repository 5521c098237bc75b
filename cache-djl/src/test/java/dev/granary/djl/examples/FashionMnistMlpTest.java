// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.loader.LoaderState;
import dev.granary.loader.testkit.FashionMnist;
import dev.granary.origin.posix.PosixOrigin;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the guide's example (docs/guide-djl.md) as written, over a tiny Fashion-MNIST-shaped dataset in a directory
 * whose classes are easy to tell apart: it trains, checkpoints, resumes from the checkpoint, and classifies the test
 * split. The real Fashion-MNIST run over S3 is {@code FashionMnistTrainingTest} ({@code -Ptraining}).
 */
@Timeout(180)
class FashionMnistMlpTest {

    @TempDir
    Path root;

    /** {@code count} images whose class {@code c} lights the band of rows {@code 2c .. 2c+2}, over faint noise. */
    private static FashionMnist.Split synthetic(int count, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        byte[] pixels = new byte[count * FashionMnist.PIXELS];
        byte[] labels = new byte[count];
        for (int i = 0; i < count; i++) {
            int label = random.nextInt(10);
            labels[i] = (byte) label;
            for (int p = 0; p < FashionMnist.PIXELS; p++) {
                int row = p / 28;
                boolean lit = row >= 2 * label + 4 && row < 2 * label + 6;
                pixels[i * FashionMnist.PIXELS + p] = (byte) (lit ? 200 + random.nextInt(56) : random.nextInt(40));
            }
        }
        return new FashionMnist.Split(count, pixels, labels);
    }

    @Test
    void theExampleTrainsCheckpointsResumesAndClassifies() throws Exception {
        Path data = Files.createDirectories(root.resolve("fashion-mnist"));
        FashionMnist.pack(synthetic(640, 1), 640, "train", 256, data);
        FashionMnist.pack(synthetic(200, 2), 200, "t10k", 256, data);
        Path checkpoints = root.resolve("checkpoints");

        double first = FashionMnistMlp.train(FashionMnistMlp.origin(data.toString()), 0, 1, 1, checkpoints);
        assertEquals(new LoaderState(1, 0, 640, 64, false, true, 42, 0, 1), state(checkpoints));
        assertEquals(List.of("fashion-mlp-0001.params"), params(checkpoints));

        // A restart with the checkpoint: only epoch 1 is left to train.
        double second = FashionMnistMlp.train(FashionMnistMlp.origin(data.toString()), 0, 1, 2, checkpoints);
        assertEquals(new LoaderState(2, 0, 640, 64, false, true, 42, 0, 1), state(checkpoints));
        assertEquals(
                List.of("fashion-mlp-0001.params", "fashion-mlp-0002.params"),
                params(checkpoints),
                "one more epoch saved, not two: the run resumed");
        System.out.printf("accuracy after 1 epoch %.3f, after 2 (resumed) %.3f%n", first, second);
        assertTrue(second >= 0.9, "accuracy after 2 epochs: " + second + " (after 1: " + first + ")");
    }

    @Test
    void originsAreChosenByTheLocation() {
        assertInstanceOf(PosixOrigin.class, FashionMnistMlp.origin(root.toString()));
    }

    private static LoaderState state(Path checkpoints) throws IOException {
        return LoaderState.decode(Files.readString(checkpoints.resolve("loader-state.txt")));
    }

    private static List<String> params(Path checkpoints) throws IOException {
        try (Stream<Path> files = Files.list(checkpoints)) {
            return files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(".params"))
                    .sorted()
                    .toList();
        }
    }
}
