// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import dev.granary.TierStats;
import dev.granary.TieredCache;
import dev.granary.bench.Utilisation.Accelerator;
import dev.granary.bench.Utilisation.Measurement;
import dev.granary.bench.Utilisation.Sweep;
import dev.granary.bench.disk.DiskResidency;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.FaultProxy;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * An MLPerf-Storage-style benchmark: how many emulated accelerators one node keeps at least 90 % busy
 * ({@link Utilisation}: MLPerf's accelerator utilisation, AU = compute time / wall time, the first step's I/O
 * excluded).
 *
 * <h2>Workload (a ResNet-50-like profile, scaled to the machine)</h2>
 * {@code objects} samples of {@code size} bytes (default 3 000 × 150 528 B = 224 × 224 × 3, MLPerf's
 * {@code record_length_resize} for ResNet-50; 452 MB), one object each, random bytes whose first 4 bytes are the
 * CRC32C of the rest (every consumer checks every sample). MLPerf Storage's ResNet-50 on an H100
 * ({@code storage-conf/workload/resnet50_h100.yaml}: batch 400, {@code computation_time} 0.224 s, samples of
 * 114 660 B on average) needs ~205 MB/s per accelerator. Here the per-accelerator demand is {@code mbps} (default 20
 * MB/s, ~1/10 of an H100) with batches of {@code batch} (8): the compute time per batch is
 * {@code batch × size / mbps} (60.2 ms by default), so that the sweep's counts stay in the range two shared cores can
 * feed. An accelerator is a platform thread that takes a batch, then sleeps the compute time.
 *
 * <h2>Subjects, each swept over 1, 2, 3, 4, 6, 8, ... accelerators</h2>
 * <ul>
 *   <li>{@code ceiling} — the same accelerators with batches always ready (no I/O): the AU this machine's sleeping
 *       and scheduling allow at all.</li>
 *   <li>{@code granary-e1} — epoch 1: a fresh {@link TieredCache} (memory tier {@code memory-mib}, a disk tier holding
 *       the whole dataset) per measurement, one {@link DataLoader} per accelerator ({@code shard(rank, N)}, one shared
 *       cache, as ranks on one node share it), S3 origin over the shared client.</li>
 *   <li>{@code plain} — no cache: a pool of {@code concurrency} threads doing whole-object GETs with one
 *       {@link S3Client} (the one the Granary origin uses with {@code --direct=0}), each accelerator keeping
 *       {@code prefetch} batches in flight (PyTorch's {@code prefetch_factor}), in a seeded order split over the
 *       accelerators.</li>
 *   <li>{@code granary-e2+ resident} — epochs 2+: one cache filled by a full epoch first (memory tier + disk tier, the
 *       dataset ≥ 5 × the memory tier so most hits come from disk), a new epoch number per measurement, the disk
 *       tier's segment files read whole into the page cache before it (residency printed, {@code mincore}).</li>
 *   <li>{@code granary-e2+ paged-out} — the same cache with the disk tier's segments evicted from the page cache while
 *       the tier stays open ({@link DiskResidency#pageOut}: {@code madvise(MADV_PAGEOUT)} over the tier's mappings,
 *       then {@code POSIX_FADV_DONTNEED}; residency verified and printed): every disk hit reads the device, as on a
 *       node whose dataset is 5 × its RAM.</li>
 * </ul>
 * Counts run in increasing order, every subject at one count before the next count (so noise hits all alike); a
 * subject stops after {@code patience} failing counts in a row. A measurement runs {@code steps} batches per
 * accelerator, or fewer so the reads stay within one pass over the dataset (epoch 1 must read cold samples only); it
 * stops the sweep when fewer than 3 batches remain. Each run draws a new shuffle seed (printed; {@code seed} > 0 fixes
 * it); {@code runs} runs (default 3) each sweep every subject, and the summary gives every run's largest passing count
 * ({@code +}: never failed up to the largest count tried; {@code *}: a count passed above one that failed).
 *
 * <h2>Origin</h2>
 * By default S3Proxy (a child JVM on 127.0.0.1) behind a {@link FaultProxy} adding {@code latency-ms} (20) to every
 * request, no bandwidth cap. With {@code --endpoint=URL} (or {@code --endpoint=aws}) and {@code --bucket=NAME} it
 * reads a real S3-compatible store instead (region {@code --region}, default {@code us-east-1}; credentials from the
 * SDK's default chain; {@code --prefix=mlperf/}), uploading the dataset first unless {@code --upload=0} (then the
 * objects written by an earlier upload must be there).
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@mlperf
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@mlperf -Dmlperf.args="--runs=1 --max-accelerators=8"
 * </pre>
 * Options {@code --name=value}: objects (3000), size (150528), batch (8), mbps (20, per accelerator), memory-mib (64),
 * concurrency (32: origin connections, and the plain loop's threads), prefetch (4), steps (16), latency-ms (20),
 * runs (3), max-accelerators (64), patience (2), seed (0: new each run), upload (1), listing (1: the Granary
 * subjects use {@link Dataset#ofObjects}, one listing; 0: {@link Dataset#ofKeys}, a HEAD per sample), direct (1: the
 * Granary origin builds its own client and sends its ranged GETs without the S3 client's pipeline, decision 0012; 0:
 * it reads through the plain loop's {@link S3Client}); strings endpoint, bucket, region, prefix. Files go under
 * {@code granary.bench.dir} (the Maven execution: {@code cache-benchmarks/target}).
 */
public final class MlperfBenchmark {

    private static final Map<String, String> DEFAULTS = new TreeMap<>(Map.ofEntries(
            Map.entry("objects", "3000"),
            Map.entry("size", "150528"),
            Map.entry("batch", "8"),
            Map.entry("mbps", "20"),
            Map.entry("memory-mib", "64"),
            Map.entry("concurrency", "32"),
            Map.entry("prefetch", "4"),
            Map.entry("steps", "16"),
            Map.entry("latency-ms", "20"),
            Map.entry("runs", "3"),
            Map.entry("max-accelerators", "64"),
            Map.entry("patience", "2"),
            Map.entry("seed", "0"),
            Map.entry("upload", "1"),
            Map.entry("listing", "1"),
            Map.entry("direct", "1")));
    private static final List<String> STRINGS = List.of("endpoint", "bucket", "region", "prefix");
    private static final int[] LADDER = {
        1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256
    };
    private static final long SEGMENT = 16L << 20;
    private static final String LOCAL_BUCKET = "granary-mlperf";
    static final List<String> SUBJECTS =
            List.of("ceiling", "granary-e1", "plain", "granary-e2+ resident", "granary-e2+ paged-out");

    private final Map<String, Long> o;
    private final Map<String, String> s;
    private final Path dir;
    private final S3Client client;
    /** Where the Granary origin's own client goes ({@code --direct=1}); null for AWS's default endpoint. */
    private final URI endpoint;

    private final AwsCredentialsProvider credentials;
    private final String bucket;
    private final List<String> keys;
    private final int batch;
    private final long computeNanos;
    private final long sampleBytes;

    private MlperfBenchmark(
            Map<String, Long> o,
            Map<String, String> s,
            Path dir,
            S3Client client,
            String bucket,
            List<String> keys,
            URI endpoint,
            AwsCredentialsProvider credentials) {
        this.endpoint = endpoint;
        this.credentials = credentials;
        this.o = o;
        this.s = s;
        this.dir = dir;
        this.client = client;
        this.bucket = bucket;
        this.keys = keys;
        this.batch = o.get("batch").intValue();
        this.sampleBytes = o.get("size");
        this.computeNanos = Utilisation.computeNanos(batch, sampleBytes, o.get("mbps"));
    }

    /**
     * Runs the benchmark.
     *
     * @param args options, see the class comment
     * @throws Exception if the server cannot start or a read fails
     */
    public static void main(String[] args) throws Exception {
        Map<String, String> strings = new LinkedHashMap<>(Map.of("region", "us-east-1", "prefix", "mlperf/"));
        List<String> numeric = new ArrayList<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            String name = arg.startsWith("--") && eq > 2 ? arg.substring(2, eq) : "";
            if (STRINGS.contains(name)) {
                strings.put(name, arg.substring(eq + 1));
            } else {
                numeric.add(arg);
            }
        }
        Map<String, Long> o;
        try {
            o = Options.parse(numeric.toArray(String[]::new), DEFAULTS);
            if (strings.containsKey("endpoint") != strings.containsKey("bucket")) {
                throw new IllegalArgumentException("--endpoint and --bucket: one without the other (expected: both,"
                        + " or neither for the local S3Proxy)");
            }
            if (o.get("objects") < 1
                    || o.get("size") < 5
                    || o.get("batch") < 1
                    || o.get("mbps") < 1
                    || o.get("concurrency") < 1
                    || o.get("prefetch") < 1
                    || o.get("steps") < 3
                    || o.get("runs") < 1
                    || o.get("max-accelerators") < 1
                    || o.get("patience") < 1) {
                throw new IllegalArgumentException("options: " + o + " (expected: objects, batch, mbps, concurrency,"
                        + " prefetch, runs, max-accelerators, patience >= 1; size >= 5; steps >= 3)");
            }
        } catch (IllegalArgumentException e) {
            System.err.println("mlperf benchmark: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path base = Path.of(System.getProperty("granary.bench.dir", ".")).toAbsolutePath();
        Files.createDirectories(base);
        Path dir = Files.createTempDirectory(base, "mlperf-bench-");
        S3ProxyServer server = null;
        FaultProxy proxy = null;
        try {
            URI endpoint;
            String bucket;
            AwsCredentialsProvider credentials;
            if (strings.containsKey("endpoint")) {
                endpoint = strings.get("endpoint").equals("aws") ? null : URI.create(strings.get("endpoint"));
                bucket = strings.get("bucket");
                credentials = DefaultCredentialsProvider.builder().build();
            } else {
                server = S3ProxyServer.start(dir.resolve("s3"));
                proxy = FaultProxy.start(server.port()).latency(Duration.ofMillis(o.get("latency-ms")));
                endpoint = proxy.endpoint();
                bucket = LOCAL_BUCKET;
                credentials = S3ProxyServer.credentials();
            }
            int k = o.get("concurrency").intValue();
            // Room for the origin's metadata requests beside its k reads.
            try (S3Client shared = client(endpoint, strings.get("region"), credentials, 2 * k + 16)) {
                List<String> keys = new ArrayList<>();
                for (int i = 0; i < o.get("objects"); i++) {
                    keys.add(String.format(Locale.ROOT, "%s%08d.bin", strings.get("prefix"), i));
                }
                System.out.printf(
                        Locale.ROOT,
                        "mlperf benchmark: %d objects x %d B = %.0f MB at %s (%s); JVM %s,"
                                + " %d CPUs; load %s; options %s %s%n",
                        keys.size(),
                        o.get("size"),
                        keys.size() * (double) o.get("size") / 1e6,
                        endpoint == null ? "AWS" : endpoint,
                        proxy != null
                                ? "S3Proxy 4.1.0 behind FaultProxy, " + o.get("latency-ms") + " ms/request"
                                : "real endpoint",
                        Runtime.version(),
                        Runtime.getRuntime().availableProcessors(),
                        loadAverage(),
                        o,
                        strings);
                if (o.get("upload") != 0) {
                    long t0 = System.nanoTime();
                    upload(
                            server != null ? server.client() : shared,
                            bucket,
                            keys,
                            o.get("size").intValue(),
                            server != null);
                    System.out.printf(Locale.ROOT, "uploaded in %.1f s%n", (System.nanoTime() - t0) / 1e9);
                }
                new MlperfBenchmark(o, strings, dir, shared, bucket, keys, endpoint, credentials).runAll();
            }
        } finally {
            if (proxy != null) {
                proxy.close();
            }
            if (server != null) {
                server.close();
            }
            try (var paths = Files.walk(dir)) {
                for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    /**
     * The one client both subjects use, built as {@code S3Origin} builds its own: Apache HTTP, checksums only when
     * required, no SDK retries (the origin retries by itself; the plain loop does not, as in the S3 benchmark).
     */
    @SuppressWarnings("deprecation") // ApacheHttpClient: S3Origin's own client (decision 0004), compared like for like
    private static S3Client client(URI endpoint, String region, AwsCredentialsProvider credentials, int connections) {
        var builder = S3Client.builder()
                .region(Region.of(region))
                .credentialsProvider(credentials)
                .forcePathStyle(endpoint != null)
                .httpClientBuilder(ApacheHttpClient.builder()
                        .maxConnections(connections)
                        .tcpKeepAlive(true)
                        // A loaded machine can keep every connection busy for seconds: wait, do not fail.
                        .connectionAcquisitionTimeout(Duration.ofSeconds(120))
                        .socketTimeout(Duration.ofSeconds(60)))
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .overrideConfiguration(c -> c.retryStrategy(AwsRetryStrategy.doNotRetry()));
        if (endpoint != null) {
            builder.endpointOverride(endpoint);
        }
        return builder.build();
    }

    private static void upload(S3Client client, String bucket, List<String> keys, int size, boolean createBucket) {
        if (createBucket) {
            client.createBucket(b -> b.bucket(bucket));
        }
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            List<CompletableFuture<Void>> puts = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                int index = i;
                puts.add(CompletableFuture.runAsync(
                        () -> client.putObject(
                                b -> b.bucket(bucket).key(keys.get(index)), RequestBody.fromBytes(body(index, size))),
                        pool));
            }
            CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).join();
        }
    }

    /** Sample {@code i}: random bytes after a CRC32C of them ({@link LoaderWorld#verifyFile}). */
    static byte[] body(int i, int size) {
        byte[] body = new byte[size];
        new SplittableRandom(0x4D4C_5045_5246L + i).nextBytes(body);
        ByteBuffer.wrap(body).putInt(0, (int) LoaderWorld.crc(ByteBuffer.wrap(body, 4, size - 4)));
        return body;
    }

    // ------------------------------------------------------------------------------------------------ runs

    private void runAll() throws Exception {
        int runs = o.get("runs").intValue();
        long dataset = keys.size() * sampleBytes;
        long memory = o.get("memory-mib") << 20;
        System.out.printf(
                Locale.ROOT,
                "profile: batch %d x %d B, %.1f ms of compute per batch = %d MB/s per"
                        + " accelerator (MLPerf ResNet-50 on an H100: 400 x 114 660 B per 0.224 s = 205 MB/s);"
                        + " dataset %.1f x the memory tier (%d MiB)%s%n",
                batch,
                sampleBytes,
                computeNanos / 1e6,
                o.get("mbps"),
                (double) dataset / memory,
                o.get("memory-mib"),
                dataset < 5 * memory ? " -- WARNING: under MLPerf's 5x" : "");
        Map<String, List<String>> verdicts = new LinkedHashMap<>();
        for (String subject : SUBJECTS) {
            verdicts.put(subject, new ArrayList<>());
        }
        for (int run = 1; run <= runs; run++) {
            long seed = o.get("seed") > 0 ? o.get("seed") + run - 1 : new SecureRandom().nextLong() & Long.MAX_VALUE;
            Map<String, Sweep> sweeps = runOnce(run, seed);
            sweeps.forEach((subject, sweep) -> verdicts.get(subject).add(sweep.verdict()));
        }
        System.out.printf(
                Locale.ROOT,
                "%nlargest number of emulated accelerators with mean AU >= %.0f %%, per run" + " (load now %s):%n",
                100 * Utilisation.PASS,
                loadAverage());
        System.out.printf(Locale.ROOT, "| %-22s | %-20s |%n", "subject", "runs");
        System.out.printf("|%s|%s|%n", "-".repeat(24), "-".repeat(22));
        verdicts.forEach(
                (subject, v) -> System.out.printf(Locale.ROOT, "| %-22s | %-20s |%n", subject, String.join(", ", v)));
    }

    private Map<String, Sweep> runOnce(int run, long seed) throws Exception {
        System.out.printf(Locale.ROOT, "%n== run %d, seed %d, load %s%n", run, seed, loadAverage());
        Map<String, Sweep> sweeps = new LinkedHashMap<>();
        for (String subject : SUBJECTS) {
            sweeps.put(subject, new Sweep(o.get("patience").intValue()));
        }
        Path warmDir = dir.resolve("warm-" + run);
        int k = o.get("concurrency").intValue();
        try (TieredCache warm = cache(warmDir);
                ExecutorService pool = Executors.newFixedThreadPool(k)) {
            Dataset warmSet = dataset(warm);
            long t0 = System.nanoTime();
            fill(warmSet, seed);
            double fillSeconds = (System.nanoTime() - t0) / 1e9;
            System.out.printf(
                    Locale.ROOT,
                    "warm cache filled by one epoch in %.1f s (%.0f MB/s): %s%n",
                    fillSeconds,
                    keys.size() * sampleBytes / 1e6 / fillSeconds,
                    tiers(warm));
            long epoch = 1;
            System.out.printf(
                    "%-4s %-22s %6s %8s %8s %9s %9s  %s%n",
                    "N", "subject", "steps", "AU mean", "AU min", "MB/s", "pass", "notes");
            int maxCount = o.get("max-accelerators").intValue();
            for (int n : LADDER) {
                if (n > maxCount || sweeps.values().stream().allMatch(Sweep::done)) {
                    break;
                }
                int steps =
                        Utilisation.steps(keys.size(), n, batch, o.get("steps").intValue());
                if (steps < 3) {
                    System.out.printf(
                            "(stopping at %d accelerators: %d batches each would exceed one pass over the"
                                    + " dataset; add --objects)%n",
                            n, 3);
                    break;
                }
                for (String subject : SUBJECTS) {
                    Sweep sweep = sweeps.get(subject);
                    if (sweep.done()) {
                        continue;
                    }
                    Measurement m = switch (subject) {
                        case "ceiling" -> ceiling(n, steps);
                        case "granary-e1" -> cold(n, steps, seed, dir.resolve("cold-" + run + "-" + n));
                        case "plain" -> plain(n, steps, seed, pool);
                        case "granary-e2+ resident" -> {
                            String residency = String.format(
                                    Locale.ROOT, "disk resident %.1f %% before", 100 * DiskResidency.warm(warmDir));
                            yield granary(warm, warmSet, n, steps, seed, epoch++, residency);
                        }
                        default -> granary(warm, warmSet, n, steps, seed, epoch++, DiskResidency.pageOut(warmDir));
                    };
                    sweep.record(n, m.passes());
                    System.out.printf(
                            Locale.ROOT,
                            "%-4d %-22s %6d %7.1f%% %7.1f%% %9.1f %9s  %s%n",
                            n,
                            subject,
                            steps,
                            100 * m.meanAu(),
                            100 * m.minAu(),
                            m.mbPerSecond(),
                            m.passes() ? "yes" : "NO",
                            m.note());
                }
            }
        } finally {
            deleteTree(warmDir);
        }
        sweeps.values().forEach(Sweep::cap);
        System.out.printf(
                Locale.ROOT,
                "run %d: largest N with AU >= 90 %%: %s%n",
                run,
                sweeps.entrySet().stream()
                        .map(e -> e.getKey() + " " + e.getValue().verdict())
                        .toList());
        return sweeps;
    }

    // ------------------------------------------------------------------------------------------------ subjects

    private TieredCache cache(Path diskDir) throws IOException {
        Files.createDirectories(diskDir);
        long dataset = keys.size() * (sampleBytes + 4096);
        long disk = (dataset / SEGMENT + 3) * SEGMENT;
        S3Origin.Builder b = S3Origin.builder()
                .bucket(bucket)
                .maxConcurrency(o.get("concurrency").intValue());
        if (o.get("direct") == 0) {
            b.client(client); // the plain loop's client: every GET through the S3 client's pipeline
        } else {
            // The origin's own client: ranged GETs signed and sent without the S3 client's pipeline (decision 0012).
            b.region(s.get("region")).credentials(credentials);
            if (endpoint != null) {
                b.endpoint(endpoint).pathStyle(true);
            }
        }
        S3Origin origin = b.build();
        return TieredCache.builder(origin)
                .tier(MemoryTier.builder().capacity(o.get("memory-mib") << 20).build())
                .tier(DiskTier.builder()
                        .directory(diskDir)
                        .capacity(disk)
                        .segmentSize(SEGMENT)
                        .build())
                .build();
    }

    /**
     * The dataset as a user builds it: {@link Dataset#ofObjects} lists the prefix once (one request per 1 000 keys,
     * before the measurement), so each sample costs one GET, as in the plain loop; with {@code --listing=0},
     * {@link Dataset#ofKeys}, whose reads ask for each object's current version first (a HEAD per sample and
     * {@code metadataTtl}).
     */
    private Dataset dataset(TieredCache cache) throws IOException {
        if (o.get("listing") == 0) {
            return Dataset.ofKeys(cache, keys);
        }
        Dataset listed = Dataset.ofObjects(cache, s.get("prefix"));
        if (listed.size() != keys.size()
                || !listed.key(0).equals(keys.get(0))
                || !listed.key(keys.size() - 1).equals(keys.get(keys.size() - 1))) {
            throw new IllegalStateException("prefix '" + s.get("prefix") + "' lists " + listed.size() + " objects ("
                    + listed.key(0) + " ...), expected exactly the " + keys.size() + " samples " + keys.get(0)
                    + " ... " + keys.get(keys.size() - 1) + " (use a prefix that holds only this dataset, or"
                    + " --listing=0)");
        }
        return listed;
    }

    /** One full epoch with no compute: fills the warm cache. */
    private void fill(Dataset dataset, long seed) throws Exception {
        AtomicLong bad = new AtomicLong();
        long n = 0;
        try (DataLoader<Boolean> loader = loader(dataset, seed, 0, 1, bad, 64)) {
            try (Epoch<Boolean> epoch = loader.epoch(0)) {
                for (Batch<Boolean> b : epoch) {
                    n += b.size();
                }
            }
        }
        if (n != keys.size() || bad.get() != 0) {
            throw new IllegalStateException("fill: " + n + " of " + keys.size() + " samples, " + bad + " bad");
        }
    }

    private DataLoader<Boolean> loader(Dataset dataset, long seed, int rank, int ranks, AtomicLong bad, int prefetch) {
        return DataLoader.builder(dataset, sample -> {
                    boolean ok = LoaderWorld.verifyFile(sample.bytes());
                    if (!ok) {
                        bad.incrementAndGet();
                    }
                    return ok;
                })
                .batchSize(batch)
                .shuffle(seed)
                .shard(rank, ranks)
                .workers(1)
                .prefetch(prefetch)
                .build();
    }

    private Measurement ceiling(int n, int steps) throws Exception {
        List<Utilisation.BatchSource> sources = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            sources.add(() -> batch);
        }
        return accelerators(sources, steps, "");
    }

    private Measurement cold(int n, int steps, long seed, Path diskDir) throws Exception {
        try (TieredCache cache = cache(diskDir)) {
            Dataset dataset = dataset(cache);
            return granary(cache, dataset, n, steps, seed, 0, "");
        } finally {
            deleteTree(diskDir);
        }
    }

    private Measurement granary(
            TieredCache cache, Dataset dataset, int n, int steps, long seed, long epochNumber, String note)
            throws Exception {
        AtomicLong bad = new AtomicLong();
        List<DataLoader<Boolean>> loaders = new ArrayList<>();
        List<Epoch<Boolean>> epochs = new ArrayList<>();
        long[] hits0 = tierHits(cache);
        try {
            for (int r = 0; r < n; r++) {
                loaders.add(loader(dataset, seed, r, n, bad, o.get("prefetch").intValue()));
            }
            List<Utilisation.BatchSource> sources = new ArrayList<>();
            for (int r = 0; r < n; r++) {
                DataLoader<Boolean> loader = loaders.get(r);
                AtomicReference<Iterator<Batch<Boolean>>> it = new AtomicReference<>();
                sources.add(() -> {
                    if (it.get() == null) {
                        Epoch<Boolean> e = loader.epoch(epochNumber);
                        synchronized (epochs) {
                            epochs.add(e);
                        }
                        it.set(e.iterator());
                    }
                    return it.get().hasNext() ? it.get().next().size() : -1;
                });
            }
            Measurement m = accelerators(sources, steps, note);
            if (bad.get() != 0) {
                throw new IllegalStateException(bad.get() + " samples failed their CRC32C check");
            }
            long[] hits = tierHits(cache);
            StringBuilder split = new StringBuilder();
            long total = 0;
            for (int t = 0; t < hits.length; t++) {
                total += hits[t] - hits0[t];
            }
            List<TierStats> tiers = cache.stats().tiers();
            for (int t = 0; t < hits.length; t++) {
                split.append(String.format(
                        Locale.ROOT,
                        "%s%s %.0f%%",
                        split.isEmpty() ? "hits: " : ", ",
                        tiers.get(t).name(),
                        total == 0 ? 0.0 : 100.0 * (hits[t] - hits0[t]) / total));
            }
            return new Measurement(
                    m.accelerators(),
                    m.bytes(),
                    m.wallNanos(),
                    (note.isEmpty() ? "" : note + "; ") + split + (total == 0 ? " (all from the origin)" : ""));
        } finally {
            synchronized (epochs) {
                for (Epoch<Boolean> e : epochs) {
                    e.close();
                }
            }
            for (DataLoader<Boolean> loader : loaders) {
                loader.close();
            }
        }
    }

    private Measurement plain(int n, int steps, long seed, ExecutorService pool) throws Exception {
        int[] order = permutation(keys.size(), seed);
        int prefetch = o.get("prefetch").intValue();
        AtomicLong bad = new AtomicLong();
        List<Utilisation.BatchSource> sources = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            int rank = r;
            // This rank's samples: every n-th of the permutation, as DistributedSampler deals them.
            int[] mine = IntStream.range(0, order.length / n)
                    .map(i -> order[i * n + rank])
                    .toArray();
            BlockingQueue<List<Future<Boolean>>> inFlight = new ArrayBlockingQueue<>(prefetch + 1);
            int[] next = {0};
            sources.add(() -> {
                while (inFlight.size() < prefetch && next[0] + batch <= mine.length) {
                    List<Future<Boolean>> reads = new ArrayList<>();
                    for (int j = 0; j < batch; j++) {
                        String key = keys.get(mine[next[0]++]);
                        reads.add(pool.submit(() -> {
                            byte[] body = client.getObject(
                                            b -> b.bucket(bucket).key(key), ResponseTransformer.toBytes())
                                    .asByteArrayUnsafe();
                            boolean ok = body.length == sampleBytes && LoaderWorld.verifyFile(ByteBuffer.wrap(body));
                            if (!ok) {
                                bad.incrementAndGet();
                            }
                            return ok;
                        }));
                    }
                    inFlight.add(reads);
                }
                List<Future<Boolean>> head = inFlight.poll();
                if (head == null) {
                    return -1;
                }
                for (Future<Boolean> f : head) {
                    f.get();
                }
                return head.size();
            });
        }
        Measurement m = accelerators(sources, steps, "");
        if (bad.get() != 0) {
            throw new IllegalStateException("plain: " + bad.get() + " bad objects");
        }
        return m;
    }

    /** Runs {@code sources.size()} accelerators from one start gate; {@code bytes} counted from batch sizes. */
    private Measurement accelerators(List<Utilisation.BatchSource> sources, int steps, String note) throws Exception {
        int n = sources.size();
        CountDownLatch gate = new CountDownLatch(1);
        AtomicLong samples = new AtomicLong();
        List<CompletableFuture<Accelerator>> results = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            Utilisation.BatchSource source = sources.get(r);
            CompletableFuture<Accelerator> result = new CompletableFuture<>();
            results.add(result);
            threads.add(Thread.ofPlatform().name("accelerator-" + r).start(() -> {
                try {
                    gate.await();
                    result.complete(Utilisation.run(
                            () -> {
                                int size = source.next();
                                if (size > 0) {
                                    samples.addAndGet(size);
                                }
                                return size;
                            },
                            steps,
                            computeNanos));
                } catch (Throwable t) {
                    result.completeExceptionally(t);
                }
            }));
        }
        long start = System.nanoTime();
        gate.countDown();
        List<Accelerator> accelerators = new ArrayList<>();
        for (CompletableFuture<Accelerator> r : results) {
            Accelerator a = r.join();
            if (a == null || a.batches() != steps) {
                throw new IllegalStateException(
                        "an accelerator got " + (a == null ? 0 : a.batches()) + " of " + steps + " batches");
            }
            accelerators.add(a);
        }
        long wall = System.nanoTime() - start;
        for (Thread t : threads) {
            t.join();
        }
        return new Measurement(accelerators, samples.get() * sampleBytes, wall, note);
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private static int[] permutation(int n, long seed) {
        int[] p = new int[n];
        Arrays.setAll(p, i -> i);
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = n - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int swap = p[i];
            p[i] = p[j];
            p[j] = swap;
        }
        return p;
    }

    private static long[] tierHits(TieredCache cache) {
        return cache.stats().tiers().stream().mapToLong(TierStats::hitBytes).toArray();
    }

    private static String tiers(TieredCache cache) {
        return String.join(
                ", ",
                cache.stats().tiers().stream()
                        .map(t -> String.format(Locale.ROOT, "%s %.0f MiB used", t.name(), t.usedBytes() / 1048576.0))
                        .toList());
    }

    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "unknown";
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (var paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
