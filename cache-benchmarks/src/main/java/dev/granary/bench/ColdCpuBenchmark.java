// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.FaultProxy;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.http.apache.ApacheHttpClient;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;

/**
 * The CPU a reader process spends on a cold epoch over S3 (issue 17): Granary memory-only and memory + disk against a
 * plain 16-thread AWS SDK loop reading the same objects, all in one run, subjects alternated round by round.
 *
 * <h2>Setup</h2>
 * A <em>server</em> child JVM runs S3Proxy 4.1.0 ({@link S3ProxyServer}, itself a child JVM, filesystem backend) and a
 * {@link FaultProxy} in front of it adding {@code latency-ms} to every request (no bandwidth cap by default). So the
 * measured process — this one — holds only the readers: its CPU time ({@code OperatingSystemMXBean
 * .getProcessCpuTime}, user + system of every thread, GC and JIT included) across an epoch is the reader's cost. The
 * server's CPU over the same epoch (the child JVM and S3Proxy's, from {@link ProcessHandle.Info#totalCpuDuration()})
 * is printed beside it: on a 2-core box the server competes for the same cores.
 *
 * <h2>Subjects</h2>
 * <ul>
 *   <li>{@code sdk}: the plain loop a user would write — one {@code S3Client} built as {@link S3Origin} builds its own
 *       (sync, Apache HTTP client, {@code readers + 16} connections, the same timeouts, checksums
 *       {@code WHEN_REQUIRED}; the SDK's default retries, where the origin retries by itself),
 *       {@code readers} platform threads, each taking the next key and reading the object whole ({@code GetObject})
 *       into its own reused {@code byte[]}. It lists the bucket first, as Granary does (below).</li>
 *   <li>{@code memory}: a fresh {@link TieredCache} with one {@link MemoryTier} holding the data set, over an
 *       {@link S3Origin} with {@code maxConcurrency(readers)}; the same {@code readers} platform threads each
 *       {@code cache.read(key)} and copy the lease's bytes into their {@code byte[]} (so every subject ends with the
 *       bytes in the reader's array).</li>
 *   <li>{@code disk}: as {@code memory}, plus a {@link DiskTier} (inclusive tiering: every page lands in both) in a
 *       fresh temporary directory under {@code granary.bench.dir}.</li>
 *   <li>{@code sdk-ranged} (not in the default list): the plain loop sending the request {@link S3Origin} sent
 *       before it dropped the {@code Range} of whole-object reads: {@code Range: bytes=0-(size-1)} and
 *       {@code If-Match} with the ETag from the listing.</li>
 *   <li>{@code memory-touched} (not in the default list): as {@code memory}, but the cache first reads the epoch
 *       untimed and invalidates every object, so the timed cold epoch fills memory the tier has already faulted in:
 *       what the kernel's first touch of fresh memory costs the {@code memory} subject (the plain loop reuses one
 *       array per thread on a pre-touched heap).</li>
 *   <li>{@code memory-s3client}, {@code disk-s3client} (not in the default list): as {@code memory} and
 *       {@code disk} with {@code S3Origin.Builder.directGet(false)}: every ranged GET through the S3 client's request
 *       pipeline, as before decision 0012 (the default subjects take the direct GET: signed by the origin, sent
 *       through the same Apache client). Each Granary subject checks how many GETs went the direct path.</li>
 *   <li>{@code memory-pretouch}, {@code disk-pretouch} (not in the default list): as {@code memory} and
 *       {@code disk}, with {@code MemoryTier.builder().preTouch(true)}: the memory tier reserves and touches its whole
 *       capacity when the cache is built, before the timed epoch (as {@code -XX:+AlwaysPreTouch} does for the heap
 *       every subject's loop reads into), so the epoch fills memory the kernel already backs.</li>
 *   <li>{@code disk-direct}, {@code disk-pretouch-direct} (not in the default list): as {@code disk} and
 *       {@code disk-pretouch} with {@code DiskTier.Builder.directWrites(true)}: pages written to the disk tier with
 *       {@code O_DIRECT}, not copied into the page cache (decision 0015).</li>
 *   <li>{@code disk-nowriteback} (not in the default list): as {@code disk} with
 *       {@code DiskTier.Builder.writebackEvery(0)}: the pages the disk tier wrote left dirty for the kernel's flusher,
 *       as before decision 0016 (the default hands them to writeback every 8 MiB of a segment).</li>
 *   <li>{@code memory-vt}, {@code disk-vt} (not in the default list): as {@code memory} and {@code disk} with each
 *       fill on a virtual thread of its own (system property {@code granary.fillThreads=virtual} while the cache is
 *       built), as fills ran before decision 0010: the before/after of that decision in one run.</li>
 * </ul>
 * Every round builds fresh clients and caches (outside the timed epoch; connections are opened inside it, for every
 * subject alike). Every subject lists the bucket once before its epoch (Granary through {@code cache.list("")}, so no
 * object needs a HEAD; the plain loop to learn its keys): timed and its CPU reported on its own, not in the epoch.
 * A listing reshapes the type profiles of SDK code both paths share (the XML unmarshaller, collection helpers: JFR
 * shows {@code jdk.Deoptimization} there), so listing in one subject only would put the recompilation in its epoch.
 * Every 64th object's bytes are checked.
 * Two warm-up passes of every subject over {@code warmup} objects run first (JIT, the server's caches).
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@coldcpu -Dcoldcpu.args="--rounds=5"
 * </pre>
 * Options {@code --name=value}: objects (4000), size (131072), readers (16), latency-ms (20), mbps (0: no cap),
 * rounds (5), warmup (400), subjects (sdk,memory,disk; also sdk-ranged, memory-touched, memory-vt, disk-vt,
 * memory-s3client, disk-s3client, memory-pretouch, disk-pretouch, disk-direct, disk-pretouch-direct,
 * disk-nowriteback), threads (true:
 * also print each epoch's CPU per thread group of this process, from {@code /proc/self/task}: readers, virtual
 * threads' carriers, GC, JIT). Extra JVM flags (a JFR recording, for one) go in {@code -Dcoldcpu.jvm="..."}.
 */
