// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import dev.granary.CacheStats;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.EpochPlan;
import dev.granary.loader.LoaderPlan;
import dev.granary.loader.WebDataset;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The dry run ({@code DataLoader.plan}) against the real thing, over a real S3 server behind 20 ms per request
 * ({@link LoaderWorld}): prints the plan of a few epochs — hits per tier, origin requests and bytes, request cost at
 * $0.0004 per 1 000 GETs — then runs those epochs and prints what {@code cache.stats()} measured, with the relative
 * error of each figure, and how long planning took against running. Twice per dataset: on fresh tiers, then after a
 * restart (cache closed, disk tier reopened warm, a fresh memory tier), where the plan must count the reopened disk
 * tier's pages as hits. Datasets: WebDataset shards (one extent per sample) and small objects (one page each), both
 * about {@code data-percent} % of the cache (memory + disk).
 *
 * <p>Options ({@code --name=value}): shards (16), samples-per-shard (256), sample-size (16384), files (2048),
 * file-size (16384), latency-ms (20), mbps (25), concurrency (64), epochs (4), memory-mib (8), disk-mib (16),
 * segment-mib (2), price-micro (400: dollars per 1 000 requests × 10^6).
 */
public final class PlanDemo {

    private static final Map<String, String> DEFAULTS = new TreeMap<>(Map.ofEntries(
            Map.entry("shards", "16"),
            Map.entry("samples-per-shard", "256"),
            Map.entry("sample-size", "16384"),
            Map.entry("files", "2048"),
            Map.entry("file-size", "16384"),
            Map.entry("latency-ms", "20"),
            Map.entry("mbps", "25"),
            Map.entry("concurrency", "64"),
            Map.entry("epochs", "4"),
            Map.entry("memory-mib", "8"),
            Map.entry("disk-mib", "16"),
            Map.entry("segment-mib", "2"),
            Map.entry("price-micro", "400")));

    private PlanDemo() {}

