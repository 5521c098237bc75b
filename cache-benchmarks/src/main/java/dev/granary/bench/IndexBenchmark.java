// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import dev.granary.Lease;
import dev.granary.LoaderSupport;
import dev.granary.ObjectInfo;
import dev.granary.OriginStats;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.IndexingProgress;
import dev.granary.loader.WebDataset;
import dev.granary.origin.s3.S3Origin;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Indexing WebDataset shards over a real S3 server behind object-store latency ({@link LoaderWorld}: S3Proxy, a fault
 * proxy adding a delay per request and capping each connection's bandwidth), the demo's dataset by default (32 shards
 * of 128 samples of ~16 KiB). Three ways, each on a new cache, in the same run:
 *
 * <ol>
 *   <li><b>(a) index files</b> — every shard has {@code <shard>.gidx} beside it (written by
 *       {@link WebDataset#writeIndex}, untimed): {@link WebDataset#of} lists the shards' prefix and reads each index
 *       file once;</li>
 *   <li><b>(b) sequential parts</b> — no index files: {@link WebDataset#of} reads each shard in 8 MiB parts (cached)
 *       and parses its headers from them;</li>
 *   <li><b>(c) per-member headers</b> — the library's indexing until issue 12 (commit 4718544), kept here as the
 *       baseline ({@link #perMemberScan}): a HEAD per shard, then one ranged read per tar header (with its 64 KiB
 *       read-ahead windows through runs of small members, which the demo's jpg+cls samples never trigger).</li>
 * </ol>
 * For each: indexing wall time and origin requests, then the first epoch of a {@link DataLoader} over the dataset
 * (shuffled, one ranged read per sample, every sample checked against its CRC32C), and index + first epoch. For (c)
 * the epoch runs over a dataset built from the same shards by {@code WebDataset.of} after the timed per-member scan
 * (untimed; its sample reads are the same ranged reads the old library made); its index time is the per-member scan's.
 * Rounds run c, b, a; ratios are taken within a round.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@index
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@index -Dindex.args="--rounds=3 --concurrency=64"
 * </pre>
 * Options {@code --name=value}: shards (32), samples-per-shard (128), sample-size (16384), latency-ms (20), mbps (25),
 * concurrency (16, as the demo), rounds (2), batch (32), workers (2). Exit status 2 for bad arguments, 1 if a sample
 * did not match.
 */
public final class IndexBenchmark {

    private static final double MB = 1e6;
    private static final Map<String, String> DEFAULTS = new TreeMap<>(Map.ofEntries(
            Map.entry("shards", "32"),
            Map.entry("samples-per-shard", "128"),
            Map.entry("sample-size", "16384"),
            Map.entry("latency-ms", "20"),
            Map.entry("mbps", "25"),
            Map.entry("concurrency", "16"),
            Map.entry("rounds", "2"),
            Map.entry("batch", "32"),
            Map.entry("workers", "2")));

    private static final AtomicLong MISMATCHES = new AtomicLong();

    private IndexBenchmark() {}

    /** One way's figures: index seconds and requests, first-epoch seconds and requests. */
    private record Result(double indexSeconds, long indexRequests, double epochSeconds, long epochRequests) {
        double total() {
            return indexSeconds + epochSeconds;
        }
    }

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
            System.err.println("index benchmark: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path dir = Files.createTempDirectory(Path.of(System.getProperty("granary.bench.dir", ".")), "index-bench-");
        int k = o.get("concurrency").intValue();
        try (LoaderWorld world = LoaderWorld.start(
                dir,
                o.get("shards").intValue(),
                o.get("samples-per-shard").intValue(),
                o.get("sample-size").intValue(),
                0,
                0,
                1)) {
            System.out.printf(
                    Locale.ROOT,
                    "index benchmark: %d shards, %d samples, %.1f MB; %d ms per request,"
                            + " %d MB/s per connection, concurrency %d; JVM %s, %d CPUs; options %s%n",
                    world.shards.size(),
                    world.samples,
                    world.shardBytes / MB,
                    o.get("latency-ms"),
                    o.get("mbps"),
                    k,
                    Runtime.version(),
                    Runtime.getRuntime().availableProcessors(),
                    o);
            List<Result[]> rounds = new ArrayList<>();
            for (int round = 1; round <= o.get("rounds"); round++) {
                deleteIndexes(world);
                world.network(Duration.ofMillis(o.get("latency-ms")), o.get("mbps") * 1_000_000);
                Result c = run(world, o, "c", "(c) per-member headers");
                Result b = run(world, o, "b", "(b) sequential parts");
                world.writeIndexes();
                Result a = run(world, o, "a", "(a) index files");
                rounds.add(new Result[] {a, b, c});
                System.out.printf(
                        Locale.ROOT,
                        "round %d: index time c/a %.0fx, c/b %.1fx; index + first epoch"
                                + " c/a %.2fx, c/b %.2fx; requests to index: a %d, b %d, c %d%n%n",
                        round,
                        c.indexSeconds() / a.indexSeconds(),
                        c.indexSeconds() / b.indexSeconds(),
                        c.total() / a.total(),
                        c.total() / b.total(),
                        a.indexRequests(),
                        b.indexRequests(),
                        c.indexRequests());
            }
            double[] ratio = new double[2];
            for (Result[] r : rounds) {
                ratio[0] += r[2].total() / r[0].total() / rounds.size();
                ratio[1] += r[2].total() / r[1].total() / rounds.size();
            }
            System.out.printf(
                    Locale.ROOT,
                    "mean over %d rounds: index + first epoch, c/a %.2fx, c/b %.2fx;" + " sample mismatches %d%n",
                    rounds.size(),
                    ratio[0],
                    ratio[1],
                    MISMATCHES.get());
            System.exit(MISMATCHES.get() == 0 ? 0 : 1);
        } finally {
            try (var paths = Files.walk(dir)) {
                for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    private static TieredCache cache(S3Origin origin, LoaderWorld world) {
        // Room for every sample and every part; slabs large enough to hold an 8 MiB part.
        return TieredCache.builder(origin)
                .tier(MemoryTier.builder()
                        .capacity(3 * world.shardBytes + (64L << 20))
                        .slabSize(16L << 20)
                        .build())
                .build();
    }

    /** Indexes the shards one way on a new cache, then runs the first epoch; prints and returns the figures. */
    private static Result run(LoaderWorld world, Map<String, Long> o, String way, String name) throws Exception {
        try (TieredCache cache = cache(world.origin(o.get("concurrency").intValue()), world)) {
            long t0 = System.nanoTime();
            WebDataset dataset;
            int[] fromFiles = {0};
            if (way.equals("c")) {
                perMemberScan(cache, world.shards);
            }
            double indexSeconds = (System.nanoTime() - t0) / 1e9;
            OriginStats indexed = cache.stats().origin();
            if (way.equals("c")) {
                dataset = WebDataset.of(cache, world.shards); // untimed: the epoch needs a dataset
            } else {
                dataset = WebDataset.of(cache, world.shards, (IndexingProgress p) -> {
                    if (p.fromIndexFile()) {
                        fromFiles[0]++;
                    }
                });
                indexSeconds = (System.nanoTime() - t0) / 1e9;
                indexed = cache.stats().origin();
            }
            long indexRequests = indexed.reads() + indexed.metadataRequests();
            OriginStats before = cache.stats().origin();
            long e0 = System.nanoTime();
            try (DataLoader<Integer> loader = DataLoader.builder(dataset, sample -> {
                                if (!LoaderWorld.verifyShardSample(sample)) {
                                    MISMATCHES.incrementAndGet();
                                }
                                return sample.index();
                            })
                            .batchSize(o.get("batch").intValue())
                            .shuffle(42)
                            .workers(o.get("workers").intValue())
                            .prefetch(8)
                            .build();
                    Epoch<Integer> epoch = loader.epoch(0)) {
                for (Batch<Integer> _ : epoch) {
                    // no model: the loader's own speed
                }
            }
            double epochSeconds = (System.nanoTime() - e0) / 1e9;
            OriginStats after = cache.stats().origin();
            long epochRequests = after.reads() + after.metadataRequests() - before.reads() - before.metadataRequests();
            System.out.printf(
                    Locale.ROOT,
                    "%-26s index %6.2f s, %5d requests%s; first epoch %6.2f s, %5d requests;"
                            + " index + epoch %6.2f s%n",
                    name,
                    indexSeconds,
                    indexRequests,
                    way.equals("c") ? "" : String.format(Locale.ROOT, " (%d shards from index files)", fromFiles[0]),
                    epochSeconds,
                    epochRequests,
                    indexSeconds + epochSeconds);
            return new Result(indexSeconds, indexRequests, epochSeconds, epochRequests);
        }
    }

    private static void deleteIndexes(LoaderWorld world) {
        try (var s3 = world.server.client()) {
            for (String shard : world.shards) {
                s3.deleteObject(b -> b.bucket(LoaderWorld.BUCKET).key(shard + ".gidx"));
            }
        }
    }

    // ------------------------------------------------------------------------------------------- (c) the baseline

    /** The read-ahead window of the old scan through runs of small members, and what made a member small. */
    private static final int WINDOW = 64 * 1024;

    private static final int SMALL_SPAN = 4096;

    /**
     * The library's indexing before issue 12, for the baseline: a {@code stat} (HEAD) per shard, then the shard's
     * headers walked one ranged read each (cached, as {@code readExtent} of 512 bytes), through runs of two or more
     * small members a 64 KiB window read uncached instead; shards in parallel, 64 at a time. Only what the demo's
     * shards need (ustar headers written by TarWriter); returns the number of regular members found.
     */
    static long perMemberScan(TieredCache cache, List<String> shards) throws Exception {
        Semaphore permits = new Semaphore(64);
        AtomicLong members = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        Exception[] failure = new Exception[1];
        for (String shard : shards) {
            permits.acquire();
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    members.addAndGet(scanShard(cache, cache.stat(shard)));
                } catch (Exception e) {
                    synchronized (failure) {
                        failure[0] = e;
                    }
                } finally {
                    permits.release();
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        if (failure[0] != null) {
            throw failure[0];
        }
        return members.get();
    }

    private static long scanShard(TieredCache cache, ObjectInfo info) throws IOException {
        LoaderSupport extents = cache.loaderSupport();
        long pos = 0;
        long members = 0;
        int smallRun = 0;
        byte[] window = null;
        long windowStart = 0;
        byte[] header = new byte[512];
        while (pos + 512 <= info.size()) {
            if (window != null && pos >= windowStart && pos + 512 <= windowStart + window.length) {
                System.arraycopy(window, (int) (pos - windowStart), header, 0, 512);
            } else if (smallRun >= 2) {
                int n = (int) Math.min(WINDOW, info.size() - pos);
                try (Lease lease = extents.readExtentUncached(info, pos, n)) {
                    window = new byte[n];
                    ByteBuffer b = lease.bytes();
                    b.get(b.position(), window, 0, n);
                    windowStart = pos;
                }
                System.arraycopy(window, 0, header, 0, 512);
            } else {
                try (Lease lease = extents.readExtent(info, pos, 512)) {
                    ByteBuffer b = lease.bytes();
                    b.get(b.position(), header, 0, 512);
                }
            }
            if (isZero(header)) {
                break;
            }
            long size = octal(header, 124, 12);
            members++;
            long next = pos + 512 + ((size + 511) & -512);
            smallRun = next - pos <= SMALL_SPAN ? smallRun + 1 : 0;
            pos = next;
        }
        return members;
    }

    private static boolean isZero(byte[] block) {
        for (byte b : block) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }

    private static long octal(byte[] header, int off, int len) {
        long value = 0;
        for (int i = off; i < off + len && header[i] >= '0' && header[i] <= '7'; i++) {
            value = value << 3 | header[i] - '0';
        }
        return value;
    }
}
