// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.granary.CacheStats;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.WebDataset;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * Granary in one command, on any machine with JDK 25: a training job reading WebDataset shards and small files from a
 * real S3-compatible server behind object-store latency, for three epochs, through memory and disk tiers.
 *
 * <p>It starts S3Proxy on 127.0.0.1 (fetched by the build), uploads a synthetic dataset ({@link LoaderWorld}: 32
 * WebDataset shards of 128 samples of ~16 KiB, and 1 024 small files), and puts a proxy in front that adds 20 ms to
 * every request and caps each connection at 25 MB/s. A {@link TieredCache} over an {@code S3Origin} (16 concurrent
 * requests) with a 48 MiB memory tier and a 128 MiB disk tier feeds two {@link DataLoader}s: training over the shards
 * (shuffled, batches of 32) and validation over the files. The stand-in model spends a fixed 20 ms per training batch
 * (as a GPU would: the trainer thread waits, the CPU stays free for the loader), and a quarter of that per
 * validation batch of 64. Every shard has its index file beside it ({@code <shard>.gidx}, written by
 * {@code WebDataset.writeIndex} during the upload), so indexing costs one listing and one small read per shard, in
 * parallel, and prints its progress; with {@code --index-files=0} the shards have none and are indexed from 8 MiB
 * sequential reads instead (one per shard here), whose bytes stay in the cache. Each epoch prints, for training and
 * for validation: samples/s, MB/s, the share of page reads each tier served, origin requests and MB, and data-wait —
 * the share of the epoch the trainer spent waiting for a batch. Epoch 1 comes from the origin and the trainer starves;
 * from epoch 2 the cache feeds it. Every sample is checked (CRC32C); the exit status is 0 only if every byte matched
 * and no lease was left open.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@demo
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@demo -Ddemo.args="--latency-ms=50 --epochs=4"
 * </pre>
 * Options {@code --name=value}: shards (32), samples-per-shard (128), sample-size (16384 bytes, mean), files (1024),
 * file-size (16384, mean), latency-ms (20), mbps (25, per connection), concurrency (16), batch (32), compute-ms (20),
 * epochs (3), memory-mb (48), disk-mb (128), workers (2), seed (1), index-files (1), stream-shards (1: training
 * epochs read whole shards in parts when their order allows; 0: one ranged read per sample). Exit status 2 for
 * bad arguments.
 */
public final class Demo {

    private static final double MB = 1e6;
    private static final Map<String, String> DEFAULTS = new TreeMap<>(Map.ofEntries(
            Map.entry("shards", "32"),
            Map.entry("samples-per-shard", "128"),
            Map.entry("sample-size", "16384"),
            Map.entry("files", "1024"),
            Map.entry("file-size", "16384"),
            Map.entry("latency-ms", "20"),
            Map.entry("mbps", "25"),
            Map.entry("concurrency", "16"),
            Map.entry("batch", "32"),
            Map.entry("compute-ms", "20"),
            Map.entry("epochs", "3"),
            Map.entry("memory-mb", "48"),
            Map.entry("disk-mb", "128"),
            Map.entry("workers", "2"),
            Map.entry("seed", "1"),
            Map.entry("index-files", "1"),
            Map.entry("stream-shards", "1")));

    private Demo() {}

