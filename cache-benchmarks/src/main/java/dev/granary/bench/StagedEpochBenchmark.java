// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.granary.PrestageResult;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.Sample;
import dev.granary.loader.ShardWriter;
import dev.granary.loader.Shuffle;
import dev.granary.loader.WebDataset;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * How a pre-staged WebDataset is best kept for the loader (issue 13, docs/decisions/0008): the first epoch of a job
 * over
 * a disk tier staged two ways, in one run, over real files, a real disk tier and the real loader:
 * <ul>
 *   <li><b>pages</b> — {@code TieredCache.prestage}: every shard and index in the cache's pages (1 MiB); the job's
 *       extents (8 MiB parts when streaming, samples otherwise) are served from those pages — a view of one page, or
 *       one copy across pages;</li>
 *   <li><b>units</b> — the loader's own units, staged by running one streamed epoch into the disk tier: each part is
 *       one cached extent, served as a zero-copy view.</li>
 * </ul>
 * For each, a fresh job cache (memory over the staged disk tier, which nothing else is written to) runs a streamed
 * epoch
 * and a per-sample epoch, {@code rounds} times, rotated; every sample's CRC32C is computed by the decoder. Printed per
 * staging and epoch kind: origin data reads, wall time, process CPU time (median over rounds), and what staging cost
 * (origin reads, disk bytes, seconds).
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@staged -Dstaged.args="(options)"
 * </pre>
 * Options {@code --name=value}: shards (16), samples (160 per shard), size (102400: mean sample bytes, ±50 %), rounds
 * (5), batch (32), workers (2), page (1048576), part (8388608), only (0: all; 1: the streamed epoch over pages
 * only, for a profiler).
 */
public final class StagedEpochBenchmark {

