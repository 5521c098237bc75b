package dev.granary.bench;

import dev.granary.CacheStats;
import dev.granary.Lease;
import dev.granary.TierStats;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import java.util.zip.CRC32;

/**
 * Granary in one command, on any machine with JDK 25: a cold epoch through a slow origin, then a warm one from
 * memory, every byte checked.
 *
 * <p>It writes a dataset of random files to a temporary directory ({@code train/000000.bin} …, 1 500 × 64 KiB by
 * default, a CRC32 kept per file), puts {@link PosixOrigin} over it behind a {@link LatencyOrigin} (5 ms per stat and
 * per read, standing in for an object store), builds a {@link TieredCache} with a {@link MemoryTier} that holds the
 * whole dataset, and reads every object twice, in a fresh shuffled order each pass, with 32 concurrent readers
 * (virtual threads). Each pass prints one line: objects, MB (10^6 bytes), seconds, MB/s, each tier's hit ratio,
 * origin reads and origin MB; the last line gives the warm/cold speed-up. The temporary directory is deleted.
 *
 * <p>Exit status 0 if every byte matched, no read failed and no lease was left open or leaked; 1 otherwise; 2 for bad
 * arguments.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@demo
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@demo -Ddemo.args="--latency-ms=20 --readers=64"
 * </pre>
 * Options ({@code --name=value}, or the system property {@code granary.demo.name}): {@code files} (1500),
 * {@code file-size} in bytes (65536), {@code latency-ms} (5), {@code readers} (32), {@code page-size} in bytes
 * (1048576), {@code passes} (2: one cold, then warm ones; a warm pass right after the cold one still runs partly
 * in a JVM that has not finished compiling, more passes show the steady state), {@code seed} (1).
 */
public final class Demo {

    private static final double MB = 1e6;

    private Demo() {}

    /** The demo's settings, validated. */
    record Config(int files, int fileSize, Duration latency, int readers, int pageSize, int passes, long seed) {

        Config {
            require(files >= 1, "files: " + files + " (expected: >= 1)");
            require(fileSize >= 1, "file-size: " + fileSize + " (expected: >= 1 byte)");
            require((long) files * fileSize <= (2L << 30),
                    "dataset: " + files + " x " + fileSize + " bytes (expected: at most 2 GiB)");
            require(!latency.isNegative(), "latency-ms: " + latency.toMillis() + " (expected: >= 0)");
            require(readers >= 1 && readers <= 10_000, "readers: " + readers + " (expected: 1..10000)");
            require(pageSize >= 4096 && pageSize <= (64 << 20),
                    "page-size: " + pageSize + " (expected: 4096..67108864 bytes)");
            require(passes >= 2 && passes <= 100, "passes: " + passes + " (expected: 2..100)");
        }

        long datasetBytes() {
            return (long) files * fileSize;
        }

        static Config parse(String[] args) {
            String files = option(args, "files", "1500");
            String fileSize = option(args, "file-size", "65536");
            String latency = option(args, "latency-ms", "5");
            String readers = option(args, "readers", "32");
            String pageSize = option(args, "page-size", "1048576");
            String passes = option(args, "passes", "2");
            String seed = option(args, "seed", "1");
            for (String arg : args) {
                if (!arg.isBlank() && !arg.matches("--(files|file-size|latency-ms|readers|page-size|passes|seed)=.*")) {
                    throw new IllegalArgumentException("argument: '" + arg + "' (expected: --files=N, --file-size=BYTES,"
                            + " --latency-ms=MS, --readers=N, --page-size=BYTES, --passes=N or --seed=N)");
                }
            }
            return new Config(number(files, "files"), number(fileSize, "file-size"),
                    Duration.ofNanos(Math.round(decimal(latency, "latency-ms") * 1e6)), number(readers, "readers"),
                    number(pageSize, "page-size"), number(passes, "passes"), number(seed, "seed"));
        }