    /**
     * Runs the demo.
     *
     * @param args options, see the class comment
     * @throws Exception if the server cannot start or a read fails
     */
    public static void main(String[] args) throws Exception {
        Map<String, Long> o;
        try {
            o = Options.parse(args, DEFAULTS);
        } catch (IllegalArgumentException e) {
            System.err.println("plan demo: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path dir = Files.createTempDirectory(Path.of(System.getProperty("granary.bench.dir", ".")), "plan-demo-");
        double price = o.get("price-micro") / 1e6;
        System.out.printf(
                Locale.ROOT,
                "plan demo: memory %d MiB + disk %d MiB (segments of %d MiB); S3Proxy at %d ms"
                        + " per request, %d MB/s per connection, %d concurrent; $%.4f per 1000 requests; JVM %s, %d"
                        + " CPUs%n",
                o.get("memory-mib"),
                o.get("disk-mib"),
                o.get("segment-mib"),
                o.get("latency-ms"),
                o.get("mbps"),
                o.get("concurrency"),
                price,
                Runtime.version(),
                Runtime.getRuntime().availableProcessors());
        try (LoaderWorld world = LoaderWorld.start(
                dir,
                o.get("shards").intValue(),
                o.get("samples-per-shard").intValue(),
                o.get("sample-size").intValue(),
                o.get("files").intValue(),
                o.get("file-size").intValue(),
                3)) {
            world.network(Duration.ofMillis(o.get("latency-ms")), o.get("mbps") * 1_000_000);
            long cache = (o.get("memory-mib") + o.get("disk-mib")) << 20;
            System.out.printf(
                    Locale.ROOT,
                    "data: %d shards, %d samples, %.1f MiB (%.2f x the cache); %d files,"
                            + " %.1f MiB (%.2f x the cache)%n",
                    world.shards.size(),
                    world.samples,
                    world.shardBytes / 1048576.0,
                    world.shardBytes / (double) cache,
                    world.files.size(),
                    world.fileBytes / 1048576.0,
                    world.fileBytes / (double) cache);
            int epochs = o.get("epochs").intValue();
            double worst = 0;
            for (String kind : List.of("webdataset", "objects")) {
                Path disk = dir.resolve("disk-" + kind);
                for (String phase : List.of("fresh tiers", "after a restart (disk tier reopened warm)")) {
                    try (TieredCache c = cache(world, o, disk)) {
                        Dataset dataset = kind.equals("webdataset")
                                ? WebDataset.of(c, world.shards)
                                : Dataset.ofObjects(c, "files/");
                        worst = Math.max(worst, planAndRun(kind + ", " + phase, dataset, epochs, price));
                    }
                }
            }
            System.out.printf(Locale.ROOT, "%nlargest relative error of any figure: %.2f %%%n", 100 * worst);
        } finally {
            try (var paths = Files.walk(dir)) {
                for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    private static TieredCache cache(LoaderWorld world, Map<String, Long> o, Path disk) {
        return TieredCache.builder(world.origin(o.get("concurrency").intValue()))
                .tier(MemoryTier.builder().capacity(o.get("memory-mib") << 20).build())
                .tier(DiskTier.builder()
                        .directory(disk)
                        .capacity(o.get("disk-mib") << 20)
                        .segmentSize(o.get("segment-mib") << 20)
                        .build())
                .build();
    }

    /** Plans, runs, prints both; {@return the largest relative error} */
    private static double planAndRun(String title, Dataset dataset, int epochs, double price) {
        try (DataLoader<Long> loader = DataLoader.builder(dataset, sample -> sample.size())
                .batchSize(32)
                .shuffle(42)
                .workers(2)
                .readAhead(256)
                .build()) {
            long t0 = System.nanoTime();
            LoaderPlan plan = loader.plan(epochs);
            double planSeconds = (System.nanoTime() - t0) / 1e9;
            List<long[]> measured = new ArrayList<>();
            List<Double> seconds = new ArrayList<>();
            TieredCache cache = dataset.cache();
            for (int e = 0; e < epochs; e++) {
                CacheStats before = cache.stats();
                long start = System.nanoTime();
                try (Epoch<Long> batches = loader.epoch(e)) {
                    for (Batch<Long> batch : batches) {
                        batch.size();
                    }
                }
                seconds.add((System.nanoTime() - start) / 1e9);
                CacheStats d = cache.stats().minus(before);
                measured.add(new long[] {
                    d.tiers().get(0).hits(),
                    d.tiers().get(1).hits(),
                    d.origin().reads() + d.origin().metadataRequests(),
                    d.origin().bytes()
                });
            }
            System.out.printf(
                    Locale.ROOT,
                    "%n%s: %s; plan of %d epochs took %.3f s, running them %.1f s%n",
                    title,
                    dataset,
                    epochs,
                    planSeconds,
                    seconds.stream().mapToDouble(Double::doubleValue).sum());
            System.out.println("epoch |        memory hits |          disk hits |    origin requests |"
                    + "       origin MiB | hit ratio | request $ | run s");
            System.out.println("      | predicted measured | predicted measured | predicted measured |"
                    + " predicted  meas. | predicted | predicted |");
            double worst = 0;
            for (int e = 0; e < epochs; e++) {
                EpochPlan p = plan.epochs().get(e);
                long[] m = measured.get(e);
                long[] predicted = {p.hits("memory"), p.hits("disk"), p.originRequests(), p.originBytes()};
                for (int i = 0; i < 4; i++) {
                    worst = Math.max(
                            worst,
                            predicted[i] == m[i] ? 0 : Math.abs(predicted[i] - m[i]) / (double) Math.max(1, m[i]));
                }
                System.out.printf(
                        Locale.ROOT,
                        "%5d | %9d %8d | %9d %8d | %9d %8d | %9.1f %6.1f | %9.3f | %9.5f |" + " %5.2f%n",
                        p.epoch(),
                        predicted[0],
                        m[0],
                        predicted[1],
                        m[1],
                        predicted[2],
                        m[2],
                        predicted[3] / 1048576.0,
                        m[3] / 1048576.0,
                        p.hitRatio(),
                        p.requestCost(price),
                        seconds.get(e));
            }
            System.out.printf(
                    Locale.ROOT,
                    "largest relative error: %.2f %%; predicted cost of the %d epochs: $%.5f%n",
                    100 * worst,
                    epochs,
                    plan.requestCost(price));
            return worst;
        }
    }
}
