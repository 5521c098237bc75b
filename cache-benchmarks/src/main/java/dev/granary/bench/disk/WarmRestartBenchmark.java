// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import dev.granary.TieredCache;
import dev.granary.bench.Options;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * A warm restart of a dataset that fits in memory (issue 30, item 5; docs/decisions/0017): a job over memory and disk
 * tiers ran before and closed, leaving the dataset in the disk tier's directory; a new job opens the same directory
 * with an empty memory tier. How fast are its epochs, next to a job that holds the dataset in memory?
 *
 * <p>Three subjects, in one run, their order rotated each round, each a real {@code DataLoader} (shuffled epochs, a
 * decoder that computes every sample's CRC32C, which is checked):
 * <ul>
 *   <li><b>memory</b> — the ceiling: a cache of one memory tier already holding the dataset;</li>
 *   <li><b>restart</b> — a new cache, an empty memory tier over the disk directory: the job after a restart;</li>
 *   <li><b>disk</b> — a new cache of the disk tier alone: what the restarted job read before decision 0017, when
 *       disk hits under a loader were never copied up and the memory tier stayed empty.</li>
 * </ul>
 * Printed per round: each subject's epoch 1 and epoch 2 samples/s and which tier served them; then, per subject,
 * epoch 2 ÷ the memory ceiling's epoch in the same round, median (min–max).
 *
 * <p>With {@code --paged-out=0} the disk tier's files stay in the page cache (they were just written and are read
 * every round): the best case for the disk subject, as if the kernel's page cache were a free memory tier. With
 * {@code --paged-out=1} the disk tier's pages are paged out ({@code MADV_PAGEOUT} + {@code POSIX_FADV_DONTNEED},
 * {@link PageCache#pageOut}) before each epoch that reads it: what a job sees when the page cache cannot keep the
 * files (a dataset larger than the memory left to the kernel, a pod's memory limit, other jobs on the node).
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@restart -Drestart.args="(options)"
 * </pre>
 * Options {@code --name=value}: objects (2048), size (65536: bytes per object), rounds (5), batch (32), workers (2),
 * paged-out (0).
 */
public final class WarmRestartBenchmark {

    private static final Map<String, String> DEFAULTS = new TreeMap<>(
            Map.of("objects", "2048", "size", "65536", "rounds", "5", "batch", "32", "workers", "2", "paged-out", "0"));

    private WarmRestartBenchmark() {}

    /** One epoch's figures. */
    private record Run(double samplesPerSecond, long memoryHits, long diskHits, long originReads) {}

    /**
     * Runs the benchmark.
     *
     * @param args options, see the class comment
     * @throws Exception if a file cannot be written or a read fails
     */
    public static void main(String[] args) throws Exception {
        Map<String, Long> o;
        try {
            o = Options.parse(args, DEFAULTS);
        } catch (IllegalArgumentException e) {
            System.err.println("warm restart benchmark: " + e.getMessage());
            System.exit(2);
            return;
        }
        int objects = o.get("objects").intValue();
        int size = o.get("size").intValue();
        int rounds = o.get("rounds").intValue();
        long dataset = (long) objects * size;
        Path dir = Files.createTempDirectory(
                Files.createDirectories(Path.of(System.getProperty("granary.bench.dir", "target"))), "restart-");
        Path data = Files.createDirectories(dir.resolve("data/train"));
        long expected = 0;
        SplittableRandom random = new SplittableRandom(17);
        byte[] bytes = new byte[size];
        for (int i = 0; i < objects; i++) {
            random.nextBytes(bytes);
            Files.write(data.resolve(String.format("%06d.bin", i)), bytes);
            CRC32C crc = new CRC32C();
            crc.update(bytes);
            expected += crc.getValue();
        }
        Path disk = dir.resolve("disk");
        long memoryCapacity = Math.max(64L << 20, dataset * 3 / 2);
        long diskCapacity = Math.max(128L << 20, dataset * 2);
        boolean pagedOut = o.get("paged-out") != 0;
        System.out.printf(
                Locale.ROOT,
                "warm restart: %d objects of %d bytes (%.1f MiB), memory tier %d MiB, disk tier"
                        + " %d MiB, batch %d, workers %d, %d rounds, disk pages %s, Java %s, %d CPUs%n",
                objects,
                size,
                dataset / 1048576.0,
                memoryCapacity >> 20,
                diskCapacity >> 20,
                o.get("batch"),
                o.get("workers"),
                rounds,
                pagedOut ? "paged out before each epoch that reads them" : "left in the page cache",
                Runtime.version(),
                Runtime.getRuntime().availableProcessors());

        // The first job: memory over disk; at its close the memory tier's pages are carried into the disk tier.
        try (TieredCache first = cache(dir.resolve("data"), memoryCapacity, disk, diskCapacity)) {
            epochs(first, o, 1, expected, 0, null);
        }
        // The ceiling: a memory tier that holds the dataset, warmed by one epoch, kept across rounds.
        TieredCache memory = cache(dir.resolve("data"), memoryCapacity, null, 0);
        epochs(memory, o, 1, expected, 0, null);
        Path pageOut = pagedOut ? disk : null;

        List<String> subjects = List.of("memory", "restart", "disk");
        Map<String, List<Double>> ratios = new TreeMap<>();
        for (int round = 0; round < rounds; round++) {
            List<String> order = new ArrayList<>(subjects);
            Collections.rotate(order, round);
            Map<String, List<Run>> runs = new TreeMap<>();
            for (String subject : order) {
                List<Run> r = switch (subject) {
                    case "memory" -> epochs(memory, o, 1, expected, 100 + round, null);
                    case "restart" -> {
                        try (TieredCache c = cache(dir.resolve("data"), memoryCapacity, disk, diskCapacity)) {
                            yield epochs(c, o, 2, expected, 200 + round, pageOut);
                        }
                    }
                    default -> {
                        try (TieredCache c = cache(dir.resolve("data"), 0, disk, diskCapacity)) {
                            yield epochs(c, o, 2, expected, 300 + round, pageOut);
                        }
                    }
                };
                runs.put(subject, r);
            }
            double ceiling = runs.get("memory").getFirst().samplesPerSecond();
            StringBuilder line = new StringBuilder("round " + (round + 1) + ":");
            for (String subject : subjects) {
                List<Run> r = runs.get(subject);
                for (int e = 0; e < r.size(); e++) {
                    Run x = r.get(e);
                    line.append(String.format(
                            Locale.ROOT,
                            "  %s e%d %.0f/s (mem %d, disk %d, origin %d)",
                            subject,
                            e + 1,
                            x.samplesPerSecond(),
                            x.memoryHits(),
                            x.diskHits(),
                            x.originReads()));
                }
                if (!subject.equals("memory")) {
                    ratios.computeIfAbsent(subject + " epoch 1", k -> new ArrayList<>())
                            .add(r.get(0).samplesPerSecond() / ceiling);
                    ratios.computeIfAbsent(subject + " epoch 2", k -> new ArrayList<>())
                            .add(r.get(1).samplesPerSecond() / ceiling);
                }
            }
            System.out.println(line);
        }
        memory.close();
        System.out.println("samples/s ÷ the memory ceiling in the same round, median (min-max):");
        for (Map.Entry<String, List<Double>> e : ratios.entrySet()) {
            List<Double> v = new ArrayList<>(e.getValue());
            Collections.sort(v);
            System.out.printf(
                    Locale.ROOT,
                    "  %-16s %.2f (%.2f-%.2f)%n",
                    e.getKey(),
                    v.get(v.size() / 2),
                    v.getFirst(),
                    v.getLast());
        }
        System.out.printf(
                Locale.ROOT,
                "load average %.2f%n",
                ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
        deleteTree(dir);
    }

    /** A cache over the data: a memory tier of {@code memory} bytes if positive, the disk tier if {@code disk}. */
    private static TieredCache cache(Path data, long memory, Path disk, long diskCapacity) {
        TieredCache.Builder b = TieredCache.builder(PosixOrigin.of(data)).carryOnClose(memory > 0 && disk != null);
        if (memory > 0) {
            b.tier(MemoryTier.builder().capacity(memory).build());
        }
        if (disk != null) {
            b.tier(DiskTier.builder().directory(disk).capacity(diskCapacity).build());
        }
        return b.build();
    }

    /**
     * Runs {@code count} shuffled epochs, checking the sum of CRCs; returns each epoch's figures. If {@code pageOut} is
     * a disk tier's directory, its pages are paged out before each epoch (not timed).
     */
    private static List<Run> epochs(
            TieredCache cache, Map<String, Long> o, int count, long expected, long seed, Path pageOut)
            throws IOException {
        Dataset dataset = Dataset.ofObjects(cache, "train/");
        List<Run> runs = new ArrayList<>();
        try (DataLoader<Long> loader = DataLoader.builder(dataset, sample -> {
                    CRC32C crc = new CRC32C();
                    crc.update(sample.bytes());
                    return crc.getValue();
                })
                .batchSize(o.get("batch").intValue())
                .workers(o.get("workers").intValue())
                .shuffle(seed)
                .build()) {
            for (int e = 0; e < count; e++) {
                if (pageOut != null) {
                    PageCache.pageOut(pageOut, ".dat");
                }
                var before = cache.stats();
                long start = System.nanoTime();
                long sum = 0;
                int samples = 0;
                try (Epoch<Long> epoch = loader.epoch(e)) {
                    for (Batch<Long> batch : epoch) {
                        for (long crc : batch.items()) {
                            sum += crc;
                        }
                        samples += batch.size();
                    }
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                if (sum != expected) {
                    throw new IllegalStateException("CRC sum " + sum + " (expected: " + expected + ")");
                }
                var d = cache.stats().minus(before);
                long memoryHits = d.tiers().stream()
                        .filter(t -> t.name().equals("memory"))
                        .mapToLong(t -> t.hits())
                        .sum();
                long diskHits = d.tiers().stream()
                        .filter(t -> t.name().equals("disk"))
                        .mapToLong(t -> t.hits())
                        .sum();
                runs.add(new Run(
                        samples / seconds, memoryHits, diskHits, d.origin().reads()));
            }
        }
        return runs;
    }

    private static void deleteTree(Path dir) throws IOException {
        try (var files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