public final class ColdCpuBenchmark {

    private static final String BUCKET = "coldcpu";
    /** The subjects; a {@code -vt} suffix runs Granary's fills on virtual threads ({@code granary.fillThreads}). */
    private static final List<String> SUBJECTS = List.of(
            "sdk",
            "sdk-ranged",
            "memory",
            "disk",
            "memory-vt",
            "disk-vt",
            "memory-touched",
            "memory-s3client",
            "disk-s3client",
            "memory-pretouch",
            "disk-pretouch",
            "disk-direct",
            "disk-pretouch-direct",
            "disk-nowriteback");

    private ColdCpuBenchmark() {}

    record Config(
            int objects,
            int size,
            int readers,
            int latencyMs,
            int mbps,
            int rounds,
            int warmup,
            List<String> subjects,
            boolean threads) {
        static Config parse(String[] args) {
            return new Config(
                    intOption(args, "objects", 4000),
                    intOption(args, "size", 131072),
                    intOption(args, "readers", 16),
                    intOption(args, "latency-ms", 20),
                    intOption(args, "mbps", 0),
                    intOption(args, "rounds", 5),
                    intOption(args, "warmup", 400),
                    List.of(option(args, "subjects", "sdk,memory,disk").split(",")),
                    option(args, "threads", "true").equals("true"));
        }

        Config withObjects(int n) {
            return new Config(n, size, readers, latencyMs, mbps, 1, warmup, subjects, threads);
        }

        private static String option(String[] args, String name, String fallback) {
            return S3ReadBenchmark.option(args, name, fallback);
        }

        private static int intOption(String[] args, String name, int fallback) {
            return S3ReadBenchmark.intOption(args, name, fallback, name.equals("mbps") ? 0 : 1);
        }
    }

