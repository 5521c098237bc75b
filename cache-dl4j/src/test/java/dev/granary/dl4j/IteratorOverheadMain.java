// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j;

import dev.granary.TieredCache;
import dev.granary.dl4j.examples.FashionMnistTraining;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.WebDataset;
import dev.granary.loader.testkit.FashionMnist;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.nd4j.linalg.dataset.DataSet;

/**
 * The DL4J adapter's overhead: samples/s of {@link GranaryDataSetIterator} against the same {@link DataLoader}
 * consumed directly — same Fashion-MNIST shards (60 000 samples), same warm memory tier, same encoder, batch size,
 * seed, workers and prefetch — alternating the two, one epoch each, several rounds, on one machine in one JVM. The
 * direct loop decodes each sample into the same two float arrays and touches every batch; the iterator adds the
 * off-heap collation and the copy into ND4J arrays. A round is {@value #EPOCHS_PER_ROUND} epochs of each. Prints each
 * round and the medians of two ratios: samples/s (wall clock; goal ≥ 0.9), and the process's CPU time per sample
 * (loader over iterator), which other processes on the machine disturb less.
 *
 * <p>{@code ./mvnw -q -o -pl cache-dl4j test-compile exec:exec@overhead [-Doverhead.rounds=N]} (needs Debian's
 * dataset-fashion-mnist).
 */
public final class IteratorOverheadMain {

    private static final int BATCH = 64;
    private static final int WORKERS = 2;
    private static final int PREFETCH = 4;
    private static final long SEED = 42L;
    private static final int EPOCHS_PER_ROUND = 3;

    private IteratorOverheadMain() {}

    /** Two float arrays per sample, as the iterator's decoder makes them. */
    private record Rows(float[] features, float[] labels) {}

