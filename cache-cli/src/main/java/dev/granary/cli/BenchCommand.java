// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Origin;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.CRC32C;
import org.knowm.xchart.AnnotationTextPanel;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code granary bench}: the seeds' two loader exercises as sweeps, each written as CSV and a PNG plot (XChart).
 * <ol>
 *   <li><b>Throughput versus decode workers</b> ("benchmark your DataLoader with num_workers 1, 2, 4, ... 32; plot
 *       throughput"): a warm memory tier, so the curve is the decode pool's; samples per second for each worker count.
 *   <li><b>Data wait versus origin latency</b> ("add artificial latency; at what latency does GPU utilisation drop
 * below
 *       50 %?"): a cold cache per point over an origin answering each read that much later, a trainer that spends
 *       {@code --step-ms} per batch; utilisation = 1 - (time the trainer waited for data) / (epoch time).</li>
 * </ol>
 * The dataset is synthetic (random bytes in files under a temporary directory, deleted after), so the figures measure
 * the loader and cache on this machine, not a storage system; the decode is CRC32C passes over each sample (CPU work of
 * a chosen size). Timings on a shared machine are noisy: compare points of one run.
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Run the seeds' two loader sweeps: throughput vs decode workers, and data wait (GPU"
                    + " utilisation) vs injected origin latency. Writes CSV and PNG plots.",
            "",
            "  granary bench --out bench-results"
        },
        footer = {"", ExitCodes.HELP})
final class BenchCommand implements Callable<Integer> {

    @Option(
            names = "--out",
            paramLabel = "<dir>",
            defaultValue = "granary-bench",
            description = "Where the CSV and PNG files go. Default: ${DEFAULT-VALUE}.")
    Path out;

    @Option(
            names = "--samples",
            paramLabel = "<n>",
            defaultValue = "2000",
            description = "Samples in the synthetic dataset. Default: ${DEFAULT-VALUE}.")
    int samples;

    @Option(
            names = "--sample-size",
            paramLabel = "<size>",
            converter = Sizes.class,
            defaultValue = "32K",
            description = "Bytes per sample. Default: ${DEFAULT-VALUE}.")
    long sampleSize;

    @Option(
            names = "--decode-passes",
            paramLabel = "<n>",
            defaultValue = "8",
            description = "CRC32C passes over each sample: the decode's CPU cost. Default: ${DEFAULT-VALUE}.")
    int decodePasses;

    @Option(
            names = "--workers",
            paramLabel = "<list>",
            split = ",",
            defaultValue = "1,2,4,8,16,32",
            description = "Decode worker counts for sweep 1. Default: ${DEFAULT-VALUE}.")
    List<Integer> workers;

    @Option(
            names = "--latencies",
            paramLabel = "<ms-list>",
            split = ",",
            defaultValue = "0,1,2,5,10,20,50,100",
            description = "Injected origin latencies in ms for sweep 2. Default: ${DEFAULT-VALUE}.")
    List<Double> latencies;

    @Option(
            names = "--latency-workers",
            paramLabel = "<n>",
            defaultValue = "4",
            description = "Decode workers in sweep 2. Default: ${DEFAULT-VALUE}.")
    int latencyWorkers;

    @Option(
            names = "--concurrency",
            paramLabel = "<n>",
            defaultValue = "16",
            description = "Origin reads in flight in sweep 2. Default: ${DEFAULT-VALUE}.")
    int concurrency;

    @Option(
            names = "--step-ms",
            paramLabel = "<ms>",
            defaultValue = "20",
            description = "Simulated GPU time per batch in sweep 2. Default: ${DEFAULT-VALUE}.")
    double stepMs;

    @Option(
            names = "--batch-size",
            paramLabel = "<n>",
            defaultValue = "32",
            description = "Samples per batch. Default: ${DEFAULT-VALUE}.")
    int batchSize;