    /**
     * Runs the demo.
     *
     * @param args options, see the class comment
     * @throws Exception if the server cannot start or the cache fails outside a sample read
     */
    public static void main(String[] args) throws Exception {
        Map<String, Long> o;
        try {
            o = Options.parse(args, DEFAULTS);
        } catch (IllegalArgumentException e) {
            System.err.println("demo: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path dir = Files.createTempDirectory("granary-demo-");
        int status;
        try {
            status = run(o, dir);
        } finally {
            deleteTree(dir);
        }
        System.exit(status);
    }

    private static int run(Map<String, Long> o, Path dir) throws Exception {
        long t0 = System.nanoTime();
        System.out.println("Granary demo: starting S3Proxy on 127.0.0.1 and uploading a synthetic dataset ...");
        try (LoaderWorld world = LoaderWorld.start(
                dir,
                o.get("shards").intValue(),
                o.get("samples-per-shard").intValue(),
                o.get("sample-size").intValue(),
                o.get("files").intValue(),
                o.get("file-size").intValue(),
                o.get("seed"))) {
            if (o.get("index-files") != 0) {
                world.writeIndexes();
            }
            world.network(Duration.ofMillis(o.get("latency-ms")), o.get("mbps") * 1_000_000);
            System.out.printf(
                    Locale.ROOT,
                    "dataset: %d WebDataset shards (%d samples, %.1f MB), %d files (%.1f MB);" + " ready in %.1f s%n",
                    world.shards.size(),
                    world.samples,
                    world.shardBytes / MB,
                    world.files.size(),
                    world.fileBytes / MB,
                    (System.nanoTime() - t0) / 1e9);
            System.out.printf(
                    Locale.ROOT,
                    "origin: S3 at %s behind %d ms per request, %d MB/s per connection," + " %d concurrent requests%n",
                    world.proxy.endpoint(),
                    o.get("latency-ms"),
                    o.get("mbps"),
                    o.get("concurrency"));
            System.out.printf(
                    Locale.ROOT,
                    "cache: memory %d MiB + disk %d MiB (exclusive under the loader);"
                            + " model: %d ms per batch of %d%n%n",
                    o.get("memory-mb"),
                    o.get("disk-mb"),
                    o.get("compute-ms"),
                    o.get("batch"));
            MemoryTier memory =
                    MemoryTier.builder().capacity(o.get("memory-mb") << 20).build();
            DiskTier disk = DiskTier.builder()
                    .directory(dir.resolve("disk"))
                    .capacity(o.get("disk-mb") << 20)
                    .segmentSize(8L << 20)
                    .build();
            AtomicLong mismatches = new AtomicLong();
            try (TieredCache cache = TieredCache.builder(
                            world.origin(o.get("concurrency").intValue()))
                    .tier(memory)
                    .tier(disk)
                    .build()) {
                long i0 = System.nanoTime();
                int requests0 = world.proxy.requests();
                int step = Math.max(1, world.shards.size() / 4);
                int[] fromFiles = {0};
                WebDataset shards = WebDataset.of(cache, world.shards, p -> {
                    fromFiles[0] += p.fromIndexFile() ? 1 : 0;
                    if (p.shardsDone() % step == 0 || p.done()) {
                        System.out.printf(
                                Locale.ROOT,
                                "indexing: %3d/%d shards (%d from index files, %d scanned in"
                                        + " 8 MiB parts), %.1f MB read, %d requests, %.2f s%n",
                                p.shardsDone(),
                                p.shardsTotal(),
                                fromFiles[0],
                                p.shardsDone() - fromFiles[0],
                                p.bytesRead() / MB,
                                p.originRequests(),
                                p.elapsedNanos() / 1e9);
                    }
                });
                System.out.printf(
                        Locale.ROOT,
                        "indexed %d shards in %.1f s (%d requests) -> %d samples%n%n",
                        shards.shards().size(),
                        (System.nanoTime() - i0) / 1e9,
                        world.proxy.requests() - requests0,
                        shards.size());
                Dataset files = Dataset.ofObjects(cache, "files/");
                try (DataLoader<Integer> train = DataLoader.builder(shards, sample -> {
                                    if (!LoaderWorld.verifyShardSample(sample)) {
                                        mismatches.incrementAndGet();
                                    }
                                    return sample.index();
                                })
                                .batchSize(o.get("batch").intValue())
                                .shuffle(42)
                                .workers(o.get("workers").intValue())
                                .streamShards(o.get("stream-shards") != 0)
                                .prefetch(8)
                                .build();
                        DataLoader<Integer> validate = DataLoader.builder(files, sample -> {
                                    if (!LoaderWorld.verifyFile(sample.bytes())) {
                                        mismatches.incrementAndGet();
                                    }
                                    return sample.index();
                                })
                                .batchSize(64)
                                .workers(o.get("workers").intValue())
                                .prefetch(8)
                                .build()) {
                    System.out.printf(
                            Locale.ROOT,
                            "%-5s %-5s %8s %9s %8s %8s %8s %9s %9s %9s %6s%n",
                            "epoch",
                            "set",
                            "samples",
                            "samples/s",
                            "MB/s",
                            "mem hit",
                            "disk hit",
                            "origin rq",
                            "origin MB",
                            "data-wait",
                            "cpu s");
                    long computeNanos = TimeUnit.MILLISECONDS.toNanos(o.get("compute-ms"));
                    for (int epoch = 0; epoch < o.get("epochs"); epoch++) {
                        report(epoch, "train", train, computeNanos);
                        report(epoch, "val", validate, computeNanos / 4);
                    }
                }
                CacheStats stats = cache.stats();
                boolean clean = mismatches.get() == 0 && stats.openLeases() == 0 && stats.leakedLeases() == 0;
                System.out.printf(
                        Locale.ROOT,
                        "%nchecked every sample: %d mismatches; open leases %d, leaked %d;" + " total %.1f s -> %s%n",
                        mismatches.get(),
                        stats.openLeases(),
                        stats.leakedLeases(),
                        (System.nanoTime() - t0) / 1e9,
                        clean ? "OK" : "FAILED");
                return clean ? 0 : 1;
            }
        }
    }

    /** Runs one epoch of a loader with a stand-in model and prints its line. */
    private static void report(int epoch, String set, DataLoader<Integer> loader, long computeNanos) {
        LoaderStats before = loader.stats();
        long cpu0 = processCpuNanos();
        long start = System.nanoTime();
        try (Epoch<Integer> batches = loader.epoch(epoch)) {
            for (Batch<Integer> _ : batches) {
                if (computeNanos > 0) {
                    model(computeNanos);
                }
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        LoaderStats s = loader.stats().minus(before);
        double cpu = (processCpuNanos() - cpu0) / 1e9;
        System.out.printf(
                Locale.ROOT,
                "%-5d %-5s %8d %9.0f %8.1f %8.2f %8.2f %9d %9.1f %8.1f%% %6.1f%n",
                epoch + 1,
                set,
                s.samples(),
                s.samples() / seconds,
                s.bytes() / MB / seconds,
                s.hitRatio(0),
                s.hitRatio(1),
                s.originReads(),
                s.originBytes() / MB,
                100.0 * s.dataWaitNanos() / 1e9 / seconds,
                cpu);
    }

    /** CPU time of this process (the cache, the loader, the proxy in front of S3; not the S3 server's own JVM). */
    private static long processCpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** The stand-in model: a GPU step of fixed length; the trainer thread waits for it, the CPU is free. */
    private static void model(long nanos) {
        long end = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
