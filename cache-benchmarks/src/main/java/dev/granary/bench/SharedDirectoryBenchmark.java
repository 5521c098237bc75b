// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.FaultProxy;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.tier.DiskTier;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
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
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Several JVMs on one node reading the same dataset through one disk-tier directory (issue 15): origin bytes over the
 * dataset, and each JVM's warm read rate against the same number of JVMs each with a directory of its own, and
 * against one JVM alone — all in one run, rounds alternating the layouts.
 *
 * <h2>Setup</h2>
 * A <em>server</em> child JVM runs S3Proxy ({@link S3ProxyServer}) behind a {@link FaultProxy} adding
 * {@code latency-ms} per request, seeded once with {@code objects} objects of {@code size} bytes. Each <em>reader</em>
 * is a child JVM with a {@link TieredCache} over an {@link S3Origin} ({@code maxConcurrency(16)}) and one
 * {@link DiskTier} (no memory tier, so warm reads come from the directory; its pages are resident in the page cache,
 * as on a node with free RAM — the paged-out case is measured by the disk-read benchmarks). Each reader reads every
 * object whole with {@code threads} threads in an order of its own seed (cold), then, once every reader finished its
 * cold pass, reads them all again three times (warm, timed: the median pass is reported, and the CPU per pass).
 * Then each reader in turn, alone, reads them all three times more ({@code alone}: the median pass; the slowest
 * reader in the table, each one on the line below it with the CPU-seconds the other readers spent meanwhile — they
 * are not idle right after their own passes, which is why the first reader alone is the cleanest figure), so that
 * each JVM's own rate is measured without the others competing for the cores. Every 16th
 * object's bytes are checked.
 *
 * <h2>Layouts</h2>
 * <ul>
 *   <li>{@code one}: a single reader, a directory of its own;</li>
 *   <li>{@code private}: {@code jvms} readers at once, each a directory of its own (today's only choice);</li>
 *   <li>{@code shared}: {@code jvms} readers at once, one directory, {@code shared(true)}.</li>
 * </ul>
 * Figures: origin bytes over the dataset (summed over the readers), cold wall time, each reader's warm MB/s (the
 * slowest reported, and the mean), and the readers' CPU-seconds. On a machine with fewer cores than readers × threads
 * the warm passes of {@code jvms} readers share the cores: compare {@code shared} with {@code private} (same
 * contention), and read {@code one} as the figure of an uncontended process.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@shared-dir -Dshared.args="--rounds=3"
 * </pre>
 * Options {@code --name=value}: objects (1024), size (131072), jvms (4), threads (8), latency-ms (20), rounds (3).
 */
public final class SharedDirectoryBenchmark {

    private static final String BUCKET = "shared-bench";
    /** Warm passes per reader: the median's rate is reported (the first pays for the JIT), CPU per pass. */
    private static final int WARM_PASSES = 3;

    private SharedDirectoryBenchmark() {}

    record Config(int objects, int size, int jvms, int threads, int latencyMs, int rounds) {