        private static String option(String[] args, String name, String fallback) {
            String value = System.getProperty("granary.demo." + name, fallback);
            for (String arg : args) {
                if (arg.startsWith("--" + name + "=")) {
                    value = arg.substring(name.length() + 3);
                }
            }
            return value;
        }

        private static int number(String value, String name) {
            try {
                return Integer.parseInt(value.strip().replace("_", ""));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(name + ": '" + value + "' (expected: an integer)", e);
            }
        }

        private static double decimal(String value, String name) {
            try {
                return Double.parseDouble(value.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(name + ": '" + value + "' (expected: a number)", e);
            }
        }

        private static void require(boolean condition, String message) {
            if (!condition) {
                throw new IllegalArgumentException(message);
            }
        }
    }

    /** What one pass saw. */
    record Pass(int objects, long bytes, double seconds, long mismatches, long errors, CacheStats stats) {

        double mbPerSecond() {
            return bytes / MB / seconds;
        }
    }

    /**
     * Runs the demo.
     *
     * @param args options, see the class comment
     * @throws Exception if the dataset cannot be written or the cache fails outside a read
     */
    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        Config config;
        try {
            config = Config.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("granary demo: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path dir = Files.createTempDirectory("granary-demo-");
        boolean ok;
        try {
            ok = run(config, dir);
        } finally {
            deleteTree(dir);
        }
        System.exit(ok ? 0 : 1);
    }

    private static boolean run(Config config, Path dir) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        String[] keys = new String[config.files()];
        long[] crcs = new long[config.files()];
        generate(config, dir, keys, crcs);
        System.out.printf("dataset: %d files x %d bytes (%.1f MB) under %s, written in %.2f s%n", config.files(),
                config.fileSize(), config.datasetBytes() / MB, dir.resolve("train"), (System.nanoTime() - t0) / 1e9);

        // Room for the whole dataset: objects smaller than a page are pages of their own size; slabs are 64 MiB.
        long capacity = Math.max(config.datasetBytes() + config.datasetBytes() / 16 + (128L << 20), 64L << 20);
        MemoryTier memory = MemoryTier.builder().capacity(capacity).slabSize(Math.max(64L << 20, config.pageSize()))
                .build();
        LatencyOrigin origin = LatencyOrigin.of(PosixOrigin.of(dir), config.latency());
        System.out.printf("origin: %s; cache: memory tier %.0f MB, page size %d; %d readers%n", origin,
                capacity / MB, config.pageSize(), config.readers());

        boolean ok = true;
        List<Pass> passes = new ArrayList<>();
        long openLeases;
        long leakedLeases;
        try (TieredCache cache = TieredCache.builder(origin).tier(memory).pageSize(config.pageSize()).build()) {
            for (int p = 1; p <= config.passes(); p++) {
                passes.add(pass(cache, p, p == 1 ? "cold" : "warm", config, keys, crcs));
            }
            CacheStats end = cache.stats();
            openLeases = end.openLeases();
            leakedLeases = end.leakedLeases();
        }

        long reads = 0;
        long mismatches = 0;
        long errors = 0;
        long warmOriginReads = 0;
        for (Pass p : passes) {
            reads += p.objects();
            mismatches += p.mismatches();
            errors += p.errors();
            if (p != passes.getFirst()) {
                warmOriginReads += p.stats().origin().reads();
            }
        }
        ok &= mismatches == 0 && errors == 0;
        Pass cold = passes.getFirst();
        Pass warm = passes.getLast();
        if (openLeases != 0 || leakedLeases != 0) {
            System.out.printf("FAIL: %d leases open, %d leaked at the end (expected: 0 and 0)%n", openLeases,
                    leakedLeases);
            ok = false;
        }
        if (warmOriginReads != 0) {
            System.out.printf("WARNING: the warm passes made %d origin reads (expected: 0; the tier holds the whole"
                    + " dataset)%n", warmOriginReads);
        }
        System.out.printf("summary: warm pass %d %.1fx faster than cold pass 1 (%.1f vs %.1f MB/s, origin latency %d ms,"
                        + " %d readers); %d reads, %d byte mismatches, %d errors, %d leases open, %d leaked%n",
                config.passes(), cold.seconds() / warm.seconds(), warm.mbPerSecond(), cold.mbPerSecond(),
                config.latency().toMillis(), config.readers(), reads, mismatches, errors, openLeases, leakedLeases);
        System.out.println(ok ? "OK" : "FAILED");
        return ok;
    }

