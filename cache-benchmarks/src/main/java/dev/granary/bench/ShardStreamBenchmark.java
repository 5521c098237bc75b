// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.granary.CacheStats;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.WebDataset;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * WebDataset shards read in parts ahead of the trainer (the loader's shard streaming) over a real S3 server
 * ({@link LoaderWorld}: S3Proxy behind injected latency and a per-connection bandwidth cap), in two parts, each with
 * its ceiling or peer in the same run:
 *
 * <ol>
 *   <li><b>cold</b> — one epoch over the shards on an emptied cache, three subjects with the same concurrency K,
 *       rotated every round: (a) the {@link DataLoader} streaming the shards in parts (sequential order, the block
 *       structure a shard-block shuffle also has), every sample's CRC32C checked by the decoder; (b) the ceiling, a
 *       plain AWS SDK client with K virtual threads that GETs every shard whole and streams its body through CRC32C;
 *       (c) the same loader reading every sample as its own ranged GET ({@code streamShards(false)}). MB/s of
 *       shard bytes, the ratio (a)/(b), and the origin requests of (a)'s epoch against the bound
 *       {@code shards × ⌈shard size / part size⌉} (indexing, done once beforehand, is counted apart).</li>
 *   <li><b>steady</b> — the dataset 4× the cache (memory + disk, a third in memory; memory only when the disk's
 *       share is under two 16 MiB segments), the loader driving the cache,
 *       {@code epochs} epochs streamed and the same per sample: origin requests per epoch in the steady state
 *       (epochs 3…), and the ratio per-sample / streamed.</li>
 * </ol>
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@stream
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@stream -Dstream.args="--only=2 --epochs=5"
 * </pre>
 * Options {@code --name=value}: only (0 = both parts, else 1 or 2), shards (32), samples (160 per shard), size
 * (102400: mean sample bytes, spread ±50 %), part (8388608), concurrency (16), latency-ms (20), mbps (25: per
 * connection), rounds (3), batch (32), workers (2), epochs (5), cache-divisor (4: the cache is the dataset / this),
 * steady-latency-ms (1: part 2 counts requests, which latency does not change).
 */
public final class ShardStreamBenchmark {

