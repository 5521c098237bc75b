// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.FaultProxy;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.tier.MemoryTier;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Reads of a data set from a real S3 server behind injected latency and a per-connection bandwidth cap: Granary cold
 * and warm against the clients a user would otherwise write, in one run, subjects alternated round by round.
 *
 * <h2>Setup</h2>
 * S3Proxy 4.1.0 (filesystem backend) in a child JVM on 127.0.0.1 ({@link S3ProxyServer}), data under
 * {@code cache-benchmarks/target/s3-bench} (kept between runs: uploaded once); {@code objects} objects of
 * {@code size} bytes, each deterministic random bytes. In front of it a {@link FaultProxy} adds {@code latency-ms} to
 * every request and caps each connection at {@code mbps} MB/s — a far-away object store as BENCHMARKS.md models it.
 * Every subject reads every object once, whole, in the same shuffled order, with concurrency {@code concurrency} (K).
 *
 * <h2>Subjects</h2>
 * <ul>
 *   <li>{@code granary} (cold): a fresh {@link TieredCache} (one {@link MemoryTier} holding everything, 1 MiB pages)
 *       over {@link S3Origin} through the proxy with {@code maxConcurrency(K)}; {@code cache.list("")} first (timed
 *       and reported on its own: S3Proxy's filesystem backend takes seconds to list a few thousand objects, where S3
 *       answers a page of 1 000 keys in about one round trip), then K virtual threads read the keys, each lease's
 *       bytes copied out once (the read phase, compared with the plain clients).</li>
 *   <li>{@code sync-apache}: the SDK's synchronous client with the Apache HTTP client (K connections), K virtual
 *       threads, a ranged {@code GetObject} of the whole object into a {@code byte[]} — the plain parallel ranged-GET
 *       client, and Granary's own transport. {@code async-netty} and {@code crt} send the same ranged GETs.</li>
 *   <li>{@code async-netty}: {@code S3AsyncClient} on the Netty client (K connections), K requests in flight.</li>
 *   <li>{@code crt}: the CRT-based {@code S3AsyncClient.crtBuilder()} with {@code maxConcurrency(K)}, K in flight.</li>
 *   <li>{@code sync-apache-pinned} (diagnostic, not in the default list): {@code sync-apache} with the origin's
 *       request shape — a listing for the ETags, then ranged GETs with {@code If-Match} — to tell the server's cost
 *       of conditional reads from Granary's own.</li>
 *   <li>{@code naive}: one thread, sequential {@code GetObject}s over the first {@code naive-objects} keys.</li>
 *   <li>{@code granary} (warm): the same cache read again, against the ceiling {@code raw}: the same K threads
 *       copying out read-only slices of one off-heap buffer holding the same bytes.</li>
 * </ul>
 * The model for the parallel subjects is min(K · S / (L + S / B), link): with K = 64, S = 128 KiB, L = 20 ms,
 * B = 25 MB/s, 333 MB/s if nothing else costs. Granary's first pass also reads every byte once more from the origin
 * response into its tier (the plain clients keep only their {@code byte[]}).
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@s3 -Ds3.args="--objects=8192 --size=131072"
 * </pre>
 * Options {@code --name=value}: objects (8192), size (131072), concurrency (64), latency-ms (20), mbps (25),
 * rounds (3), naive-objects (200), subjects (granary,sync-apache,async-netty,crt), if-match (true: the origin's
 * {@code ifMatch} setting), origin-client (own; {@code plain}: the origin over the {@code sync-apache} subject's client
 * configuration, a diagnostic).
 */
public final class S3ReadBenchmark {

    private static final String BUCKET = "bench";

    private S3ReadBenchmark() {}

