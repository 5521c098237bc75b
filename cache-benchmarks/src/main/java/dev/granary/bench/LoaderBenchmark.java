// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.sun.management.OperatingSystemMXBean;
import dev.granary.TierStats;
import dev.granary.TieredCache;
import dev.granary.bench.disk.DiskResidency;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.micrometer.DataLoaderMetrics;
import dev.granary.micrometer.TieredCacheMetrics;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordingFile;
import software.amazon.awssdk.core.sync.ResponseTransformer;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The loader end to end over a real S3 server ({@link LoaderWorld}: S3Proxy behind injected latency and a
 * per-connection bandwidth cap), in three parts, each with its ceiling or peer measured in the same run:
 *
 * <ol>
 *   <li><b>cold</b> — one epoch of a {@link DataLoader} over {@code Dataset.ofObjects} on an empty cache vs a plain
 *       parallel client (the AWS SDK's sync client, K virtual threads, ranged GETs of the same objects in the same
 *       order) with the same concurrency K, alternated A B, B A over {@code rounds}; both check every byte (CRC32C).
 *       Also the process CPU time per GiB delivered by each (S3Proxy runs in its own process and is not counted; the
 *       fault proxy is in this process and counted for both). Granary's listing is timed apart.</li>
 *   <li><b>hit</b> — {@code epochs} shuffled epochs through memory + disk tiers holding {@code cache-percent} of
 *       the dataset (a third in memory), driven by the loader, and the same undriven (the tiers' own W-TinyLFU and
 *       segment LRU): the steady-state byte hit ratio (epochs 3…) divided by the ceiling {@code (C_mem + C_disk)/N}.
 *       The driven cache then runs two more epochs, timed: the disk tier's segments resident in the page cache, then
 *       paged out with the tier open ({@code DiskResidency.pageOut}, residency printed): the hit ratio does not depend
 *       on the page cache, an epoch's MB/s does.</li>
 *   <li><b>stall</b> — a warm cache holding the whole dataset and a stand-in model of {@code compute-ms} per batch
 *       of {@code stall-batch}: the trainer's data-wait as a share of the epoch's wall time.</li>
 *   <li><b>observe</b> (only with {@code --only=4}) — the loader with and without observability, alternated A B,
 *       B A over {@code rounds}: observed = {@code TieredCacheMetrics} and {@code DataLoaderMetrics} bound to a
 *       Prometheus registry scraped every {@code scrape-ms}, and a JFR recording to disk with every
 *       {@code dev.granary.*} event enabled; each side one cold epoch on a new cache, then {@code warm-epochs} epochs
 *       from its memory tier. Reports observed / plain throughput, cold and warm.</li>
 * </ol>
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@loader
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@loader -Dloader.args="--only=2 --cache-percent=25"
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@loader -Dloader.args="--only=4 --objects=1024"
 * </pre>
 * Options {@code --name=value}: only (0 = parts 1-3, else 1, 2, 3 or 4), objects (4096), size (131072), concurrency
 * (64), latency-ms (20), mbps (25), rounds (3), batch (32), workers (2), epochs (4), cache-percent (50), stall-batch
 * (16), compute-ms (2), hit-latency-ms (1: the latency during the hit part, whose result does not depend on it),
 * fresh-cache (0: part 1 reuses one cache, emptied with {@code invalidate} before each round, so Granary's memory
 * has been touched before, as in a long-running job; 1: a new cache every round, whose memory the fill touches for
 * the first time — page faults a plain client's warm heap does not take), scrape-ms (1000) and warm-epochs (2) for
 * part 4.
 */
public final class LoaderBenchmark {

    private static final double MB = 1e6;
    private static final double GIB = 1L << 30;
    private static final long SEGMENT = 16L << 20;
    private static final Map<String, String> DEFAULTS = new TreeMap<>(Map.ofEntries(
            Map.entry("only", "0"),
            Map.entry("objects", "4096"),
            Map.entry("size", "131072"),
            Map.entry("concurrency", "64"),
            Map.entry("latency-ms", "20"),
            Map.entry("mbps", "25"),
            Map.entry("rounds", "3"),
            Map.entry("batch", "32"),
            Map.entry("workers", "2"),
            Map.entry("epochs", "4"),
            Map.entry("cache-percent", "50"),
            Map.entry("stall-batch", "16"),
            Map.entry("compute-ms", "2"),
            Map.entry("hit-latency-ms", "1"),
            Map.entry("fresh-cache", "0"),
            Map.entry("scrape-ms", "1000"),
            Map.entry("warm-epochs", "2")));
    private static final OperatingSystemMXBean OS =
            (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private LoaderBenchmark() {}

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
            System.err.println("loader benchmark: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path dir = Files.createTempDirectory(Path.of(System.getProperty("granary.bench.dir", ".")), "loader-bench-");
        int objects = o.get("objects").intValue();
        int size = o.get("size").intValue();
        System.out.printf(
                Locale.ROOT,
                "loader benchmark: %d objects x %d B = %.0f MiB; K=%d; %d ms/request;"
                        + " %d MB/s per connection; JVM %s, %d CPUs, load %.2f; options %s%n",
                objects,
                size,
                objects * (double) size / (1 << 20),
                o.get("concurrency"),
                o.get("latency-ms"),
                o.get("mbps"),
                Runtime.version(),
                Runtime.getRuntime().availableProcessors(),
                OS.getSystemLoadAverage(),
                o);
        long t0 = System.nanoTime();
        try (LoaderWorld world = LoaderWorld.start(dir, 0, 0, 0, objects, size, 1, true)) {
            System.out.printf(Locale.ROOT, "uploaded in %.1f s%n", (System.nanoTime() - t0) / 1e9);
            long only = o.get("only");
            if (only == 0 || only == 1) {
                cold(world, o);
            }
            if (only == 0 || only == 2) {
                hit(world, o, dir);
            }
            if (only == 0 || only == 3) {
                stall(world, o);
            }
            if (only == 4) {
                observe(world, o, dir);
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
        world.network(Duration.ofMillis(o.get("latency-ms")), o.get("mbps") * 1_000_000);
        List<String> order = new ArrayList<>(world.files);
        Collections.shuffle(order, new Random(7));
        System.out.println();
        System.out.println("1. cold epoch: Granary DataLoader vs a plain parallel client, same K, alternated");
        boolean fresh = o.get("fresh-cache") != 0;
        System.out.println(
                fresh
                        ? "(a new cache every round: its memory is touched for the first time)"
                        : "(one cache for every round, emptied by invalidate() before each: cold data, memory in use"
                                + " before)");
        TieredCache shared = fresh ? null : granaryCache(world, k);
        try {
            coldGranary(world, o, k, Math.min(256, world.files.size()), shared); // warm-up
            plain(world, k, order.subList(0, Math.min(256, order.size())));
            cold(world, o, k, order, shared);
        } finally {
            if (shared != null) {
                shared.close();
            }
        }
    }

    private static TieredCache granaryCache(LoaderWorld world, int k) {
        return TieredCache.builder(world.origin(k))
                .tier(MemoryTier.builder()
                        .capacity(world.fileBytes + (64L << 20))
                        .build())
                .build();
    }

    private static void cold(LoaderWorld world, Map<String, Long> o, int k, List<String> order, TieredCache shared)
            throws Exception {
        double bytes = world.fileBytes;
        List<double[]> rows = new ArrayList<>();
        for (int round = 1; round <= o.get("rounds"); round++) {
            double[] g;
            double[] p;
            if (round % 2 == 1) {
                g = coldGranary(world, o, k, -1, shared);
                p = plain(world, k, order);
            } else {
                p = plain(world, k, order);
                g = coldGranary(world, o, k, -1, shared);
            }
            double gRate = bytes / g[0] / MB;
            double pRate = bytes / p[0] / MB;
            rows.add(new double[] {
                gRate / pRate,
                (g[1] / (bytes / GIB)) / (p[1] / (bytes / GIB)),
                gRate,
                pRate,
                g[1] / (bytes / GIB),
                p[1] / (bytes / GIB)
            });
            System.out.printf(
                    Locale.ROOT,
                    "round %d: granary %.1f MB/s (listing %.0f ms apart), plain %.1f MB/s;"
                            + " CPU-s per GiB: granary %.2f, plain %.2f%n",
                    round,
                    gRate,
                    g[2] * 1e3,
                    pRate,
                    g[1] / (bytes / GIB),
                    p[1] / (bytes / GIB));
        }
        double model = Math.min(
                        k
                                * (double) o.get("size")
                                / (o.get("latency-ms") / 1e3 + o.get("size") / (o.get("mbps") * 1e6)),
                        1.9e9)
                / MB;
        S3ReadBenchmark.report("granary cold / plain", rows, r -> r[0]);
        S3ReadBenchmark.report("CPU per GiB granary / plain", rows, r -> r[1]);
        System.out.printf(Locale.ROOT, "(model min(K*S/(L+S/B), link) = %.0f MB/s)%n", model);
    }

    /**
     * {@return read seconds, CPU seconds, listing seconds} of one cold epoch (or of its first {@code limit}), on
     * {@code shared} emptied first, or on a new cache if it is null.
     */
    private static double[] coldGranary(LoaderWorld world, Map<String, Long> o, int k, int limit, TieredCache shared)
            throws Exception {
        if (shared != null) {
            for (String key : world.files) {
                shared.invalidate(key);
            }
            if (shared.stats().tiers().getFirst().usedBytes() != 0) {
                throw new IllegalStateException("not empty after invalidate: " + shared.stats());
            }
        }
        try (TieredCache own = shared == null ? granaryCache(world, k) : null) {
            TieredCache cache = shared == null ? own : shared;
            long l0 = System.nanoTime();
            Dataset dataset = Dataset.ofObjects(cache, "files/");
            if (limit > 0) {
                dataset = Dataset.ofKeys(cache, world.files.subList(0, limit));
            }
            double listing = (System.nanoTime() - l0) / 1e9;
            AtomicLong bad = new AtomicLong();
            try (DataLoader<Integer> loader = DataLoader.builder(dataset, s -> {
                        if (!LoaderWorld.verifyFile(s.bytes())) {
                            bad.incrementAndGet();
                        }
                        return s.index();
                    })
                    .batchSize(o.get("batch").intValue())
                    .shuffle(7)
                    .workers(o.get("workers").intValue())
                    .readAhead(Math.max(k, o.get("batch").intValue()))
                    .prefetch(Math.max(4, 2 * k / o.get("batch").intValue()))
                    .build()) {
                long cpu0 = OS.getProcessCpuTime();
                long start = System.nanoTime();
                long n = 0;
                try (Epoch<Integer> epoch = loader.epoch(0)) {
                    for (Batch<Integer> batch : epoch) {
                        n += batch.size();
                    }
                }
                double seconds = (System.nanoTime() - start) / 1e9;
                double cpu = (OS.getProcessCpuTime() - cpu0) / 1e9;
                if (bad.get() != 0 || n != dataset.size()) {
                    throw new IllegalStateException(
                            "granary: " + bad.get() + " bad samples, " + n + " of " + dataset.size() + " delivered");
                }
                return new double[] {seconds, cpu, listing};
            }
        }
    }

    /** {@return read seconds, CPU seconds} of K virtual threads doing ranged GETs of every object in order. */
    private static double[] plain(LoaderWorld world, int k, List<String> order) throws Exception {
        AtomicLong bad = new AtomicLong();
        try (S3Client client = S3ReadBenchmark.plainClient(k, world.proxy.endpoint())) {
            long cpu0 = OS.getProcessCpuTime();
            long start = System.nanoTime();
            S3ReadBenchmark.parallel(
                    k,
                    order,
                    (key, scratch) -> {
                        byte[] body = client.getObject(
                                        b -> b.bucket(LoaderWorld.BUCKET)
                                                .key(key)
                                                .range("bytes=0-"),
                                        ResponseTransformer.toBytes())
                                .asByteArrayUnsafe();
                        if (!LoaderWorld.verifyFile(ByteBuffer.wrap(body))) {
                            bad.incrementAndGet();
                        }
                    },
                    1);
            double seconds = (System.nanoTime() - start) / 1e9;
            double cpu = (OS.getProcessCpuTime() - cpu0) / 1e9;
            if (bad.get() != 0) {
                throw new IllegalStateException("plain: " + bad.get() + " bad objects");
            }
            return new double[] {seconds, cpu};
        }
    }

    // ------------------------------------------------------------------------------------------------ 2. hit

    private static void hit(LoaderWorld world, Map<String, Long> o, Path dir) throws Exception {
        world.network(Duration.ofMillis(o.get("hit-latency-ms")), o.get("mbps") * 1_000_000);
        long n = world.fileBytes;
        long c = n * o.get("cache-percent") / 100;
        long mem = c / 3;
        // The disk tier frees and fills whole segments: its usable capacity is a whole number of them.
        long disk = (c - mem) / SEGMENT * SEGMENT;
        double ceiling = (double) (mem + disk) / n;
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "2. hit ratio over %d shuffled epochs: memory %.0f MiB + disk %.0f MiB for"
                        + " %.0f MiB of data, ceiling (C_mem + C_disk)/N = %.3f%n",
                o.get("epochs"),
                mem / 1048576.0,
                disk / 1048576.0,
                n / 1048576.0,
                ceiling);
        for (boolean drive : new boolean[] {true, false}) {
            double[] ratios = epochs(world, o, dir.resolve(drive ? "disk-driven" : "disk-undriven"), mem, disk, drive);
            double steady = 0;
            int count = 0;
            StringBuilder line = new StringBuilder();
            for (int e = 0; e < ratios.length; e++) {
                line.append(String.format(Locale.ROOT, " %.3f", ratios[e]));
                if (e >= 2) {
                    steady += ratios[e];
                    count++;
                }
            }
            steady /= Math.max(1, count);
            System.out.printf(
                    Locale.ROOT,
                    "%-9s byte hit ratio per epoch:%s; steady state %.3f = %.3f of the" + " ceiling%n",
                    drive ? "driven" : "undriven",
                    line,
                    steady,
                    steady / ceiling);
        }
    }

    private static double[] epochs(
            LoaderWorld world, Map<String, Long> o, Path diskDir, long mem, long disk, boolean drive) throws Exception {
        double[] ratios = new double[o.get("epochs").intValue()];
        try (TieredCache cache = TieredCache.builder(
                        world.origin(o.get("concurrency").intValue()))
                .tier(MemoryTier.builder().capacity(mem).build())
                .tier(DiskTier.builder()
                        .directory(diskDir)
                        .capacity(disk)
                        .segmentSize(SEGMENT)
                        .build())
                .build()) {
            Dataset dataset = Dataset.ofObjects(cache, "files/");
            try (DataLoader<Integer> loader = DataLoader.builder(dataset, s -> s.index())
                    .batchSize(o.get("batch").intValue())
                    .shuffle(11)
                    .workers(o.get("workers").intValue())
                    .readAhead(o.get("concurrency").intValue())
                    .driveCache(drive)
                    .build()) {
                for (int e = 0; e < ratios.length; e++) {
                    long hit0 = hitBytes(cache);
                    LoaderStats before = loader.stats();
                    try (Epoch<Integer> epoch = loader.epoch(e)) {
                        for (Batch<Integer> batch : epoch) {
                            batch.size();
                        }
                    }
                    LoaderStats s = loader.stats().minus(before);
                    ratios[e] = (double) (hitBytes(cache) - hit0) / s.bytes();
                }
                if (drive) {
                    // The hit ratio does not depend on the page cache; the epoch's speed does. Two more epochs, the
                    // disk tier's segments resident, then paged out with the tier open (verified with mincore).
                    for (boolean resident : new boolean[] {true, false}) {
                        String state = resident
                                ? String.format(Locale.ROOT, "disk resident %.1f %%", 100 * DiskResidency.warm(diskDir))
                                : DiskResidency.pageOut(diskDir);
                        long hit0 = hitBytes(cache);
                        LoaderStats before = loader.stats();
                        long start = System.nanoTime();
                        try (Epoch<Integer> epoch = loader.epoch(ratios.length + (resident ? 0 : 1))) {
                            for (Batch<Integer> batch : epoch) {
                                batch.size();
                            }
                        }
                        double wall = (System.nanoTime() - start) / 1e9;
                        LoaderStats s = loader.stats().minus(before);
                        System.out.printf(
                                Locale.ROOT,
                                "driven, extra epoch with the disk tier %s: %.0f MB/s, hit"
                                        + " ratio %.3f (%s; misses go to the origin at %d ms)%n",
                                resident ? "resident" : "paged out",
                                s.bytes() / MB / wall,
                                (double) (hitBytes(cache) - hit0) / s.bytes(),
                                state,
                                o.get("hit-latency-ms"));
                    }
                }
            }
        }
        return ratios;
    }

    private static long hitBytes(TieredCache cache) {
        long sum = 0;
        for (TierStats t : cache.stats().tiers()) {
            sum += t.hitBytes();
        }
        return sum;
    }

    // ------------------------------------------------------------------------------------------------ 3. stall

    private static void stall(LoaderWorld world, Map<String, Long> o) throws Exception {
        world.network(Duration.ofMillis(o.get("hit-latency-ms")), o.get("mbps") * 1_000_000);
        int batch = o.get("stall-batch").intValue();
        long compute = o.get("compute-ms") * 1_000_000;
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "3. stall with a warm cache: %d ms of model per batch of %d (%.0f MB/s" + " needed)%n",
                o.get("compute-ms"),
                batch,
                batch * (double) o.get("size") / (compute / 1e9) / MB);
        try (TieredCache cache = TieredCache.builder(
                        world.origin(o.get("concurrency").intValue()))
                .tier(MemoryTier.builder()
                        .capacity(world.fileBytes + (64L << 20))
                        .build())
                .build()) {
            Dataset dataset = Dataset.ofObjects(cache, "files/");
            AtomicLong bad = new AtomicLong();
            try (DataLoader<Integer> loader = DataLoader.builder(dataset, s -> {
                        if (!LoaderWorld.verifyFile(s.bytes())) {
                            bad.incrementAndGet();
                        }
                        return s.index();
                    })
                    .batchSize(batch)
                    .shuffle(3)
                    .workers(o.get("workers").intValue())
                    .prefetch(8)
                    .build()) {
                for (int e = 0; e < 4; e++) {
                    LoaderStats before = loader.stats();
                    long start = System.nanoTime();
                    long first = 0;
                    try (Epoch<Integer> epoch = loader.epoch(e)) {
                        for (Batch<Integer> _ : epoch) {
                            if (first == 0) {
                                first = System.nanoTime() - start;
                            }
                            if (e > 0) {
                                model(compute);
                            }
                        }
                    }
                    double wall = (System.nanoTime() - start) / 1e9;
                    LoaderStats s = loader.stats().minus(before);
                    System.out.printf(
                            Locale.ROOT,
                            "epoch %d (%s): %.2f s, %.0f MB/s, data-wait %.2f %% of wall"
                                    + " (first batch after %.1f ms), mean ready batches at take %.1f, hit ratio %.3f%n",
                            e + 1,
                            e == 0 ? "cold, no model" : "warm",
                            wall,
                            s.bytes() / MB / wall,
                            100 * s.dataWaitNanos() / 1e9 / wall,
                            first / 1e6,
                            s.meanDepthAtTake(),
                            s.hitRatio());
                }
            }
            if (bad.get() != 0) {
                throw new IllegalStateException(bad.get() + " bad samples");
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ 4. observe

    private static void observe(LoaderWorld world, Map<String, Long> o, Path dir) throws Exception {
        world.network(Duration.ofMillis(o.get("latency-ms")), o.get("mbps") * 1_000_000);
        System.out.println();
        System.out.printf(
                Locale.ROOT,
                "4. observability overhead: plain vs Micrometer binders (Prometheus scrape"
                        + " every %d ms) + JFR recording of the dev.granary events; alternated over %d rounds%n",
                o.get("scrape-ms"),
                o.get("rounds"));
        observed(world, o, dir, false); // warm-up, both paths
        observed(world, o, dir, true);
        List<double[]> rows = new ArrayList<>();
        for (int round = 1; round <= o.get("rounds"); round++) {
            double[] plain;
            double[] seen;
            if (round % 2 == 1) {
                plain = observed(world, o, dir, false);
                seen = observed(world, o, dir, true);
            } else {
                seen = observed(world, o, dir, true);
                plain = observed(world, o, dir, false);
            }
            rows.add(new double[] {plain[0] / seen[0], plain[1] / seen[1]});
            System.out.printf(
                    Locale.ROOT,
                    "round %d: cold plain %.1f MB/s, observed %.1f MB/s; warm plain %.0f MB/s,"
                            + " observed %.0f MB/s (%d JFR events, %d scrapes)%n",
                    round,
                    world.fileBytes / plain[0] / MB,
                    world.fileBytes / seen[0] / MB,
                    warmBytes(world, o) / plain[1] / MB,
                    warmBytes(world, o) / seen[1] / MB,
                    (long) seen[2],
                    (long) seen[3]);
        }
        S3ReadBenchmark.report("cold observed / plain", rows, r -> r[0]);
        S3ReadBenchmark.report("warm observed / plain", rows, r -> r[1]);
    }

    private static double warmBytes(LoaderWorld world, Map<String, Long> o) {
        return (double) world.fileBytes * o.get("warm-epochs");
    }

    /**
     * {@return cold seconds, warm seconds, JFR events recorded, scrapes} of one cold epoch on a new cache and
     * {@code warm-epochs} from its memory, observed or not.
     */
    private static double[] observed(LoaderWorld world, Map<String, Long> o, Path dir, boolean observe)
            throws Exception {
        int k = o.get("concurrency").intValue();
        Path jfr = dir.resolve("observe.jfr");
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        try (TieredCache cache = granaryCache(world, k);
                Recording recording = new Recording()) {
            Dataset dataset = Dataset.ofObjects(cache, "files/");
            AtomicLong bad = new AtomicLong();
            AtomicLong scrapes = new AtomicLong();
            try (DataLoader<Integer> loader = DataLoader.builder(dataset, s -> {
                        if (!LoaderWorld.verifyFile(s.bytes())) {
                            bad.incrementAndGet();
                        }
                        return s.index();
                    })
                    .batchSize(o.get("batch").intValue())
                    .shuffle(7)
                    .workers(o.get("workers").intValue())
                    .readAhead(Math.max(k, o.get("batch").intValue()))
                    .prefetch(Math.max(4, 2 * k / o.get("batch").intValue()))
                    .build()) {
                Thread scraper = null;
                if (observe) {
                    new TieredCacheMetrics(cache, "bench", Tags.empty()).bindTo(registry);
                    new DataLoaderMetrics(loader, "bench", Tags.empty()).bindTo(registry);
                    for (String event :
                            List.of("OriginRead", "CoalescedMiss", "Eviction", "DiskRecovery", "BatchWait")) {
                        recording.enable("dev.granary." + event).withoutThreshold();
                    }
                    recording.setToDisk(true);
                    recording.setDestination(jfr);
                    recording.start();
                    long every = o.get("scrape-ms");
                    scraper = Thread.ofPlatform().daemon().name("bench-scraper").start(() -> {
                        while (!Thread.currentThread().isInterrupted()) {
                            if (registry.scrape().isEmpty()) {
                                throw new IllegalStateException("empty scrape");
                            }
                            scrapes.incrementAndGet();
                            LockSupport.parkNanos(every * 1_000_000);
                        }
                    });
                }
                double[] result = new double[4];
                try {
                    for (int e = 0; e <= o.get("warm-epochs"); e++) {
                        long start = System.nanoTime();
                        long n = 0;
                        try (Epoch<Integer> epoch = loader.epoch(e)) {
                            for (Batch<Integer> batch : epoch) {
                                n += batch.size();
                            }
                        }
                        if (n != dataset.size()) {
                            throw new IllegalStateException(n + " of " + dataset.size() + " samples delivered");
                        }
                        result[e == 0 ? 0 : 1] += (System.nanoTime() - start) / 1e9;
                    }
                } finally {
                    if (scraper != null) {
                        scraper.interrupt();
                        scraper.join();
                    }
                }
                if (bad.get() != 0) {
                    throw new IllegalStateException(bad.get() + " bad samples");
                }
                if (observe) {
                    recording.stop();
                    result[2] = RecordingFile.readAllEvents(jfr).stream()
                            .filter(ev -> ev.getEventType().getName().startsWith("dev.granary."))
                            .count();
                    result[3] = scrapes.get();
                    if (result[2] < dataset.size()) {
                        throw new IllegalStateException("only " + (long) result[2] + " Granary events recorded");
                    }
                }
                return result;
            }
        } finally {
            registry.close();
        }
    }

    private static void model(long nanos) {
        long end = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = end - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }
}