    /** A measurement: samples per wall-clock second and per CPU second of the whole process. */
    private record Rate(double perSecond, double perCpuSecond) {}

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        FashionMnist.requireInstalled();
        Path dir = Files.createTempDirectory("granary-dl4j-overhead-");
        try {
            FashionMnist.Split train = FashionMnist.read("train");
            List<String> shards = FashionMnist.pack(train, train.count(), "train", 5_000, dir);
            try (TieredCache cache = TieredCache.builder(PosixOrigin.of(dir))
                    .tier(MemoryTier.builder().capacity(384L << 20).build())
                    .build()) {
                WebDataset dataset = WebDataset.of(cache, shards);
                try (DataLoader<Rows> loader = DataLoader.builder(dataset, sample -> {
                                    Rows rows = new Rows(new float[FashionMnist.PIXELS], new float[10]);
                                    FashionMnistTraining.ENCODER.encode(sample, rows.features, rows.labels);
                                    return rows;
                                })
                                .batchSize(BATCH)
                                .shuffle(SEED)
                                .workers(WORKERS)
                                .prefetch(PREFETCH)
                                .build();
                        GranaryDataSetIterator iterator = GranaryDataSetIterator.builder(
                                        dataset, FashionMnistTraining.ENCODER)
                                .features(FashionMnist.PIXELS)
                                .labels(10)
                                .loader(o -> o.batchSize(BATCH)
                                        .shuffle(SEED)
                                        .workers(WORKERS)
                                        .prefetch(PREFETCH))
                                .build()) {
                    // Warm-up: epoch 0 through both fills the cache and compiles both paths.
                    try (Epoch<Rows> warm = loader.epoch(0)) {
                        warm.forEach(batch -> {});
                    }
                    LoaderStats before = iterator.stats();
                    adapter(iterator); // epochs 0 to 2, from the cache the loader's epoch 0 filled
                    LoaderStats warm = iterator.stats().minus(before);
                    System.out.printf(
                            "warm-up: the iterator's hit ratio %.3f, origin reads %d%n",
                            warm.hitRatio(), warm.originReads());
                    List<Double> ratios = new ArrayList<>();
                    List<Double> cpuRatios = new ArrayList<>();
                    long epoch = EPOCHS_PER_ROUND; // the iterator is at epoch 2 (exhausted)
                    for (int r = 1; r <= rounds; r++) {
                        Rate a;
                        Rate b;
                        if (r % 2 == 1) { // alternate which goes first
                            a = direct(loader, epoch);
                            b = adapter(iterator);
                        } else {
                            b = adapter(iterator);
                            a = direct(loader, epoch);
                        }
                        epoch += EPOCHS_PER_ROUND;
                        ratios.add(b.perSecond() / a.perSecond());
                        cpuRatios.add(b.perCpuSecond() / a.perCpuSecond());
                        System.out.printf(
                                "round %d: DataLoader %.0f samples/s (%.0f per CPU-s), GranaryDataSetIterator"
                                        + " %.0f samples/s (%.0f per CPU-s), ratio %.3f (CPU %.3f)%n",
                                r,
                                a.perSecond(),
                                a.perCpuSecond(),
                                b.perSecond(),
                                b.perCpuSecond(),
                                ratios.getLast(),
                                cpuRatios.getLast());
                    }
                    System.out.printf(
                            "median over %d rounds of %d epochs: samples/s ratio iterator / loader %.3f"
                                    + " (min %.3f, max %.3f); CPU-time ratio %.3f%n",
                            rounds,
                            EPOCHS_PER_ROUND,
                            median(ratios),
                            ratios.stream().min(Double::compare).orElseThrow(),
                            ratios.stream().max(Double::compare).orElseThrow(),
                            median(cpuRatios));
                }
            }
        } finally {
            try (var paths = Files.walk(dir)) {
                for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    /** The CPU time of the whole process (every thread, GC and JIT included). */
    private static long cpuNanos() {
        return ProcessHandle.current().info().totalCpuDuration().orElseThrow().toNanos();
    }

    private static double median(List<Double> values) {
        List<Double> sorted = values.stream().sorted().toList();
        return sorted.get(sorted.size() / 2);
    }

    /** {@link #EPOCHS_PER_ROUND} epochs of the loader itself, from {@code first}. */
    private static Rate direct(DataLoader<Rows> loader, long first) {
        long t0 = System.nanoTime();
        long cpu0 = cpuNanos();
        long samples = 0;
        float sink = 0;
        for (long e = first; e < first + EPOCHS_PER_ROUND; e++) {
            try (Epoch<Rows> batches = loader.epoch(e)) {
                for (Batch<Rows> batch : batches) {
                    samples += batch.size();
                    sink += batch.items().getFirst().features()[0];
                }
            }
        }
        return rate(samples, t0, cpu0, sink);
    }

    /** {@link #EPOCHS_PER_ROUND} epochs of the iterator (the next ones: reset() before each). */
    private static Rate adapter(GranaryDataSetIterator iterator) {
        long t0 = System.nanoTime();
        long cpu0 = cpuNanos();
        long samples = 0;
        float sink = 0;
        for (int e = 0; e < EPOCHS_PER_ROUND; e++) {
            iterator.reset();
            while (iterator.hasNext()) {
                DataSet batch = iterator.next();
                samples += batch.numExamples();
                sink += batch.getFeatures().getFloat(0, 0);
            }
        }
        return rate(samples, t0, cpu0, sink);
    }

    private static Rate rate(long samples, long t0, long cpu0, float sink) {
        double seconds = (System.nanoTime() - t0) / 1e9;
        double cpuSeconds = (cpuNanos() - cpu0) / 1e9;
        if (samples != 60_000L * EPOCHS_PER_ROUND || Float.isNaN(sink)) {
            throw new IllegalStateException(samples + " samples (expected: " + EPOCHS_PER_ROUND + " epochs of 60000)");
        }
        return new Rate(samples / seconds, samples / cpuSeconds);
    }
}