    /** Writes the dataset: random bytes from the seed, one CRC32 per file. */
    private static void generate(Config config, Path dir, String[] keys, long[] crcs) throws IOException {
        Path train = Files.createDirectories(dir.resolve("train"));
        SplittableRandom random = new SplittableRandom(config.seed());
        byte[] bytes = new byte[config.fileSize()];
        CRC32 crc = new CRC32();
        for (int i = 0; i < config.files(); i++) {
            random.nextBytes(bytes);
            String name = String.format("%06d.bin", i);
            Files.write(train.resolve(name), bytes);
            crc.reset();
            crc.update(bytes);
            crcs[i] = crc.getValue();
            keys[i] = "train/" + name;
        }
    }

    /** Reads every object once, in a shuffled order, with {@code config.readers()} virtual threads; prints a line. */
    private static Pass pass(TieredCache cache, int number, String label, Config config, String[] keys, long[] crcs)
            throws InterruptedException {
        int n = keys.length;
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        SplittableRandom shuffle = new SplittableRandom(config.seed() * 31 + number);
        for (int i = n - 1; i > 0; i--) {
            int j = shuffle.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        AtomicInteger next = new AtomicInteger();
        AtomicLong bytes = new AtomicLong();
        AtomicLong mismatches = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        CacheStats before = cache.stats();
        long start = System.nanoTime();
        List<Thread> readers = new ArrayList<>(config.readers());
        for (int r = 0; r < config.readers(); r++) {
            readers.add(Thread.ofVirtual().name("demo-reader-", r).start(() -> {
                CRC32 crc = new CRC32();
                for (int i = next.getAndIncrement(); i < n; i = next.getAndIncrement()) {
                    int file = order[i];
                    try (Lease lease = cache.read(keys[file])) {
                        ByteBuffer view = lease.bytes().duplicate();
                        crc.reset();
                        crc.update(view);
                        bytes.addAndGet(lease.length());
                        if (lease.length() != config.fileSize() || crc.getValue() != crcs[file]) {
                            if (mismatches.getAndIncrement() < 5) {
                                System.out.printf("MISMATCH: %s: %d bytes, crc %08x (expected: %d bytes, crc %08x)%n",
                                        keys[file], lease.length(), crc.getValue(), config.fileSize(), crcs[file]);
                            }
                        }
                    } catch (IOException | RuntimeException e) {
                        if (errors.getAndIncrement() < 5) {
                            System.out.println("ERROR reading " + keys[file] + ": " + e);
                        }
                    }
                }
            }));
        }
        for (Thread reader : readers) {
            reader.join();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        CacheStats delta = cache.stats().minus(before);
        Pass pass = new Pass(n, bytes.get(), seconds, mismatches.get(), errors.get(), delta);
        StringBuilder hits = new StringBuilder();
        for (TierStats tier : delta.tiers()) {
            hits.append(hits.isEmpty() ? "" : ", ").append(String.format("%s %.3f", tier.name(), tier.hitRatio()));
        }
        System.out.printf("pass %d (%s): %d objects, %.1f MB, %.3f s, %.1f MB/s, hit ratio %s, origin reads %d,"
                        + " origin %.1f MB%s%n", number, label, n, pass.bytes() / MB, seconds, pass.mbPerSecond(),
                hits, delta.origin().reads(), delta.origin().bytes() / MB,
                pass.mismatches() + pass.errors() == 0 ? "" : String.format(" — %d MISMATCHES, %d ERRORS",
                        pass.mismatches(), pass.errors()));
        return pass;
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }
}
