// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.BaseNDManager;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.Batch;
import dev.granary.TieredCache;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.Sample;
import dev.granary.loader.WebDataset;
import dev.granary.testkit.LeakCheck;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The DJL adapter's overhead: samples/s of one epoch of Fashion-MNIST's 60 000 training samples taken as DJL batches
 * ({@code getData}: NDArrays made in the PyTorch engine, batches closed) against the same loader's epochs consumed
 * directly (Granary batches, collated into the same staging buffers, nothing more) — same data, same loader, warm
 * cache, the two paths alternated ABBA so that drift on a shared machine cancels. No training: this measures the data
 * path alone, where the adapter's cost would show.
 *
 * <pre>
 * ./mvnw -q -pl cache-djl verify -Dgranary.testGroups=benchmark -Dgranary.excludedTestGroups=none -Dtest=AdapterOverheadTest
 * </pre>
 * Tagged {@code benchmark}: neither the default build nor the training profile runs it (it is a measurement, ~90 s).
 * The numbers go to the test's output ({@code target/surefire-reports/dev.granary.djl.AdapterOverheadTest-output.txt}).
 */
@Tag("benchmark")
@Timeout(600)
class AdapterOverheadTest {

    private static final int ROUNDS = 10;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    record Pixels(byte[] pixels, int label) {}

    static Pixels decode(Sample sample) {
        ByteBuffer raw = sample.fields().get("raw");
        byte[] pixels = new byte[raw.remaining()];
        raw.get(pixels);
        return new Pixels(pixels, sample.fields().get("cls").get(0) - '0');
    }

    @Test
    void theDjlPathKeepsUpWithTheLoaderItself() throws Exception {
        FashionMnistOnS3 data = FashionMnistOnS3.get();
        try (TieredCache cache = data.cache(leaks);
                GranaryDataset dataset = GranaryDataset.builder(
                                WebDataset.of(cache, data.trainShards()), AdapterOverheadTest::decode)
                        .loader(options ->
                                options.batchSize(64).shuffle(42L).workers(4).prefetch(8))
                        .data(new Shape(784), DataType.FLOAT32, (image, slot) -> {
                            byte[] pixels = image.pixels();
                            for (int i = 0; i < pixels.length; i++) {
                                slot.setAtIndex(ValueLayout.JAVA_FLOAT, i, (pixels[i] & 0xff) / 255f);
                            }
                        })
                        .label(
                                new Shape(),
                                DataType.FLOAT32,
                                (image, slot) -> slot.set(ValueLayout.JAVA_FLOAT, 0, image.label()))
                        .build();
                NDManager manager = NDManager.newBaseManager()) {
            djlEpoch(dataset, manager); // warms the cache (from S3) and the JIT
            directEpoch(dataset, 10_000);
            LoaderStats warm = dataset.stats();
            double[] djl = new double[ROUNDS];
            double[] direct = new double[ROUNDS];
            for (int r = 0; r < ROUNDS; r++) {
                boolean djlFirst = r % 2 == 0; // ABBA
                if (djlFirst) {
                    djl[r] = djlEpoch(dataset, manager);
                    direct[r] = directEpoch(dataset, 10_001 + r);
                } else {
                    direct[r] = directEpoch(dataset, 10_001 + r);
                    djl[r] = djlEpoch(dataset, manager);
                }
                System.out.printf(
                        "round %d: DJL getData %.0f samples/s, loader directly %.0f samples/s, ratio %.3f%n",
                        r + 1, djl[r], direct[r], djl[r] / direct[r]);
            }
            LoaderStats measured = dataset.stats().minus(warm);
            double[] ratios = new double[ROUNDS];
            for (int r = 0; r < ROUNDS; r++) {
                ratios[r] = djl[r] / direct[r]; // paired within a round: drift between rounds cancels
            }
            System.out.printf(
                    "median: DJL %.0f samples/s, loader %.0f samples/s; median of the rounds' ratios %.3f"
                            + " (goal >= 0.9); measured epochs: hit ratio %.4f, origin reads %d%n",
                    median(djl), median(direct), median(ratios), measured.hitRatio(0), measured.originReads());
            assertEquals(0, measured.originReads(), "the measured epochs ran on a warm cache");
            assertEquals(2L * ROUNDS * 60_000, measured.samples());
            assertTrue(((BaseNDManager) manager).getManagedArrays().isEmpty());
        }
    }

    /** One epoch through DJL's view: arrays made, batch closed. */
    private static double djlEpoch(GranaryDataset dataset, NDManager manager) {
        long samples = 0;
        long t0 = System.nanoTime();
        for (Batch batch : dataset.getData(manager)) {
            samples += batch.getSize();
            batch.close();
        }
        double rate = samples / ((System.nanoTime() - t0) / 1e9);
        assertEquals(60_000, samples);
        return rate;
    }

    /** One epoch of the same loader, Granary batches taken as they come. */
    private static double directEpoch(GranaryDataset dataset, long epoch) {
        long samples = 0;
        long t0 = System.nanoTime();
        try (Epoch<?> batches = dataset.loader().epoch(epoch)) {
            for (var batch : batches) {
                samples += batch.size();
            }
        }
        double rate = samples / ((System.nanoTime() - t0) / 1e9);
        assertEquals(60_000, samples);
        return rate;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