    private static final double MB = 1e6;
    private static final long SEGMENT = 16L << 20;
    private static final Map<String, String> DEFAULTS = new TreeMap<>(Map.ofEntries(
            Map.entry("only", "0"),
            Map.entry("shards", "32"),
            Map.entry("samples", "160"),
            Map.entry("size", "102400"),
            Map.entry("part", Integer.toString(8 << 20)),
            Map.entry("concurrency", "16"),
            Map.entry("latency-ms", "20"),
            Map.entry("mbps", "25"),
            Map.entry("rounds", "3"),
            Map.entry("batch", "32"),
            Map.entry("workers", "2"),
            Map.entry("epochs", "5"),
            Map.entry("cache-divisor", "4"),
            Map.entry("steady-latency-ms", "1")));
    private static final OperatingSystemMXBean OS =
            (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private ShardStreamBenchmark() {}

    /**
     * Runs the benchmark.
     *
     * @param args options, see the class comment
     * @throws Exception if the server cannot start or a read fails
     */
    public static void main(String[] args) throws Exception {
        Map<String, Long> o;
        try {
            o = Options.parse(args, DEFAULTS);
        } catch (IllegalArgumentException e) {
            System.err.println("shard stream benchmark: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path dir = Files.createTempDirectory(Path.of(System.getProperty("granary.bench.dir", ".")), "stream-bench-");
        System.out.printf(
                Locale.ROOT,
                "shard stream benchmark: JVM %s, %d CPUs, load %.2f; options %s%n",
                Runtime.version(),
                Runtime.getRuntime().availableProcessors(),
                OS.getSystemLoadAverage(),
                o);
        long t0 = System.nanoTime();
        try (LoaderWorld world = LoaderWorld.start(
                dir,
                o.get("shards").intValue(),
                o.get("samples").intValue(),
                o.get("size").intValue(),
                0,
                0,
                1)) {
            System.out.printf(
                    Locale.ROOT,
                    "uploaded %d shards, %d samples, %.1f MiB of shards (%.1f MiB of samples)" + " in %.1f s%n",
                    world.shards.size(),
                    world.samples,
                    world.shardBytes / 1048576.0,
                    world.sampleBytes / 1048576.0,
                    (System.nanoTime() - t0) / 1e9);
            long only = o.get("only");
            if (only == 0 || only == 1) {
                cold(world, o);
            }
            if (only == 0 || only == 2) {
                steady(world, o, dir);
            }
        } finally {
            try (var paths = Files.walk(dir)) {
                for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ 1. cold

    private static void cold(LoaderWorld world, Map<String, Long> o) throws Exception {
        int k = o.get("concurrency").intValue();
        int part = o.get("part").intValue();
        world.network(Duration.ofMillis(o.get("latency-ms")), o.get("mbps") * 1_000_000);
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "1. cold epoch, K=%d, %d ms/request, %d MB/s per connection: (a) streamed in"
                        + " parts of %d MiB, (b) plain client GETting whole shards, (c) one ranged GET per sample%n",
                k,
                o.get("latency-ms"),
                o.get("mbps"),
                part >> 20);
        // (a) and (c) on caches of their own: the memory (c)'s small extents leave behind is not (a)'s to reuse.
        try (TieredCache cache = coldCache(world, k);
                TieredCache single = coldCache(world, k)) {
            long i0 = System.nanoTime();
            WebDataset dataset = WebDataset.of(cache, world.shards);
            CacheStats indexed = cache.stats();
            System.out.printf(
                    Locale.ROOT,
                    "indexing (once, apart): %.2f s, %d GETs + %d HEADs%n",
                    (System.nanoTime() - i0) / 1e9,
                    indexed.origin().reads(),
                    indexed.origin().metadataRequests());
            WebDataset singleDataset = WebDataset.of(single, world.shards);
            long bound = 0;
            for (String shard : world.shards) {
                long size = cache.stat(shard).size();
                bound += (size + part - 1) / part;
            }
            // Warm-up of every path (JIT, connections), on a few shards' worth of data.
            streamed(world, cache, dataset, o, k, part, true);
            streamed(world, single, singleDataset, o, k, part, false);
            plain(world, k, world.shards.subList(0, Math.min(k, world.shards.size())));

            List<double[]> rows = new ArrayList<>();
            double bytes = world.shardBytes;
            for (int round = 1; round <= o.get("rounds"); round++) {
                double[] a = null;
                double[] b = null;
                double[] c = null;
                for (int step = 0; step < 3; step++) {
                    switch ((step + round - 1) % 3) { // rotated: a b c, b c a, c a b
                        case 0 -> a = streamed(world, cache, dataset, o, k, part, true);
                        case 1 -> b = plain(world, k, world.shards);
                        default -> c = streamed(world, single, singleDataset, o, k, part, false);
                    }
                }
                double aRate = bytes / a[0] / MB;
                double bRate = bytes / b[0] / MB;
                double cRate = bytes / c[0] / MB;
                rows.add(new double[] {
                    aRate / bRate,
                    aRate,
                    bRate,
                    cRate,
                    a[1],
                    c[1],
                    a[2] / (bytes / (1 << 30)),
                    b[1] / (bytes / (1 << 30))
                });
                System.out.printf(
                        Locale.ROOT,
                        "round %d: (a) streamed %.1f MB/s, %d requests; (b) plain whole shards"
                                + " %.1f MB/s; (c) per sample %.1f MB/s, %d requests; (a)/(b) %.3f; CPU-s per GiB (a)"
                                + " %.2f, (b) %.2f%n",
                        round,
                        aRate,
                        (long) a[1],
                        bRate,
                        cRate,
                        (long) c[1],
                        aRate / bRate,
                        a[2] / (bytes / (1 << 30)),
                        b[1] / (bytes / (1 << 30)));
            }
            S3ReadBenchmark.report("streamed / plain whole shards", rows, r -> r[0]);
            S3ReadBenchmark.report("streamed / per sample", rows, r -> r[1] / r[3]);
            System.out.printf(
                    Locale.ROOT,
                    "origin requests per cold epoch: streamed %d (bound shards x ceil(size /"
                            + " part) = %d; + %d index requests once), per sample %d%n",
                    (long) rows.getLast()[4],
                    bound,
                    indexed.origin().reads() + indexed.origin().metadataRequests(),
                    (long) rows.getLast()[5]);
        }
    }

    private static TieredCache coldCache(LoaderWorld world, int k) {
        return TieredCache.builder(world.origin(k))
                .tier(MemoryTier.builder()
                        .capacity(world.shardBytes + (64L << 20))
                        .build())
                .build();
    }

    /**
     * {@return epoch seconds, origin requests, CPU seconds} of one epoch of the loader over an emptied cache, the
     * shards streamed in parts or each sample read alone.
     */
    private static double[] streamed(
            LoaderWorld world,
            TieredCache cache,
            WebDataset dataset,
            Map<String, Long> o,
            int k,
            int part,
            boolean stream)
            throws Exception {
        for (String shard : world.shards) {
            cache.invalidate(shard);
        }
        if (cache.stats().tiers().getFirst().usedBytes() != 0) {
            throw new IllegalStateException("not empty after invalidate: " + cache.stats());
        }
        AtomicLong bad = new AtomicLong();
        int batch = o.get("batch").intValue();
        try (DataLoader<Integer> loader = DataLoader.builder(dataset, s -> {
                    if (!LoaderWorld.verifyShardSample(s)) {
                        bad.incrementAndGet();
                    }
                    return s.index();
                })
                .batchSize(batch)
                .workers(o.get("workers").intValue())
                .readAhead(Math.max(k, batch))
                .prefetch(Math.max(4, 2 * k / batch))
                .streamShards(stream)
                .shardPartSize(part)
                .maxBytesInFlight(Math.max(256L << 20, 2L * k * part))
                .build()) {
            long requests0 = cache.stats().origin().reads();
            long cpu0 = OS.getProcessCpuTime();
            long start = System.nanoTime();
            long n = 0;
            try (Epoch<Integer> epoch = loader.epoch(0)) {
                for (Batch<Integer> b : epoch) {
                    n += b.size();
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            double cpu = (OS.getProcessCpuTime() - cpu0) / 1e9;
            if (bad.get() != 0 || n != dataset.size()) {
                throw new IllegalStateException((stream ? "streamed" : "per sample") + ": " + bad.get()
                        + " bad samples, " + n + " of " + dataset.size() + " delivered");
            }
            return new double[] {seconds, cache.stats().origin().reads() - requests0, cpu};
        }
    }

    /** {@return seconds, CPU seconds} of K virtual threads each GETting whole shards through CRC32C. */
    private static double[] plain(LoaderWorld world, int k, List<String> shards) throws Exception {
        AtomicLong read = new AtomicLong();
        AtomicLong sink = new AtomicLong();
        long expected = shards.equals(world.shards) ? world.shardBytes : -1;
        try (S3Client client = S3ReadBenchmark.plainClient(k, world.proxy.endpoint())) {
            long cpu0 = OS.getProcessCpuTime();
            long start = System.nanoTime();
            S3ReadBenchmark.parallel(
                    k,
                    shards,
                    (key, scratch) -> {
                        CRC32C crc = new CRC32C();
                        try (InputStream body = client.getObject(
                                b -> b.bucket(LoaderWorld.BUCKET).key(key))) {
                            for (int n = body.read(scratch); n >= 0; n = body.read(scratch)) {
                                crc.update(scratch, 0, n);
                                read.addAndGet(n);
                            }
                        }
                        sink.addAndGet(crc.getValue());
                    },
                    1 << 20);
            double seconds = (System.nanoTime() - start) / 1e9;
            double cpu = (OS.getProcessCpuTime() - cpu0) / 1e9;
            if (expected >= 0 && read.get() != expected) {
                throw new IllegalStateException("plain: read " + read.get() + " of " + expected + " bytes");
            }
            return new double[] {seconds, cpu, sink.get()};
        }
    }

    // ------------------------------------------------------------------------------------------------ 2. steady

    private static void steady(LoaderWorld world, Map<String, Long> o, Path dir) throws Exception {
        world.network(Duration.ofMillis(o.get("steady-latency-ms")), o.get("mbps") * 1_000_000);
        int part = o.get("part").intValue();
        long n = world.shardBytes;
        long c = n / o.get("cache-divisor");
        long mem = c / 3;
        long disk = (c - mem) / SEGMENT * SEGMENT; // the disk tier frees and fills whole segments
        if (disk < 2 * SEGMENT) { // too small a dataset for a disk tier of parts: memory only
            mem = c;
            disk = 0;
        }
        int epochs = o.get("epochs").intValue();
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "2. steady state, dataset %.0f MiB, cache 1/%d of it: memory %.0f MiB + disk"
                        + " %.0f MiB, %d epochs, driven, sequential order%n",
                n / 1048576.0,
                o.get("cache-divisor"),
                mem / 1048576.0,
                disk / 1048576.0,
                epochs);
        double[] streamed = epochs(world, o, dir.resolve("disk-streamed"), mem, disk, part, true);
        double[] single = epochs(world, o, dir.resolve("disk-single"), mem, disk, part, false);
        double s = steadyMean(streamed);
        double p = steadyMean(single);
        System.out.printf(
                Locale.ROOT,
                "steady-state origin requests per epoch: streamed %.0f, per sample %.0f:"
                        + " %.1fx fewer (target >= 50x)%n",
                s,
                p,
                p / s);
    }

    private static double steadyMean(double[] perEpoch) {
        double sum = 0;
        int count = 0;
        for (int e = 2; e < perEpoch.length; e++) {
            sum += perEpoch[e];
            count++;
        }
        return sum / Math.max(1, count);
    }

    /** {@return origin requests per epoch} of {@code epochs} epochs over a cache of memory + disk. */
    private static double[] epochs(
            LoaderWorld world, Map<String, Long> o, Path diskDir, long mem, long disk, int part, boolean stream)
            throws Exception {
        int epochs = o.get("epochs").intValue();
        double[] requests = new double[epochs];
        int k = o.get("concurrency").intValue();
        int batch = o.get("batch").intValue();
        TieredCache.Builder builder = TieredCache.builder(world.origin(k))
                .tier(MemoryTier.builder().capacity(mem).build());
        if (disk > 0) {
            builder.tier(DiskTier.builder()
                    .directory(diskDir)
                    .capacity(disk)
                    .segmentSize(SEGMENT)
                    .build());
        }
        try (TieredCache cache = builder.build()) {
            WebDataset dataset = WebDataset.of(cache, world.shards);
            AtomicLong bad = new AtomicLong();
            try (DataLoader<Integer> loader = DataLoader.builder(dataset, sample -> {
                        if (!LoaderWorld.verifyShardSample(sample)) {
                            bad.incrementAndGet();
                        }
                        return sample.index();
                    })
                    .batchSize(batch)
                    .workers(o.get("workers").intValue())
                    .readAhead(Math.max(k, batch))
                    .streamShards(stream)
                    .shardPartSize(part)
                    .maxBytesInFlight(Math.max(256L << 20, 2L * k * part))
                    .build()) {
                StringBuilder line = new StringBuilder();
                for (int e = 0; e < epochs; e++) {
                    LoaderStats before = loader.stats();
                    long start = System.nanoTime();
                    try (Epoch<Integer> epoch = loader.epoch(e)) {
                        for (Batch<Integer> b : epoch) {
                            b.size();
                        }
                    }
                    LoaderStats s = loader.stats().minus(before);
                    requests[e] = s.originReads();
                    line.append(String.format(
                            Locale.ROOT,
                            " %d (%.0f MB, hit %.3f, %.1f s)",
                            s.originReads(),
                            s.originBytes() / MB,
                            s.hitRatio(),
                            (System.nanoTime() - start) / 1e9));
                }
                System.out.printf(
                        Locale.ROOT, "%-10s origin requests per epoch:%s%n", stream ? "streamed" : "per sample", line);
            }
            if (bad.get() != 0) {
                throw new IllegalStateException(bad.get() + " bad samples");
            }
        }
        return requests;
    }
}