    record Config(
            int objects,
            int size,
            int concurrency,
            int latencyMs,
            int mbps,
            int rounds,
            int naiveObjects,
            List<String> subjects,
            boolean ifMatch,
            boolean plainOriginClient) {
        static Config parse(String[] args) {
            return new Config(
                    intOption(args, "objects", 8192),
                    intOption(args, "size", 131072),
                    intOption(args, "concurrency", 64),
                    intOption(args, "latency-ms", 20),
                    intOption(args, "mbps", 25),
                    intOption(args, "rounds", 3),
                    intOption(args, "naive-objects", 200),
                    List.of(option(args, "subjects", "granary,sync-apache,async-netty,crt")
                            .split(",")),
                    !option(args, "if-match", "true").equals("false"),
                    option(args, "origin-client", "own").equals("plain"));
        }

        private static int intOption(String[] args, String name, int fallback) {
            return S3ReadBenchmark.intOption(args, name, fallback, 1);
        }
    }

    /** The value of option {@code --name=value}, else the fallback; shared by the S3 benchmark mains. */
    static String option(String[] args, String name, String fallback) {
        for (String arg : args) {
            if (arg.startsWith("--" + name + "=")) {
                return arg.substring(name.length() + 3);
            }
        }
        return fallback;
    }

    /**
     * An integer option of at least {@code min}.
     *
     * @throws IllegalArgumentException naming the option and its value
     */
    static int intOption(String[] args, String name, int fallback, int min) {
        String value = option(args, name, Integer.toString(fallback));
        try {
            int n = Integer.parseInt(value);
            if (n < min) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + ": '" + value + "' (expected: an integer >= " + min + ")");
        }
    }

    public static void main(String[] args) throws Exception {
        Config c = Config.parse(args);
        Path dir = Path.of(System.getProperty("granary.bench.dir", "target")).resolve("s3-bench");
        Files.createDirectories(dir);
        System.out.printf(
                Locale.ROOT,
                "S3 reads: %d objects x %d B = %.0f MiB; K=%d; latency %d ms/request; %d MB/s"
                        + " per connection; %d rounds; origin ifMatch=%s, client=%s; JDK %s; %d CPUs%n",
                c.objects,
                c.size,
                c.objects * (double) c.size / (1 << 20),
                c.concurrency,
                c.latencyMs,
                c.mbps,
                c.rounds,
                c.ifMatch,
                c.plainOriginClient ? "plain" : "own",
                Runtime.version(),
                Runtime.getRuntime().availableProcessors());
        try (S3ProxyServer server = S3ProxyServer.start(dir.resolve("data"));
                FaultProxy proxy = FaultProxy.start(server.port())) {
            List<String> keys = seed(server, c, dir);
            proxy.latency(Duration.ofMillis(c.latencyMs)).bandwidth((long) c.mbps * 1_000_000);
            List<String> order = new ArrayList<>(keys);
            shuffle(order, 42);
            run(c, proxy.endpoint(), order);
        }
    }

    /** Uploads the objects unless a previous run left exactly them; returns the keys in order. */
    private static List<String> seed(S3ProxyServer server, Config c, Path dir) throws Exception {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < c.objects; i++) {
            keys.add(String.format("train/%06d.bin", i));
        }
        Path marker = dir.resolve("seeded-" + c.objects + "x" + c.size);
        if (Files.exists(marker)) {
            return keys;
        }
        long start = System.nanoTime();
        upload(server, BUCKET, keys, c.size);
        Files.writeString(marker, "");
        System.out.printf(Locale.ROOT, "seeded in %.1f s%n", (System.nanoTime() - start) / 1e9);
        return keys;
    }

    /** Creates the bucket (if it is not there) and uploads object {@code i} as {@link #content}{@code (i, size)}. */
    static void upload(S3ProxyServer server, String bucket, List<String> keys, int size) throws Exception {
        try (S3Client client = server.client();
                ExecutorService pool = Executors.newFixedThreadPool(8)) {
            try {
                client.createBucket(b -> b.bucket(bucket));
            } catch (S3Exception e) {
                if (e.statusCode() != 409) {
                    throw e;
                }
            }
            List<CompletableFuture<Void>> puts = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                int index = i;
                puts.add(CompletableFuture.runAsync(
                        () -> client.putObject(
                                b -> b.bucket(bucket).key(keys.get(index)),
                                RequestBody.fromBytes(content(index, size))),
                        pool));
            }
            CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).join();
        }
    }

    static byte[] content(int index, int size) {
        byte[] bytes = new byte[size];
        new SplittableRandom(index * 0x9E3779B97F4A7C15L).nextBytes(bytes);
        return bytes;
    }

    private static void run(Config c, URI endpoint, List<String> order) throws Exception {
        double bytes = (double) c.objects * c.size;
        List<double[]> rows = new ArrayList<>(); // per round: granary, each client, naive, warm, raw (MB/s)
        List<String> clients =
                c.subjects.stream().filter(s -> !s.equals("granary")).toList();
        // Warm-up (JIT, connections, the server's own warm-up): every subject once over a small prefix of the order.
        Config small = new Config(
                Math.min(512, c.objects),
                c.size,
                c.concurrency,
                c.latencyMs,
                c.mbps,
                1,
                Math.min(10, c.naiveObjects),
                c.subjects,
                c.ifMatch,
                c.plainOriginClient);
        List<String> warmupOrder = order.stream()
                .filter(k -> Integer.parseInt(k.substring(6, 12)) < small.objects)
                .toList();
        granaryPasses(small, endpoint, warmupOrder, 1, new double[4 + clients.size()], clients.size());
        for (String client : clients) {
            plainPass(client, small, endpoint, warmupOrder);
        }
        for (int round = 1; round <= c.rounds; round++) {
            double[] row = new double[3 + clients.size() + 1];
            boolean granaryFirst = round % 2 == 1; // A B, then B A
            if (granaryFirst) {
                granaryPasses(c, endpoint, order, bytes, row, clients.size());
            }
            for (int i = 0; i < clients.size(); i++) {
                row[1 + i] = mbPerSecond(bytes, plainPass(clients.get(i), c, endpoint, order));
            }
            if (!granaryFirst) {
                granaryPasses(c, endpoint, order, bytes, row, clients.size());
            }
            row[row.length - 1] = naiveRate(c, endpoint, order);
            rows.add(row);
            StringBuilder line =
                    new StringBuilder(String.format(Locale.ROOT, "round %d: granary cold %.1f MB/s", round, row[0]));
            for (int i = 0; i < clients.size(); i++) {
                line.append(String.format(Locale.ROOT, ", %s %.1f", clients.get(i), row[1 + i]));
            }
            line.append(String.format(
                    Locale.ROOT,
                    ", naive %.1f; warm: granary %.0f MB/s, raw %.0f MB/s;" + " granary's listing took %.0f ms",
                    row[row.length - 1],
                    row[1 + clients.size()],
                    row[2 + clients.size()],
                    listingNanos / 1e6));
            System.out.println(line);
        }
        System.out.println();
        System.out.println("ratio                         median   (min-max) over rounds");
        for (int i = 0; i < clients.size(); i++) {
            int column = 1 + i;
            report("granary cold / " + clients.get(i), rows, r -> r[0] / r[column]);
        }
        for (int i = 0; i < clients.size(); i++) {
            int column = 1 + i;
            report(clients.get(i) + " / sync-apache", rows, r -> r[column] / r[1]);
        }
        report("granary cold / naive", rows, r -> r[0] / r[r.length - 1]);
        System.out.println("(granary cold: the read phase; its listing is reported per round)");
        int warm = 1 + clients.size();
        report("granary warm / raw", rows, r -> r[warm] / r[warm + 1]);
        System.out.printf(Locale.ROOT, "(warm and raw: medians of %d alternated passes per round)%n", WARM_PASSES);
        double model = Math.min(c.concurrency * c.size / (c.latencyMs / 1e3 + c.size / (c.mbps * 1e6)), 1.9e9) / 1e6;
        System.out.printf(Locale.ROOT, "model min(K*S/(L+S/B), link) = %.0f MB/s%n", model);
    }

    static void report(String what, List<double[]> rows, ToDoubleFunction<double[]> f) {
        double[] ratios = rows.stream().mapToDouble(f).sorted().toArray();
        System.out.printf(
                Locale.ROOT,
                "%-28s %6.2f   (%.2f-%.2f)%n",
                what,
                ratios[ratios.length / 2],
                ratios[0],
                ratios[ratios.length - 1]);
    }

    private static double mbPerSecond(double bytes, long nanos) {
        return bytes / (nanos / 1e9) / 1e6;
    }

    /** Granary cold, then warm on the same cache, then the raw ceiling of the warm pass. */
    private static void granaryPasses(
            Config c, URI endpoint, List<String> order, double bytes, double[] row, int clients) throws Exception {
        S3Origin.Builder builder =
                S3Origin.builder().bucket(BUCKET).maxConcurrency(c.concurrency).ifMatch(c.ifMatch);
        S3Client own = null;
        if (c.plainOriginClient) { // diagnostic: the origin over the sync-apache subject's client configuration
            own = plainClient(c, endpoint);
            builder.client(own);
        } else {
            builder.endpoint(endpoint).pathStyle(true).credentials(S3ProxyServer.credentials());
        }
        S3Origin origin = builder.build();
        long capacity = (long) c.objects * c.size + (64L << 20);
        try (TieredCache cache = TieredCache.builder(origin)
                .tier(MemoryTier.builder().capacity(capacity).build())
                .pageSize(1 << 20)
                .build()) {
            long start = System.nanoTime();
            long listed;
            try (var listing = cache.list("")) {
                listed = listing.count();
            }
            listingNanos = System.nanoTime() - start;
            start = System.nanoTime(); // the read phase is timed on its own; the listing is reported beside it
            if (listed < c.objects) {
                throw new IllegalStateException("listed " + listed + " objects, expected at least " + c.objects);
            }
            AtomicInteger checked = new AtomicInteger();
            parallel(
                    c.concurrency,
                    order,
                    (key, scratch) -> {
                        try (Lease lease = cache.read(key)) {
                            ByteBuffer b = lease.bytes();
                            b.get(0, scratch, 0, b.remaining());
                            int index = Integer.parseInt(key.substring(6, 12));
                            if (index % 64 == 0) { // spot-check the bytes: a fast wrong answer is no answer
                                if (!Arrays.equals(scratch, 0, b.remaining(), content(index, c.size), 0, c.size)) {
                                    throw new IllegalStateException("wrong bytes for " + key);
                                }
                                checked.incrementAndGet();
                            }
                        }
                    },
                    c.size);
            row[0] = mbPerSecond(bytes, System.nanoTime() - start);
            if (cache.stats().origin().metadataRequests() != 1) {
                throw new IllegalStateException(
                        "expected one listing and no stat: " + cache.stats().origin());
            }
            // Warm: WARM_PASSES passes of the cache alternated with passes of the raw ceiling; the medians.
            try (Arena arena = Arena.ofShared()) {
                ByteBuffer[] slices = rawSlices(c, arena);
                double[] warm = new double[WARM_PASSES];
                double[] raw = new double[WARM_PASSES];
                for (int pass = 0; pass < WARM_PASSES; pass++) {
                    start = System.nanoTime();
                    parallel(
                            c.concurrency,
                            order,
                            (key, scratch) -> {
                                try (Lease lease = cache.read(key)) {
                                    ByteBuffer b = lease.bytes();
                                    b.get(0, scratch, 0, b.remaining());
                                }
                            },
                            c.size);
                    warm[pass] = mbPerSecond(bytes, System.nanoTime() - start);
                    start = System.nanoTime();
                    parallel(
                            c.concurrency,
                            order,
                            (key, scratch) -> {
                                ByteBuffer b = slices[Integer.parseInt(key.substring(6, 12))];
                                b.get(0, scratch, 0, b.remaining());
                            },
                            c.size);
                    raw[pass] = mbPerSecond(bytes, System.nanoTime() - start);
                }
                row[1 + clients] = median(warm);
                row[2 + clients] = median(raw);
            }
            if (cache.stats().origin().reads() != c.objects) {
                throw new IllegalStateException(
                        "the warm pass went to the origin: " + cache.stats().origin());
            }
        } finally {
            if (own != null) {
                own.close();
            }
        }
    }

    private static final int WARM_PASSES = 5;
    /** How long the last granary pass's listing took (part of its time). */
    private static volatile long listingNanos;

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    /** The warm ceiling's data: one off-heap buffer holding every object's bytes, a read-only slice per object. */
    private static ByteBuffer[] rawSlices(Config c, Arena arena) {
        MemorySegment all = arena.allocate((long) c.objects * c.size, 4096);
        ByteBuffer[] slices = new ByteBuffer[c.objects];
        for (int i = 0; i < c.objects; i++) {
            MemorySegment.copy(MemorySegment.ofArray(content(i, c.size)), 0, all, (long) i * c.size, c.size);
            slices[i] = all.asSlice((long) i * c.size, c.size).asByteBuffer().asReadOnlyBuffer();
        }
        return slices;
    }

    @FunctionalInterface
    interface Read {
        void read(String key, byte[] scratch) throws Exception;
    }

    /** K virtual threads take keys in order from a shared cursor; each has its own scratch array. */
    static void parallel(int k, List<String> order, Read read, int size) throws Exception {
        AtomicInteger next = new AtomicInteger();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < k; t++) {
                workers.add(threads.submit(() -> {
                    byte[] scratch = new byte[size];
                    for (int i = next.getAndIncrement(); i < order.size(); i = next.getAndIncrement()) {
                        read.read(order.get(i), scratch);
                    }
                    return null;
                }));
            }
            for (var w : workers) {
                w.get();
            }
        }
    }

    private static long plainPass(String subject, Config c, URI endpoint, List<String> order) throws Exception {
        String range = "bytes=0-" + (c.size - 1); // a plain ranged-GET client, as the origin's reads are ranged
        return switch (subject) {
            case "sync-apache" -> {
                try (S3Client client = plainClient(c, endpoint)) {
                    long start = System.nanoTime();
                    parallel(
                            c.concurrency,
                            order,
                            (key, scratch) -> client.getObject(
                                            b -> b.bucket(BUCKET).key(key).range(range), ResponseTransformer.toBytes())
                                    .asByteArrayUnsafe(),
                            c.size);
                    yield System.nanoTime() - start;
                }
            }
            case "sync-apache-pinned" -> { // diagnostic: the origin's request shape (Range + If-Match), no cache
                try (S3Client client = plainClient(c, endpoint)) {
                    Map<String, String> etags = new HashMap<>();
                    client.listObjectsV2Paginator(b -> b.bucket(BUCKET))
                            .contents()
                            .forEach(o -> etags.put(o.key(), o.eTag()));
                    long start = System.nanoTime(); // the read phase, as for granary: the listing is not timed
                    parallel(
                            c.concurrency,
                            order,
                            (key, scratch) -> client.getObject(
                                            b -> b.bucket(BUCKET)
                                                    .key(key)
                                                    .range(range)
                                                    .ifMatch(etags.get(key)),
                                            ResponseTransformer.toBytes())
                                    .asByteArrayUnsafe(),
                            c.size);
                    yield System.nanoTime() - start;
                }
            }
            case "async-netty" -> {
                try (S3AsyncClient client = S3AsyncClient.builder()
                        .endpointOverride(endpoint)
                        .forcePathStyle(true)
                        .region(Region.US_EAST_1)
                        .credentialsProvider(S3ProxyServer.credentials())
                        .httpClientBuilder(NettyNioAsyncHttpClient.builder()
                                .maxConcurrency(c.concurrency)
                                .maxPendingConnectionAcquires(c.objects))
                        .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                        .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                        .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                        .build()) {
                    yield asyncPass(
                            c,
                            order,
                            key -> client.getObject(
                                    b -> b.bucket(BUCKET).key(key).range(range), AsyncResponseTransformer.toBytes()));
                }
            }
            case "crt" -> {
                try (S3AsyncClient client = crtClient(c, endpoint)) {
                    yield asyncPass(
                            c,
                            order,
                            key -> client.getObject(
                                    b -> b.bucket(BUCKET).key(key).range(range), AsyncResponseTransformer.toBytes()));
                }
            }
            default ->
                throw new IllegalArgumentException(
                        "subject: '" + subject + "' (expected: granary, sync-apache, async-netty or crt)");
        };
    }

    /** The CRT subject's client: K concurrent requests, no checksums. */
    // checksumValidationEnabled(false): the CRT subject as measured for decision 0004; its successors
    // (requestChecksumCalculation, responseChecksumValidation) are not known to set the CRT's native checksum
    // switch the same way, and a changed subject would not compare with the recorded figures.
    @SuppressWarnings("deprecation")
    private static S3AsyncClient crtClient(Config c, URI endpoint) {
        return S3AsyncClient.crtBuilder()
                .endpointOverride(endpoint)
                .forcePathStyle(true)
                .region(Region.US_EAST_1)
                .credentialsProvider(S3ProxyServer.credentials())
                .maxConcurrency(c.concurrency)
                .checksumValidationEnabled(false)
                .build();
    }

    /** The plain synchronous client: Apache, K connections, no retries, no checksums beyond what S3 requires. */
    private static S3Client plainClient(Config c, URI endpoint) {
        return plainClient(c.concurrency, endpoint);
    }

    /** The plain peer's client: sync Apache with {@code concurrency} connections, no retries, no checksums. */
    @SuppressWarnings("deprecation") // ApacheHttpClient: S3Origin's own client (decision 0004), compared like for like
    static S3Client plainClient(int concurrency, URI endpoint) {
        return clientBuilder(ApacheHttpClient.builder().maxConnections(concurrency), endpoint)
                .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry()))
                .build();
    }

    /**
     * A synchronous client of the benchmark's S3 server over the given Apache HTTP client: path-style, S3Proxy's
     * credentials, checksums only where S3 requires them (as {@link S3Origin} configures its own). Shared by the
     * plain loops of the S3 benchmarks; retries are the caller's choice.
     */
    @SuppressWarnings("deprecation") // ApacheHttpClient: S3Origin's own client (decision 0004), compared like for like
    static S3ClientBuilder clientBuilder(ApacheHttpClient.Builder http, URI endpoint) {
        return S3Client.builder()
                .endpointOverride(endpoint)
                .forcePathStyle(true)
                .region(Region.US_EAST_1)
                .credentialsProvider(S3ProxyServer.credentials())
                .httpClientBuilder(http)
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED);
    }

    /** K requests in flight, started as earlier ones complete. */
    private static long asyncPass(Config c, List<String> order, Function<String, CompletableFuture<?>> get)
            throws Exception {
        Semaphore inFlight = new Semaphore(c.concurrency);
        AtomicLong failures = new AtomicLong();
        List<CompletableFuture<?>> all = new ArrayList<>(order.size());
        long start = System.nanoTime();
        for (String key : order) {
            inFlight.acquire();
            all.add(get.apply(key).whenComplete((r, e) -> {
                if (e != null) {
                    failures.incrementAndGet();
                }
                inFlight.release();
            }));
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
        long nanos = System.nanoTime() - start;
        if (failures.get() > 0) {
            throw new IllegalStateException(failures.get() + " requests failed");
        }
        return nanos;
    }

    private static double naiveRate(Config c, URI endpoint, List<String> order) {
        int n = Math.min(c.naiveObjects, order.size());
        try (S3Client client = S3Client.builder()
                .endpointOverride(endpoint)
                .forcePathStyle(true)
                .region(Region.US_EAST_1)
                .credentialsProvider(S3ProxyServer.credentials())
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .build()) {
            long start = System.nanoTime();
            for (int i = 0; i < n; i++) {
                String key = order.get(i);
                client.getObject(b -> b.bucket(BUCKET).key(key), ResponseTransformer.toBytes());
            }
            return mbPerSecond((double) n * c.size, System.nanoTime() - start);
        }
    }

    private static void shuffle(List<String> list, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = list.size() - 1; i > 0; i--) {
            Collections.swap(list, i, random.nextInt(i + 1));
        }
    }
}