    /** One epoch's figures. */
    record Epoch(
            double mbPerSecond,
            double cpuSeconds,
            double serverCpuSeconds,
            double seconds,
            Map<String, Double> threads) {

        /**
         * {@return the epoch's CPU without the JIT compiler threads'} The JIT still compiles in measured rounds (up to
         * ~1.5 CPU-s of an epoch's 2-3 here, varying round to round and subject to subject), a cost a long-running
         * job pays once; this is what the readers and the library spent.
         */
        double cpuSecondsWithoutJit() {
            return cpuSeconds - threads.getOrDefault("C CompilerThre", 0.0);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("serve")) {
            serve(
                    Path.of(args[1]),
                    Integer.parseInt(args[2]),
                    Integer.parseInt(args[3]),
                    Integer.parseInt(args[4]),
                    Integer.parseInt(args[5]));
            return;
        }
        Config c = Config.parse(args);
        for (String s : c.subjects) {
            if (!SUBJECTS.contains(s)) {
                throw new IllegalArgumentException("subject: '" + s + "' (expected: one of " + SUBJECTS + ")");
            }
        }
        Path dir = Path.of(System.getProperty("granary.bench.dir", "target")).resolve("coldcpu-bench");
        Files.createDirectories(dir);
        System.out.printf(
                Locale.ROOT,
                "cold-epoch CPU: %d objects x %d B = %.0f MiB; %d readers; latency %d ms/request;"
                        + " bandwidth cap %s; %d rounds; JDK %s; %d CPUs; JVM %s%n",
                c.objects,
                c.size,
                c.objects * (double) c.size / (1 << 20),
                c.readers,
                c.latencyMs,
                c.mbps == 0 ? "none" : c.mbps + " MB/s per connection",
                c.rounds,
                Runtime.version(),
                Runtime.getRuntime().availableProcessors(),
                ManagementFactory.getRuntimeMXBean().getInputArguments());
        Process server = startServer(dir, c);
        try {
            URI endpoint = URI.create(awaitEndpoint(server));
            run(c, endpoint, dir, server);
        } finally {
            server.getOutputStream().close(); // the server stops when its stdin closes
            if (!server.waitFor(30, TimeUnit.SECONDS)) {
                server.descendants().forEach(ProcessHandle::destroyForcibly);
                server.destroyForcibly();
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ the server

    private static Process startServer(Path dir, Config c) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(
                java,
                "-Xmx512m",
                "-XX:+UseSerialGC",
                "-Dgranary.s3proxy.jar=" + System.getProperty("granary.s3proxy.jar"),
                "-cp",
                System.getProperty("java.class.path"),
                ColdCpuBenchmark.class.getName(),
                "serve",
                dir.toString(),
                Integer.toString(c.objects),
                Integer.toString(c.size),
                Integer.toString(c.latencyMs),
                Integer.toString(c.mbps)));
        Process p = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }));
        return p;
    }

    private static String awaitEndpoint(Process server) throws IOException {
        BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
        for (String line = out.readLine(); line != null; line = out.readLine()) {
            if (line.startsWith("endpoint ")) {
                return line.substring("endpoint ".length());
            }
            System.out.println("server: " + line);
        }
        throw new IOException("the server child JVM ended before it printed its endpoint (exit "
                + server.onExit().join().exitValue() + ")");
    }

    /** The child: S3Proxy (seeded once), a FaultProxy with the latency in front; runs until stdin closes. */
    private static void serve(Path dir, int objects, int size, int latencyMs, int mbps) throws Exception {
        try (S3ProxyServer s3 = S3ProxyServer.start(dir.resolve("data"));
                FaultProxy proxy = FaultProxy.start(s3.port())) {
            seed(s3, dir, objects, size);
            proxy.latency(Duration.ofMillis(latencyMs)).bandwidth(mbps * 1_000_000L);
            System.out.println("endpoint " + proxy.endpoint());
            System.out.flush();
            while (System.in.read() >= 0) {
                // wait for the parent to close our stdin (or die)
            }
        }
    }

    private static void seed(S3ProxyServer server, Path dir, int objects, int size) throws Exception {
        Path marker = dir.resolve("seeded-" + objects + "x" + size);
        if (Files.exists(marker)) {
            return;
        }
        long start = System.nanoTime();
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < objects; i++) {
            keys.add(key(i));
        }
        S3ReadBenchmark.upload(server, BUCKET, keys, size);
        Files.writeString(marker, "");
        System.out.printf(Locale.ROOT, "seeded %d objects in %.1f s%n", objects, (System.nanoTime() - start) / 1e9);
    }

    static String key(int index) {
        return String.format("train/%06d.bin", index);
    }

    // ------------------------------------------------------------------------------------------------ the runs

    private static void run(Config c, URI endpoint, Path dir, Process server) throws Exception {
        List<String> order = new ArrayList<>();
        for (int i = 0; i < c.objects; i++) {
            order.add(key(i));
        }
        SplittableRandom random = new SplittableRandom(42);
        for (int i = order.size() - 1; i > 0; i--) {
            Collections.swap(order, i, random.nextInt(i + 1));
        }
        int warm = Math.min(c.warmup, c.objects);
        List<String> warmOrder = order.stream().filter(k -> index(k) < warm).toList();
        for (int pass = 0; pass < 2; pass++) { // twice: the JIT's cost stays out of the measured epochs
            for (String s : c.subjects) {
                epoch(s, c.withObjects(warm), endpoint, dir, warmOrder, server);
            }
        }
        List<String> threadLines = new ArrayList<>();
        Map<String, List<Epoch>> results = new LinkedHashMap<>();
        c.subjects.forEach(s -> results.put(s, new ArrayList<>()));
        for (int round = 1; round <= c.rounds; round++) {
            List<String> subjects = new ArrayList<>(c.subjects);
            if (round % 2 == 0) {
                Collections.reverse(subjects); // A B C, then C B A
            }
            StringBuilder line = new StringBuilder(String.format(
                    Locale.ROOT,
                    "round %d (load %.2f):",
                    round,
                    ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage()));
            for (String s : subjects) {
                Epoch e = epoch(s, c, endpoint, dir, order, server);
                results.get(s).add(e);
                line.append(String.format(
                        Locale.ROOT,
                        "  %s %.1f MB/s %.2f cpu-s (server %.2f) %.1f s",
                        s,
                        e.mbPerSecond,
                        e.cpuSeconds,
                        e.serverCpuSeconds,
                        e.seconds));
                {
                    line.append(String.format(
                            Locale.ROOT, " [listing %.1f s, %.2f cpu-s]", listingNanos / 1e9, listingCpuNanos / 1e9));
                }
                line.append(';');
                if (c.threads) {
                    StringBuilder t = new StringBuilder("    " + s + " threads (cpu-s):");
                    e.threads.entrySet().stream()
                            .filter(g -> g.getValue() >= 0.05)
                            .sorted(Map.Entry.<String, Double>comparingByValue().reversed())
                            .forEach(g -> t.append(String.format(Locale.ROOT, " [%s] %.2f", g.getKey(), g.getValue())));
                    threadLines.add(t.toString());
                }
            }
            System.out.println(line);
            threadLines.forEach(System.out::println);
            threadLines.clear();
        }
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "%-8s %-26s %-26s %-26s %-26s %-26s %-26s%n",
                "subject",
                "MB/s median (min-max)",
                "reader cpu-s/epoch",
                "cpu / sdk (per round)",
                "MB/s / sdk (per round)",
                "cpu-s without JIT",
                "without JIT / sdk");
        List<Epoch> sdk = results.get("sdk");
        for (var entry : results.entrySet()) {
            List<Epoch> es = entry.getValue();
            String cpuRatio = "-";
            String rateRatio = "-";
            String noJitRatio = "-";
            if (sdk != null && !entry.getKey().equals("sdk")) {
                double[] cr = new double[es.size()];
                double[] rr = new double[es.size()];
                double[] nr = new double[es.size()];
                for (int i = 0; i < es.size(); i++) {
                    cr[i] = es.get(i).cpuSeconds / sdk.get(i).cpuSeconds;
                    rr[i] = es.get(i).mbPerSecond / sdk.get(i).mbPerSecond;
                    nr[i] = es.get(i).cpuSecondsWithoutJit() / sdk.get(i).cpuSecondsWithoutJit();
                }
                cpuRatio = summary(cr, "%.2f");
                rateRatio = summary(rr, "%.2f");
                noJitRatio = summary(nr, "%.2f");
            }
            System.out.printf(
                    Locale.ROOT,
                    "%-8s %-26s %-26s %-26s %-26s %-26s %-26s%n",
                    entry.getKey(),
                    summary(es.stream().mapToDouble(Epoch::mbPerSecond).toArray(), "%.1f"),
                    summary(es.stream().mapToDouble(Epoch::cpuSeconds).toArray(), "%.2f"),
                    cpuRatio,
                    rateRatio,
                    summary(es.stream().mapToDouble(Epoch::cpuSecondsWithoutJit).toArray(), "%.2f"),
                    noJitRatio);
        }
        System.out.printf(
                Locale.ROOT,
                "(reader cpu-s: this process only, every thread; S3Proxy and the latency proxy"
                        + " run in child JVMs; without JIT: less the compiler threads'. load average at the end:"
                        + " %.2f)%n",
                ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    }

    static String summary(double[] values, String format) {
        double[] s = values.clone();
        Arrays.sort(s);
        return String.format(
                Locale.ROOT, format + " (" + format + "-" + format + ")", s[s.length / 2], s[0], s[s.length - 1]);
    }

    private static int index(String key) {
        return Integer.parseInt(key.substring(6, 12));
    }

    private static Epoch epoch(String subject, Config c, URI endpoint, Path dir, List<String> order, Process server)
            throws Exception {
        return switch (subject) {
            case "sdk", "sdk-ranged" -> {
                boolean ranged = subject.equals("sdk-ranged");
                try (S3Client s3 = sdkClient(c.readers, endpoint)) {
                    // A plain loader lists its keys too: the same work as Granary's listing before the epoch, so both
                    // enter it with the SDK's code compiled alike (a listing's XML reshapes the JIT's profiles).
                    long cpu = processCpuNanos();
                    long start = System.nanoTime();
                    Map<String, String> etags = new HashMap<>();
                    s3.listObjectsV2Paginator(b -> b.bucket(BUCKET))
                            .contents()
                            .forEach(o -> etags.put(o.key(), o.eTag()));
                    long listed = etags.size();
                    if (listed < c.objects) {
                        throw new IllegalStateException(
                                "listed " + listed + " objects (expected: >= " + c.objects + ")");
                    }
                    listingCpuNanos = processCpuNanos() - cpu;
                    listingNanos = System.nanoTime() - start;
                    String range = "bytes=0-" + (c.size - 1);
                    yield timed(c, order, server, (key, scratch) -> {
                        try (ResponseInputStream<GetObjectResponse> in = s3.getObject(
                                ranged
                                        ? b -> b.bucket(BUCKET)
                                                .key(key)
                                                .range(range)
                                                .ifMatch(etags.get(key))
                                        : b -> b.bucket(BUCKET).key(key))) {
                            int n = in.readNBytes(scratch, 0, scratch.length);
                            if (n != c.size || in.read() != -1) {
                                throw new IllegalStateException(key + ": " + n + " bytes (expected: " + c.size + ")");
                            }
                        }
                        check(key, scratch, c.size);
                    });
                }
            }
            case "memory",
                    "disk",
                    "memory-vt",
                    "disk-vt",
                    "memory-touched",
                    "memory-s3client",
                    "disk-s3client",
                    "memory-pretouch",
                    "disk-pretouch",
                    "disk-direct",
                    "disk-pretouch-direct",
                    "disk-nowriteback" -> {
                // Read when the cache is built: the -vt subjects put each fill on a virtual thread, as before
                // decision 0010, so that both run in one process, alternated.
                if (subject.endsWith("-vt")) {
                    System.setProperty("granary.fillThreads", "virtual");
                } else {
                    System.clearProperty("granary.fillThreads");
                }
                // -s3client: every ranged GET through the S3 client's pipeline, as before decision 0012.
                boolean directGet = !subject.endsWith("-s3client");
                S3Origin origin = S3Origin.builder()
                        .bucket(BUCKET)
                        .endpoint(endpoint)
                        .pathStyle(true)
                        .credentials(S3ProxyServer.credentials())
                        .maxConcurrency(c.readers)
                        .directGet(directGet)
                        .build();
                long capacity = (long) c.objects * c.size + (64L << 20);
                TieredCache.Builder builder = TieredCache.builder(origin)
                        .metadataTtl(Duration.ofHours(1)) // a slow epoch on a loaded box must not turn into HEADs
                        // memory-pretouch: the whole capacity reserved and touched here, at build, outside the epoch
                        .tier(MemoryTier.builder()
                                .capacity(capacity)
                                .preTouch(subject.contains("-pretouch"))
                                .build());
                Path diskDir = null;
                if (subject.startsWith("disk")) {
                    diskDir = Files.createTempDirectory(dir, "disk-");
                    DiskTier.Builder disk = DiskTier.builder()
                            .directory(diskDir)
                            .capacity(capacity)
                            .directWrites(subject.endsWith("-direct"));
                    if (subject.endsWith("-nowriteback")) {
                        disk.writebackEvery(0); // as before decision 0016; the others keep the tier's default
                    }
                    builder.tier(disk.build());
                }
                try (TieredCache cache = builder.build()) {
                    System.clearProperty("granary.fillThreads");
                    boolean touched = subject.equals("memory-touched");
                    Read read = (key, scratch) -> {
                        try (Lease lease = cache.read(key)) {
                            ByteBuffer b = lease.bytes();
                            if (b.remaining() != c.size) {
                                throw new IllegalStateException(
                                        key + ": " + b.remaining() + " bytes (expected: " + c.size + ")");
                            }
                            b.get(0, scratch, 0, c.size);
                        }
                        check(key, scratch, c.size);
                    };
                    if (touched) { // an untimed epoch, then every object invalidated: the tier's memory is faulted in
                        try (var listing = cache.list("")) {
                            var _ = listing.count(); // drained for its listing request; counted on the timed pass
                        }
                        timed(c, order, server, read);
                        order.forEach(cache::invalidate);
                    }
                    long cpu = processCpuNanos();
                    long start = System.nanoTime();
                    long listed;
                    try (var listing = cache.list("")) {
                        listed = listing.count();
                    }
                    if (listed < c.objects) {
                        throw new IllegalStateException(
                                "listed " + listed + " objects (expected: >= " + c.objects + ")");
                    }
                    listingCpuNanos = processCpuNanos() - cpu;
                    listingNanos = System.nanoTime() - start;
                    Epoch e = timed(c, order, server, read);
                    var stats = cache.stats().origin();
                    int passes = touched ? 2 : 1;
                    if (stats.reads() != (long) passes * order.size()
                            || stats.metadataRequests() != passes) { // listings
                        throw new IllegalStateException("expected one listing and one read per object: " + stats);
                    }
                    if (origin.directReads() != (directGet ? (long) passes * order.size() : 0)) {
                        throw new IllegalStateException(subject + ": " + origin.directReads() + " direct GETs, "
                                + origin.directFallbacks() + " fallbacks for " + order.size() + " objects");
                    }
                    yield e;
                } finally {
                    origin.close();
                    if (diskDir != null) {
                        S3ProxyServer.deleteTree(diskDir);
                    }
                }
            }
            default ->
                throw new IllegalArgumentException("subject: '" + subject + "' (expected: one of " + SUBJECTS + ")");
        };
    }

    /** How long and how much CPU the last Granary listing took (reported, not part of the epoch). */
    static volatile long listingNanos;

    static volatile long listingCpuNanos;

    private static void check(String key, byte[] scratch, int size) {
        int index = index(key);
        if (index % 64 == 0 && !Arrays.equals(scratch, 0, size, S3ReadBenchmark.content(index, size), 0, size)) {
            throw new IllegalStateException("wrong bytes for " + key);
        }
    }

    @FunctionalInterface
    interface Read {
        void read(String key, byte[] scratch) throws Exception;
    }

    /** {@code readers} platform threads take keys in order from a shared cursor; CPU and time around all of it. */
    private static Epoch timed(Config c, List<String> order, Process server, Read read) throws Exception {
        AtomicInteger next = new AtomicInteger();
        try (ExecutorService threads = Executors.newFixedThreadPool(c.readers)) {
            long serverCpu = serverCpuNanos(server);
            Map<String, Long> threadsBefore = threadCpuTicks();
            long cpu = processCpuNanos();
            long start = System.nanoTime();
            List<Future<?>> workers = new ArrayList<>();
            for (int t = 0; t < c.readers; t++) {
                workers.add(threads.submit(() -> {
                    byte[] scratch = new byte[c.size];
                    for (int i = next.getAndIncrement(); i < order.size(); i = next.getAndIncrement()) {
                        read.read(order.get(i), scratch);
                    }
                    return null;
                }));
            }
            for (Future<?> w : workers) {
                w.get();
            }
            long nanos = System.nanoTime() - start;
            double cpuSeconds = (processCpuNanos() - cpu) / 1e9;
            Map<String, Long> threadsAfter = threadCpuTicks();
            double serverSeconds = (serverCpuNanos(server) - serverCpu) / 1e9;
            double bytes = (double) order.size() * c.size;
            Map<String, Double> groups = new TreeMap<>();
            threadsAfter.forEach((tid, ticks) -> {
                String group = tid.substring(tid.indexOf(' ') + 1);
                double seconds = (ticks - threadsBefore.getOrDefault(tid, 0L)) / (double) CLOCK_TICKS;
                groups.merge(group, seconds, Double::sum);
            });
            return new Epoch(bytes / (nanos / 1e9) / 1e6, cpuSeconds, serverSeconds, nanos / 1e9, groups);
        }
    }

    /** Linux's USER_HZ: /proc's CPU times are in these ticks. */
    private static final int CLOCK_TICKS = 100;

    /**
     * Every OS thread of this process with its user + system CPU ticks, keyed "tid group", where the group is the
     * kernel's thread name with its digits dropped ("GC Thread#", "C2 CompilerThre", "ForkJoinPool--worker-", the
     * virtual threads' carriers): what the JVM's own threads (GC, JIT) cost beside the readers; each also as
     * "group (sys)", its system time alone (included in the group's). Empty off Linux.
     */
    private static Map<String, Long> threadCpuTicks() {
        Map<String, Long> ticks = new HashMap<>();
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : tasks.toList()) {
                try {
                    String stat = Files.readString(task.resolve("stat"));
                    int open = stat.indexOf('(');
                    int close = stat.lastIndexOf(')');
                    String name = stat.substring(open + 1, close).replaceAll("[0-9]+", "");
                    String[] fields = stat.substring(close + 2).split(" ");
                    long cpu = Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime
                    ticks.put(task.getFileName() + " " + name, cpu);
                    // The kernel's share on its own: socket calls, futex hand-offs, page faults.
                    ticks.put(task.getFileName() + " " + name + " (sys)", Long.parseLong(fields[12]));
                } catch (IOException | RuntimeException e) {
                    // the thread ended meanwhile
                }
            }
        } catch (IOException e) {
            return Map.of();
        }
        return ticks;
    }

    private static long processCpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    /** The server child's CPU and its descendants' (S3Proxy), as the kernel accounts it. */
    private static long serverCpuNanos(Process server) {
        long total = server.info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
        for (ProcessHandle h : server.descendants().toList()) {
            total += h.info().totalCpuDuration().map(Duration::toNanos).orElse(0L);
        }
        return total;
    }

    /** The plain loop's client: configured as {@link S3Origin} configures its own, with the SDK's default retries. */
    @SuppressWarnings("deprecation") // ApacheHttpClient: S3Origin's own client (decision 0004), compared like for like
    static S3Client sdkClient(int readers, URI endpoint) {
        return S3ReadBenchmark.clientBuilder(
                        ApacheHttpClient.builder()
                                .maxConnections(readers + 16)
                                .connectionTimeout(Duration.ofSeconds(10))
                                .socketTimeout(Duration.ofSeconds(10))
                                .connectionAcquisitionTimeout(Duration.ofSeconds(10))
                                .tcpKeepAlive(true),
                        endpoint)
                .build(); // the SDK's default retries, as a user's loop has them: S3Origin retries by itself
    }
}
