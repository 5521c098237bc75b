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
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.CRC32C;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code granary bench}: the seeds' two loader exercises as sweeps, each written as CSV and a PNG plot (XChart).
 * <ol>
 *   <li><b>Throughput versus decode workers</b> ("benchmark your DataLoader with num_workers 1, 2, 4, ... 32; plot
 *       throughput"): a warm memory tier, so the curve is the decode pool's; samples per second for each worker count.
 *   <li><b>Data wait versus origin latency</b> ("add artificial latency; at what latency does GPU utilisation drop below
 *       50 %?"): a cold cache per point over an origin answering each read that much later, a trainer that spends
 *       {@code --step-ms} per batch; utilisation = 1 - (time the trainer waited for data) / (epoch time).</li>
 * </ol>
 * The dataset is synthetic (random bytes in files under a temporary directory, deleted after), so the figures measure
 * the loader and cache on this machine, not a storage system; the decode is CRC32C passes over each sample (CPU work of
 * a chosen size). Timings on a shared machine are noisy: compare points of one run.
 */
@Command(name = "bench", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Run the seeds' two loader sweeps: throughput vs decode workers, and data wait (GPU"
                + " utilisation) vs injected origin latency. Writes CSV and PNG plots.",
            "",
            "  granary bench --out bench-results"},
        footer = {"", ExitCodes.HELP})
final class BenchCommand implements Callable<Integer> {

    @Option(names = "--out", paramLabel = "<dir>", defaultValue = "granary-bench",
            description = "Where the CSV and PNG files go. Default: ${DEFAULT-VALUE}.")
    Path out;

    @Option(names = "--samples", paramLabel = "<n>", defaultValue = "2000",
            description = "Samples in the synthetic dataset. Default: ${DEFAULT-VALUE}.")
    int samples;

    @Option(names = "--sample-size", paramLabel = "<size>", converter = Sizes.class, defaultValue = "32K",
            description = "Bytes per sample. Default: ${DEFAULT-VALUE}.")
    long sampleSize;

    @Option(names = "--decode-passes", paramLabel = "<n>", defaultValue = "8",
            description = "CRC32C passes over each sample: the decode's CPU cost. Default: ${DEFAULT-VALUE}.")
    int decodePasses;

    @Option(names = "--workers", paramLabel = "<list>", split = ",", defaultValue = "1,2,4,8,16,32",
            description = "Decode worker counts for sweep 1. Default: ${DEFAULT-VALUE}.")
    List<Integer> workers;

    @Option(names = "--latencies", paramLabel = "<ms-list>", split = ",", defaultValue = "0,1,2,5,10,20,50,100",
            description = "Injected origin latencies in ms for sweep 2. Default: ${DEFAULT-VALUE}.")
    List<Double> latencies;

    @Option(names = "--latency-workers", paramLabel = "<n>", defaultValue = "4",
            description = "Decode workers in sweep 2. Default: ${DEFAULT-VALUE}.")
    int latencyWorkers;

    @Option(names = "--concurrency", paramLabel = "<n>", defaultValue = "16",
            description = "Origin reads in flight in sweep 2. Default: ${DEFAULT-VALUE}.")
    int concurrency;

    @Option(names = "--step-ms", paramLabel = "<ms>", defaultValue = "20",
            description = "Simulated GPU time per batch in sweep 2. Default: ${DEFAULT-VALUE}.")
    double stepMs;

    @Option(names = "--batch-size", paramLabel = "<n>", defaultValue = "32",
            description = "Samples per batch. Default: ${DEFAULT-VALUE}.")
    int batchSize;

    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if (samples < 1 || sampleSize < 1 || sampleSize > (64 << 20) || batchSize < 1 || decodePasses < 0
                || stepMs < 0 || latencyWorkers < 1 || concurrency < 1) {
            throw new IllegalArgumentException("bench options: samples=" + samples + ", sample-size=" + sampleSize
                    + ", batch-size=" + batchSize + ", decode-passes=" + decodePasses + ", step-ms=" + stepMs
                    + " (expected: samples, batch size, workers, concurrency >= 1; sample size 1 byte to 64M;"
                    + " passes and step >= 0)");
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
            log.printf(Locale.ROOT, "dataset: %d samples of %s (%s) in %s; machine: %d cores%n", samples,
                    Sizes.format(sampleSize), Sizes.format(samples * sampleSize), data,
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
        List<double[]> rows = new ArrayList<>();
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder().capacity(samples * (sampleSize + 4096) + (64L << 20)).build()).build()) {
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            run(dataset, 1, 0); // warm the memory tier: the sweep measures decoding, not the disk
            for (int w : workers) {
                long start = System.nanoTime();
                run(dataset, w, 0);
                double seconds = (System.nanoTime() - start) / 1e9;
                rows.add(new double[] {w, samples / seconds, samples * sampleSize / seconds / (1 << 20)});
                log.printf(Locale.ROOT, "workers %3d: %10.0f samples/s  %8.1f MiB/s%n", w, samples / seconds,
                        samples * sampleSize / seconds / (1 << 20));
                log.flush();
            }
        }
        writeCsv(out.resolve("throughput-vs-workers.csv"), "workers,samples_per_second,mib_per_second", rows);
        XYChart chart = new XYChartBuilder().width(800).height(500).title("Throughput vs decode workers")
                .xAxisTitle("decode workers").yAxisTitle("samples / s").build();
        chart.addSeries("samples/s", column(rows, 0), column(rows, 1));
        BitmapEncoder.saveBitmap(chart, out.resolve("throughput-vs-workers.png").toString(),
                BitmapEncoder.BitmapFormat.PNG);
    }

    private void latencySweep(Path data, PrintWriter log) throws IOException {
        List<double[]> rows = new ArrayList<>();
        Double below = null;
        long stepNanos = (long) (stepMs * 1e6);
        for (double ms : latencies) {
            Origin origin = new DelayedOrigin(PosixOrigin.of(data, concurrency), (long) (ms * 1e6));
            try (TieredCache cache = TieredCache.builder(origin)
                    .tier(MemoryTier.builder().capacity(samples * (sampleSize + 4096) + (64L << 20)).build())
                    .build()) {
                Dataset dataset = Dataset.ofObjects(cache, "train/");
                long start = System.nanoTime();
                LoaderStats stats = run(dataset, latencyWorkers, stepNanos);
                double seconds = (System.nanoTime() - start) / 1e9;
                double wait = stats.dataWaitNanos() / 1e9;
                double utilisation = Math.max(0, 1 - wait / seconds);
                rows.add(new double[] {ms, seconds, wait, utilisation});
                if (below == null && utilisation < 0.5) {
                    below = ms;
                }
                log.printf(Locale.ROOT, "latency %6.1f ms: epoch %7.2f s, data wait %7.2f s, GPU utilisation %5.1f %%%n",
                        ms, seconds, wait, 100 * utilisation);
                log.flush();
            }
        }
        writeCsv(out.resolve("datawait-vs-latency.csv"), "latency_ms,epoch_seconds,data_wait_seconds,gpu_utilisation",
                rows);
        XYChart chart = new XYChartBuilder().width(800).height(500)
                .title("GPU utilisation vs origin latency (" + latencyWorkers + " workers, " + concurrency
                        + " reads in flight, " + stepMs + " ms/batch)")
                .xAxisTitle("injected origin latency (ms)").yAxisTitle("utilisation (%)").build();
        double[] percent = column(rows, 3);
        for (int i = 0; i < percent.length; i++) {
            percent[i] *= 100;
        }
        chart.addSeries("GPU utilisation", column(rows, 0), percent);
        BitmapEncoder.saveBitmap(chart, out.resolve("datawait-vs-latency.png").toString(),
                BitmapEncoder.BitmapFormat.PNG);
        log.println(below == null ? "GPU utilisation stayed at or above 50 % up to " + latencies.getLast() + " ms"
                : "GPU utilisation drops below 50 % at " + below + " ms of origin latency");
        log.println("wrote " + out.resolve("throughput-vs-workers.csv") + ", .png, "
                + out.resolve("datawait-vs-latency.csv") + ", .png");
        log.flush();
    }

    /** One epoch; the trainer spends {@code stepNanos} per batch. */
    private LoaderStats run(Dataset dataset, int workerCount, long stepNanos) {
        try (DataLoader<Long> loader = DataLoader.builder(dataset, s -> decode(s.bytes())).batchSize(batchSize)
                .shuffle(7L).workers(workerCount).prefetch(4).build()) {
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
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