    @Option(
            names = "--repeat",
            paramLabel = "<n>",
            defaultValue = "3",
            description = "Measure each point this many times, in rotated order; the CSV and plots give the median"
                    + " and the min-max. Default: ${DEFAULT-VALUE}.")
    int repeat;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if (samples < 1
                || sampleSize < 1
                || sampleSize > (64 << 20)
                || batchSize < 1
                || decodePasses < 0
                || stepMs < 0
                || latencyWorkers < 1
                || concurrency < 1
                || repeat < 1) {
            throw new IllegalArgumentException("bench options: samples=" + samples + ", sample-size=" + sampleSize
                    + ", batch-size=" + batchSize + ", decode-passes=" + decodePasses + ", step-ms=" + stepMs
                    + ", repeat=" + repeat + " (expected: samples, batch size, workers, concurrency, repeat >= 1;"
                    + " sample size 1 byte to 64M; passes and step >= 0)");
        }
        for (int w : workers) {
            if (w < 1) {
                throw new IllegalArgumentException("workers: " + w + " (expected: >= 1)");
            }
        }
        for (double l : latencies) {
            if (l < 0) {
                throw new IllegalArgumentException("latency: " + l + " ms (expected: >= 0)");
            }
        }
        System.setProperty("java.awt.headless", "true");
        PrintWriter log = spec.commandLine().getOut();
        Files.createDirectories(out);
        Path data = Files.createTempDirectory("granary-bench-");
        try {
            writeDataset(data);
            log.printf(
                    Locale.ROOT,
                    "dataset: %d samples of %s (%s) in %s; machine: %d cores%n",
                    samples,
                    Sizes.format(sampleSize),
                    Sizes.format(samples * sampleSize),
                    data,
                    Runtime.getRuntime().availableProcessors());
            log.flush();
            workersSweep(data, log);
            latencySweep(data, log);
        } finally {
            deleteTree(data);
        }
        return ExitCodes.OK;
    }

    private void writeDataset(Path data) throws IOException {
        SplittableRandom random = new SplittableRandom(42);
        byte[] bytes = new byte[(int) sampleSize];
        Path dir = Files.createDirectories(data.resolve("train"));
        for (int i = 0; i < samples; i++) {
            random.nextBytes(bytes);
            Files.write(dir.resolve(String.format(Locale.ROOT, "%07d.bin", i)), bytes);
        }
    }

    /** The decode: CPU work proportional to the sample's size; returns something so it cannot be optimised away. */
    private long decode(ByteBuffer bytes) {
        CRC32C crc = new CRC32C();
        for (int p = 0; p < decodePasses; p++) {
            crc.update(bytes.duplicate());
        }
        return crc.getValue();
    }

    private void workersSweep(Path data, PrintWriter log) throws IOException {
        double[][] rates = new double[workers.size()][repeat];
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder()
                        .capacity(samples * (sampleSize + 4096) + (64L << 20))
                        .build())
                .build()) {
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            run(dataset, 1, 0); // warm the memory tier: the sweep measures decoding, not the disk
            for (int r = 0; r < repeat; r++) {
                for (int k = 0; k < workers.size(); k++) {
                    int i = (k + r) % workers.size(); // rotated: no point always runs first, or after the same one
                    long start = System.nanoTime();
                    run(dataset, workers.get(i), 0);
                    rates[i][r] = samples / ((System.nanoTime() - start) / 1e9);
                }
            }
        }
        List<double[]> rows = new ArrayList<>();
        for (int i = 0; i < workers.size(); i++) {
            Spread s = Spread.of(rates[i]);
            rows.add(new double[] {
                workers.get(i), s.median(), s.median() * sampleSize / (1 << 20), s.min(), s.max(), repeat
            });
            log.printf(
                    Locale.ROOT,
                    "workers %3d: %10.0f samples/s (%.0f-%.0f over %d runs)  %8.1f MiB/s%n",
                    workers.get(i),
                    s.median(),
                    s.min(),
                    s.max(),
                    repeat,
                    s.median() * sampleSize / (1 << 20));
        }
        log.flush();
        writeCsv(
                out.resolve("throughput-vs-workers.csv"),
                "workers,samples_per_second,mib_per_second," + "samples_per_second_min,samples_per_second_max,repeats",
                rows);
        XYChart chart = new XYChartBuilder()
                .width(800)
                .height(500)
                .title("Throughput vs decode workers")
                .xAxisTitle("decode workers")
                .yAxisTitle("samples / s")
                .build();
        chart.addSeries("median of " + repeat, column(rows, 0), column(rows, 1));
        chart.addSeries("min", column(rows, 0), column(rows, 3));
        chart.addSeries("max", column(rows, 0), column(rows, 4));
        details(chart, "workers sweep: a warm memory tier, shuffled epochs of " + batchSize + "-sample batches");
        BitmapEncoder.saveBitmap(
                chart, out.resolve("throughput-vs-workers.png").toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    /** The median and the range of repeated measurements of one point. */
    record Spread(double median, double min, double max) {
        static Spread of(double[] values) {
            double[] v = values.clone();
            Arrays.sort(v);
            double median = v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
            return new Spread(median, v[0], v[v.length - 1]);
        }
    }

    /** Writes what the run was on the plot: a PNG passed around without its CSV still says what it measured. */
    private void details(XYChart chart, String what) {
        AnnotationTextPanel panel = new AnnotationTextPanel(
                String.join(
                        "\n",
                        List.of(
                                what,
                                String.format(
                                        Locale.ROOT,
                                        "%d samples of %s, %d CRC32C decode passes, %d runs per point (median,"
                                                + " min, max)",
                                        samples,
                                        Sizes.format(sampleSize),
                                        decodePasses,
                                        repeat),
                                String.format(
                                        Locale.ROOT,
                                        "%s, %d CPUs, Java %s, load %.2f at the end",
                                        LocalDate.now(ZoneOffset.UTC),
                                        Runtime.getRuntime().availableProcessors(),
                                        Runtime.version().feature(),
                                        ManagementFactory.getOperatingSystemMXBean()
                                                .getSystemLoadAverage()))),
                10,
                10,
                true);
        chart.addAnnotation(panel);
    }

    private void latencySweep(Path data, PrintWriter log) throws IOException {
        Double below = null;
        long stepNanos = (long) (stepMs * 1e6);
        double[][] epochSeconds = new double[latencies.size()][repeat];
        double[][] waitSeconds = new double[latencies.size()][repeat];
        double[][] utilisations = new double[latencies.size()][repeat];
        for (int r = 0; r < repeat; r++) {
            for (int k = 0; k < latencies.size(); k++) {
                int i = (k + r) % latencies.size();
                Origin origin = new DelayedOrigin(PosixOrigin.of(data, concurrency), (long) (latencies.get(i) * 1e6));
                try (TieredCache cache = TieredCache.builder(origin)
                        .tier(MemoryTier.builder()
                                .capacity(samples * (sampleSize + 4096) + (64L << 20))
                                .build())
                        .build()) {
                    Dataset dataset = Dataset.ofObjects(cache, "train/");
                    long start = System.nanoTime();
                    LoaderStats stats = run(dataset, latencyWorkers, stepNanos);
                    epochSeconds[i][r] = (System.nanoTime() - start) / 1e9;
                    waitSeconds[i][r] = stats.dataWaitNanos() / 1e9;
                    utilisations[i][r] = Math.max(0, 1 - waitSeconds[i][r] / epochSeconds[i][r]);
                }
            }
        }
        List<double[]> rows = new ArrayList<>();
        for (int i = 0; i < latencies.size(); i++) {
            double ms = latencies.get(i);
            Spread u = Spread.of(utilisations[i]);
            double seconds = Spread.of(epochSeconds[i]).median();
            double wait = Spread.of(waitSeconds[i]).median();
            rows.add(new double[] {ms, seconds, wait, u.median(), u.min(), u.max(), repeat});
            if (below == null && u.median() < 0.5) {
                below = ms;
            }
            log.printf(
                    Locale.ROOT,
                    "latency %6.1f ms: epoch %7.2f s, data wait %7.2f s, GPU utilisation %5.1f %%"
                            + " (%.1f-%.1f over %d runs)%n",
                    ms,
                    seconds,
                    wait,
                    100 * u.median(),
                    100 * u.min(),
                    100 * u.max(),
                    repeat);
        }
        log.flush();
        writeCsv(
                out.resolve("datawait-vs-latency.csv"),
                "latency_ms,epoch_seconds,data_wait_seconds,gpu_utilisation,"
                        + "gpu_utilisation_min,gpu_utilisation_max,repeats",
                rows);
        XYChart chart = new XYChartBuilder()
                .width(800)
                .height(500)
                .title("GPU utilisation vs origin latency (" + latencyWorkers + " workers, " + concurrency
                        + " reads in flight, " + stepMs + " ms/batch)")
                .xAxisTitle("injected origin latency (ms)")
                .yAxisTitle("utilisation (%)")
                .build();
        double[] percent = column(rows, 3);
        for (int i = 0; i < percent.length; i++) {
            percent[i] *= 100;
        }
        chart.addSeries("GPU utilisation, median of " + repeat, column(rows, 0), percent);
        double[] low = column(rows, 4);
        double[] high = column(rows, 5);
        for (int i = 0; i < low.length; i++) {
            low[i] *= 100;
            high[i] *= 100;
        }
        chart.addSeries("min", column(rows, 0), low);
        chart.addSeries("max", column(rows, 0), high);
        details(
                chart,
                "latency sweep: a cold memory tier per point, " + stepMs + " ms of simulated GPU time per" + " batch");
        BitmapEncoder.saveBitmap(
                chart, out.resolve("datawait-vs-latency.png").toString(), BitmapEncoder.BitmapFormat.PNG);
        log.println(
                below == null
                        ? "GPU utilisation stayed at or above 50 % up to " + latencies.getLast() + " ms"
                        : "GPU utilisation drops below 50 % at " + below + " ms of origin latency");
        log.println("wrote " + out.resolve("throughput-vs-workers.csv") + ", .png, "
                + out.resolve("datawait-vs-latency.csv") + ", .png");
        log.flush();
    }

    /** One epoch; the trainer spends {@code stepNanos} per batch. */
    private LoaderStats run(Dataset dataset, int workerCount, long stepNanos) {
        try (DataLoader<Long> loader = DataLoader.builder(dataset, s -> decode(s.bytes()))
                .batchSize(batchSize)
                .shuffle(7L)
                .workers(workerCount)
                .prefetch(4)
                .build()) {
            long sink = 0;
            try (Epoch<Long> epoch = loader.epoch(0)) {
                for (Batch<Long> batch : epoch) {
                    for (long v : batch.items()) {
                        sink += v;
                    }
                    if (stepNanos > 0) {
                        long end = System.nanoTime() + stepNanos;
                        while (System.nanoTime() < end) {
                            LockSupport.parkNanos(end - System.nanoTime());
                        }
                    }
                }
            }
            if (sink == 42) {
                spec.commandLine().getErr().print(""); // keeps the decode's result alive
            }
            return loader.stats();
        }
    }

    private static double[] column(List<double[]> rows, int c) {
        double[] v = new double[rows.size()];
        for (int i = 0; i < v.length; i++) {
            v[i] = rows.get(i)[c];
        }
        return v;
    }

    private static void writeCsv(Path file, String header, List<double[]> rows) throws IOException {
        StringBuilder b = new StringBuilder(header).append('\n');
        for (double[] row : rows) {
            for (int i = 0; i < row.length; i++) {
                b.append(i == 0 ? "" : ",").append(String.format(Locale.ROOT, "%.6g", row[i]));
            }
            b.append('\n');
        }
        Files.writeString(file, b);
    }

    private static void deleteTree(Path dir) throws IOException {
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