    private static final Map<String, String> DEFAULTS = new TreeMap<>(Map.of(
            "shards",
            "16",
            "samples",
            "160",
            "size",
            "102400",
            "rounds",
            "5",
            "batch",
            "32",
            "workers",
            "2",
            "page",
            Integer.toString(1 << 20),
            "part",
            Integer.toString(8 << 20),
            "only",
            "0"));
    private static final OperatingSystemMXBean OS =
            (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private StagedEpochBenchmark() {}

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
            System.err.println("staged epoch benchmark: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path dir = Files.createTempDirectory(
                Files.createDirectories(Path.of(System.getProperty("granary.bench.dir", "."))), "staged-bench-");
        System.out.printf(
                Locale.ROOT,
                "staged epoch benchmark: JVM %s, %d CPUs, load %.2f; options %s%n",
                Runtime.version(),
                Runtime.getRuntime().availableProcessors(),
                OS.getSystemLoadAverage(),
                o);
        try {
            Path data = dir.resolve("data");
            List<String> shards = write(data, o);
            long bytes = 0;
            for (String s : shards) {
                bytes += Files.size(data.resolve(s));
            }
            System.out.printf(Locale.ROOT, "%d shards, %.1f MiB%n", shards.size(), bytes / 1048576.0);
            Map<String, Path> staged = new LinkedHashMap<>();
            staged.put("pages", stagePages(data, dir.resolve("pages"), o));
            staged.put("units", stageUnits(data, dir.resolve("units"), shards, o));
            Map<String, List<long[]>> runs = new LinkedHashMap<>();
            for (int round = 0; round < o.get("rounds"); round++) {
                for (Map.Entry<String, Path> s : staged.entrySet()) {
                    for (boolean stream : new boolean[] {true, false}) {
                        if (o.get("only") == 1 && !(stream && s.getKey().equals("pages"))) {
                            continue;
                        }
                        long[] r = epoch(data, s.getValue(), shards, stream, o);
                        runs.computeIfAbsent(
                                        s.getKey() + (stream ? " streamed" : " per-sample"), k -> new ArrayList<>())
                                .add(r);
                    }
                }
            }
            System.out.println("staging     epoch        origin-reads  wall-ms(median)  cpu-ms(median)  samples");
            for (Map.Entry<String, List<long[]>> e : runs.entrySet()) {
                List<long[]> rs = e.getValue();
                String[] name = e.getKey().split(" ");
                System.out.printf(
                        Locale.ROOT,
                        "%-11s %-12s %12d  %15d  %14d  %7d%n",
                        name[0],
                        name[1],
                        rs.getFirst()[0],
                        median(rs, 1) / 1_000_000,
                        median(rs, 2) / 1_000_000,
                        rs.getFirst()[3]);
            }
            System.out.printf(Locale.ROOT, "load at end %.2f%n", OS.getSystemLoadAverage());
        } finally {
            try (var paths = Files.walk(dir)) {
                for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    private static long median(List<long[]> runs, int column) {
        long[] v = runs.stream().mapToLong(r -> r[column]).toArray();
        Arrays.sort(v);
        return v[v.length / 2];
    }

    private static List<String> write(Path data, Map<String, Long> o) throws IOException {
        int perShard = o.get("samples").intValue();
        int mean = o.get("size").intValue();
        SplittableRandom random = new SplittableRandom(13);
        try (ShardWriter w = ShardWriter.builder(data.resolve("shards"))
                .pattern("train-%05d.tar")
                .maxCount(perShard)
                .build()) {
            for (int i = 0; i < o.get("shards") * perShard; i++) {
                byte[] jpg = new byte[mean / 2 + random.nextInt(mean)];
                random.nextBytes(jpg);
                w.write(String.format("train/%08d", i), Map.of("jpg", jpg, "cls", new byte[] {(byte) i}));
            }
            w.close();
            return w.shards().stream().map(s -> "shards/" + s).toList();
        }
    }

    private static DiskTier disk(Path dir, long capacity) {
        return DiskTier.builder()
                .directory(dir)
                .capacity(capacity)
                .segmentSize(64L << 20)
                .build();
    }

    private static long capacity(Path data) throws IOException {
        try (var files = Files.walk(data)) {
            long bytes = files.filter(Files::isRegularFile)
                    .mapToLong(f -> f.toFile().length())
                    .sum();
            return 2 * bytes + (256L << 20);
        }
    }

    private static Path stagePages(Path data, Path disk, Map<String, Long> o) throws IOException {
        long t0 = System.nanoTime();
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(disk(disk, capacity(data)))
                .pageSize(o.get("page").intValue())
                .build()) {
            PrestageResult r = cache.prestage("shards/", p -> {});
            if (!r.complete()) {
                throw new IllegalStateException("prestage: " + r);
            }
            System.out.printf(
                    Locale.ROOT,
                    "staged pages: %d origin reads, %.1f MiB on disk, %.2f s%n",
                    cache.stats().origin().reads(),
                    cache.stats().tiers().getFirst().usedBytes() / 1048576.0,
                    (System.nanoTime() - t0) / 1e9);
        }
        return disk;
    }

    private static Path stageUnits(Path data, Path disk, List<String> shards, Map<String, Long> o) throws IOException {
        long t0 = System.nanoTime();
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(disk(disk, capacity(data)))
                .pageSize(o.get("page").intValue())
                .build()) {
            WebDataset dataset = WebDataset.of(cache, shards);
            try (DataLoader<Integer> loader = DataLoader.builder(dataset, s -> 0)
                            .batchSize(o.get("batch").intValue())
                            .shuffle(Shuffle.shardBlocks(1, 2))
                            .shardPartSize(o.get("part").intValue())
                            .build();
                    Epoch<Integer> epoch = loader.epoch(0)) {
                for (Batch<Integer> b : epoch) {
                    b.items();
                }
            }
            System.out.printf(
                    Locale.ROOT,
                    "staged units: %d origin reads, %.1f MiB on disk, %.2f s%n",
                    cache.stats().origin().reads(),
                    cache.stats().tiers().getFirst().usedBytes() / 1048576.0,
                    (System.nanoTime() - t0) / 1e9);
        }
        return disk;
    }

    /** One first epoch of a fresh job cache: {origin reads, wall ns, cpu ns, samples}. */
    private static long[] epoch(Path data, Path disk, List<String> shards, boolean stream, Map<String, Long> o)
            throws IOException {
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder().capacity(capacity(data)).build())
                .tier(disk(disk, capacity(data)))
                .pageSize(o.get("page").intValue())
                .carryOnClose(false)
                .build()) {
            WebDataset dataset = WebDataset.of(cache, shards);
            long reads0 = cache.stats().origin().reads();
            long samples = 0;
            long cpu0 = OS.getProcessCpuTime();
            long t0 = System.nanoTime();
            try (DataLoader<Integer> loader = DataLoader.builder(dataset, StagedEpochBenchmark::crc)
                            .batchSize(o.get("batch").intValue())
                            .workers(o.get("workers").intValue())
                            .shuffle(stream ? Shuffle.shardBlocks(7, 2) : Shuffle.samples(7))
                            .streamShards(stream)
                            .shardPartSize(o.get("part").intValue())
                            .build();
                    Epoch<Integer> epoch = loader.epoch(0)) {
                for (Batch<Integer> b : epoch) {
                    samples += b.items().size();
                }
            }
            long wall = System.nanoTime() - t0;
            long cpu = OS.getProcessCpuTime() - cpu0;
            return new long[] {cache.stats().origin().reads() - reads0, wall, cpu, samples};
        }
    }

    private static Integer crc(Sample sample) {
        CRC32C crc = new CRC32C();
        ByteBuffer b = sample.fields().get("jpg").duplicate();
        crc.update(b);
        return (int) crc.getValue();
    }
}