        static Config parse(String[] args) {
            int objects = 1024;
            int size = 128 << 10;
            int jvms = 4;
            int threads = 8;
            int latency = 20;
            int rounds = 3;
            for (String arg : args) {
                String[] kv = arg.replaceFirst("^--", "").split("=", 2);
                if (kv.length != 2) {
                    throw new IllegalArgumentException("option: '" + arg + "' (expected: --name=value)");
                }
                int v = Integer.parseInt(kv[1]);
                switch (kv[0]) {
                    case "objects" -> objects = v;
                    case "size" -> size = v;
                    case "jvms" -> jvms = v;
                    case "threads" -> threads = v;
                    case "latency-ms" -> latency = v;
                    case "rounds" -> rounds = v;
                    default ->
                        throw new IllegalArgumentException("option: '" + kv[0] + "' (expected: objects, size,"
                                + " jvms, threads, latency-ms or rounds)");
                }
            }
            return new Config(objects, size, jvms, threads, latency, rounds);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("serve")) {
            serve(Path.of(args[1]), Integer.parseInt(args[2]), Integer.parseInt(args[3]), Integer.parseInt(args[4]));
            return;
        }
        if (args.length > 0 && args[0].equals("read")) {
            read(args);
            return;
        }
        Config c = Config.parse(args);
        Path dir = Path.of(System.getProperty("granary.bench.dir", "target")).resolve("shared-bench");
        Files.createDirectories(dir);
        double mib = c.objects * (double) c.size / (1 << 20);
        System.out.printf(
                Locale.ROOT,
                "shared directory: %d objects x %d B = %.0f MiB; %d JVMs x %d threads; latency"
                        + " %d ms/request; %d rounds; JDK %s; %d CPUs%n",
                c.objects,
                c.size,
                mib,
                c.jvms,
                c.threads,
                c.latencyMs,
                c.rounds,
                Runtime.version(),
                Runtime.getRuntime().availableProcessors());
        Process server = start(
                List.of("-Xmx512m", "-XX:+UseSerialGC"),
                "serve",
                dir.toString(),
                Integer.toString(c.objects),
                Integer.toString(c.size),
                Integer.toString(c.latencyMs));
        try {
            BufferedReader out =
                    new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String endpoint = null;
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                if (line.startsWith("endpoint ")) {
                    endpoint = line.substring("endpoint ".length());
                    break;
                }
                System.out.println("server: " + line);
            }
            if (endpoint == null) {
                throw new IOException("the server ended before it printed its endpoint");
            }
            System.out.println(
                    "layout   round  origin/dataset  cold s  warm MB/s slowest  warm MB/s mean  CPU s/pass  warm misses"
                            + "  alone MB/s slowest");
            List<String> layouts = List.of("one", "private", "shared");
            for (int round = 0; round < c.rounds; round++) {
                for (int i = 0; i < layouts.size(); i++) {
                    String layout = layouts.get((i + round) % layouts.size());
                    runLayout(c, layout, round, dir, endpoint);
                }
            }
        } finally {
            server.getOutputStream().close();
            if (!server.waitFor(30, TimeUnit.SECONDS)) {
                server.descendants().forEach(ProcessHandle::destroyForcibly);
                server.destroyForcibly();
            }
        }
    }

    private static void runLayout(Config c, String layout, int round, Path dir, String endpoint) throws Exception {
        int jvms = layout.equals("one") ? 1 : c.jvms;
        Path base = dir.resolve("run-" + layout + "-" + round);
        deleteTree(base);
        List<Process> readers = new ArrayList<>();
        List<BufferedReader> outputs = new ArrayList<>();
        for (int j = 0; j < jvms; j++) {
            Path disk = layout.equals("shared") ? base.resolve("disk") : base.resolve("disk-" + j);
            Process p = start(
                    List.of("-Xmx512m", "-XX:MaxDirectMemorySize=256m"),
                    "read",
                    endpoint,
                    disk.toString(),
                    Boolean.toString(layout.equals("shared")),
                    Integer.toString(c.objects),
                    Integer.toString(c.size),
                    Integer.toString(c.threads),
                    Long.toString(round * 100L + j));
            readers.add(p);
            outputs.add(new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)));
        }
        try {
            for (BufferedReader out : outputs) {
                await(out, "ready");
            }
            long start = System.nanoTime();
            go(readers);
            double originBytes = 0;
            for (BufferedReader out : outputs) {
                originBytes += Double.parseDouble(await(out, "cold ").split(" ")[1]);
            }
            double coldSeconds = (System.nanoTime() - start) / 1e9;
            go(readers);
            double slowest = Double.MAX_VALUE;
            double sum = 0;
            double cpu = 0;
            long warmMisses = 0;
            for (BufferedReader out : outputs) {
                String[] f = await(out, "warm ").split(" ", 5);
                double rate = Double.parseDouble(f[1]);
                slowest = Math.min(slowest, rate);
                sum += rate;
                cpu += Double.parseDouble(f[2]);
                warmMisses += Long.parseLong(f[3]);
            }
            double soloSlowest = Double.MAX_VALUE;
            StringBuilder others = new StringBuilder();
            for (int j = 0; j < jvms; j++) {
                double before = othersCpu(readers, j);
                OutputStream in = readers.get(j).getOutputStream();
                in.write("solo\n".getBytes(StandardCharsets.UTF_8));
                in.flush();
                double alone = Double.parseDouble(await(outputs.get(j), "solo ").split(" ")[1]);
                soloSlowest = Math.min(soloSlowest, alone);
                others.append(String.format(
                        Locale.ROOT, " %.0f MB/s (others %.2f CPU-s);", alone, othersCpu(readers, j) - before));
            }
            double dataset = (double) c.objects * c.size;
            System.out.printf(
                    Locale.ROOT,
                    "%-8s %5d  %14.2f  %6.1f  %17.0f  %14.0f  %12.2f  %11d  %16.0f%n",
                    layout,
                    round,
                    originBytes / dataset,
                    coldSeconds,
                    slowest,
                    sum / jvms,
                    cpu,
                    warmMisses,
                    soloSlowest);
            if (jvms > 1) {
                System.out.println("  alone, in turn:" + others);
            }
        } finally {
            for (Process p : readers) {
                p.getOutputStream().close();
                if (!p.waitFor(60, TimeUnit.SECONDS)) {
                    p.destroyForcibly();
                }
            }
        }
        deleteTree(base);
    }

    /** CPU-seconds used so far by every reader but {@code j} (user + system, from the OS). */
    private static double othersCpu(List<Process> readers, int j) {
        double total = 0;
        for (int i = 0; i < readers.size(); i++) {
            if (i != j) {
                total += readers.get(i)
                        .info()
                        .totalCpuDuration()
                        .map(d -> d.toNanos() / 1e9)
                        .orElse(0.0);
            }
        }
        return total;
    }

    private static String await(BufferedReader out, String prefix) throws IOException {
        for (String line = out.readLine(); line != null; line = out.readLine()) {
            if (line.startsWith(prefix)) {
                return line;
            }
            System.out.println("reader: " + line);
        }
        throw new IOException("a reader ended before '" + prefix.strip() + "'");
    }

    private static void go(List<Process> readers) throws IOException {
        for (Process p : readers) {
            OutputStream in = p.getOutputStream();
            in.write('\n');
            in.flush();
        }
    }

    private static Process start(List<String> jvm, String... args) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>();
        command.add(java);
        command.addAll(jvm);
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-Dgranary.s3proxy.jar=" + System.getProperty("granary.s3proxy.jar"));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(SharedDirectoryBenchmark.class.getName());
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }));
        return p;
    }

    // ------------------------------------------------------------------------------------------------ the server

    private static void serve(Path dir, int objects, int size, int latencyMs) throws Exception {
        try (S3ProxyServer s3 = S3ProxyServer.start(dir.resolve("data"));
                FaultProxy proxy = FaultProxy.start(s3.port())) {
            Path marker = dir.resolve("seeded-" + objects + "x" + size);
            if (!Files.exists(marker)) {
                try (S3Client client = s3.client();
                        ExecutorService pool = Executors.newFixedThreadPool(8)) {
                    try {
                        client.createBucket(b -> b.bucket(BUCKET));
                    } catch (S3Exception e) {
                        if (e.statusCode() != 409) {
                            throw e;
                        }
                    }
                    List<CompletableFuture<Void>> puts = new ArrayList<>();
                    for (int i = 0; i < objects; i++) {
                        int index = i;
                        puts.add(CompletableFuture.runAsync(
                                () -> client.putObject(
                                        b -> b.bucket(BUCKET).key(key(index)),
                                        RequestBody.fromBytes(S3ReadBenchmark.content(index, size))),
                                pool));
                    }
                    CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new))
                            .join();
                }
                Files.writeString(marker, "");
            }
            proxy.latency(Duration.ofMillis(latencyMs));
            System.out.println("endpoint " + proxy.endpoint());
            System.out.flush();
            while (System.in.read() >= 0) {
                // until the parent closes our stdin (or dies)
            }
        }
    }

    static String key(int index) {
        return String.format("train/%06d.bin", index);
    }

    // ------------------------------------------------------------------------------------------------ a reader

    private static void read(String[] args) throws Exception {
        URI endpoint = URI.create(args[1]);
        Path disk = Path.of(args[2]);
        boolean shared = Boolean.parseBoolean(args[3]);
        int objects = Integer.parseInt(args[4]);
        int size = Integer.parseInt(args[5]);
        int threads = Integer.parseInt(args[6]);
        long seed = Long.parseLong(args[7]);
        long capacity = Math.max(64L << 20, 2L * objects * size);
        S3Origin origin = S3Origin.builder()
                .bucket(BUCKET)
                .endpoint(endpoint)
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .maxConcurrency(16)
                .build();
        DiskTier tier = DiskTier.builder()
                .directory(disk)
                .capacity(capacity)
                .shared(shared)
                .build();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (TieredCache cache = TieredCache.builder(origin).tier(tier).build()) {
            List<Integer> order = new ArrayList<>();
            for (int i = 0; i < objects; i++) {
                order.add(i);
            }
            Collections.shuffle(order, new Random(seed));
            System.out.println("ready");
            System.out.flush();
            in.readLine();
            pass(cache, order, size, threads);
            System.out.println("cold " + cache.stats().origin().bytes());
            System.out.flush();
            in.readLine();
            long reads0 = cache.stats().origin().reads();
            long cpu0 = cpuNanos();
            double[] rates = new double[WARM_PASSES];
            for (int p = 0; p < WARM_PASSES; p++) {
                long t0 = System.nanoTime();
                pass(cache, order, size, threads);
                rates[p] = objects * (double) size / 1e6 / ((System.nanoTime() - t0) / 1e9);
            }
            Arrays.sort(rates);
            System.out.printf(
                    Locale.ROOT,
                    "warm %.1f %.2f %d %s%n",
                    rates[WARM_PASSES / 2],
                    (cpuNanos() - cpu0) / 1e9 / WARM_PASSES,
                    cache.stats().origin().reads() - reads0,
                    Arrays.toString(rates));
            System.out.flush();
            // Alone: the parent lets one reader at a time read again, so each JVM's rate is measured without the
            // others competing for the cores.
            String line = in.readLine();
            if (line != null && line.equals("solo")) {
                double[] solo = new double[WARM_PASSES];
                for (int p = 0; p < WARM_PASSES; p++) {
                    long t0 = System.nanoTime();
                    pass(cache, order, size, threads);
                    solo[p] = objects * (double) size / 1e6 / ((System.nanoTime() - t0) / 1e9);
                }
                Arrays.sort(solo);
                System.out.printf(Locale.ROOT, "solo %.1f%n", solo[WARM_PASSES / 2]);
                System.out.flush();
                in.readLine(); // until the parent closes our stdin
            }
        }
    }

    private static void pass(TieredCache cache, List<Integer> order, int size, int threads) throws Exception {
        AtomicInteger next = new AtomicInteger();
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                done.add(pool.submit(() -> {
                    byte[] scratch = new byte[size];
                    for (int i = next.getAndIncrement(); i < order.size(); i = next.getAndIncrement()) {
                        int index = order.get(i);
                        try (Lease lease = cache.read(key(index))) {
                            ByteBuffer bytes = lease.bytes();
                            bytes.get(0, scratch, 0, bytes.remaining());
                        }
                        if (index % 16 == 0 && !Arrays.equals(scratch, S3ReadBenchmark.content(index, size))) {
                            throw new IllegalStateException("wrong bytes in " + key(index));
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        }
    }

    private static long cpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
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
