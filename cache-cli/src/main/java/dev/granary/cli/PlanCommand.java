// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.ObjectInfo;
import dev.granary.OriginStats;
import dev.granary.TieredCache;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.EpochPlan;
import dev.granary.loader.LoaderPlan;
import dev.granary.loader.Sample;
import dev.granary.loader.Shuffle;
import dev.granary.loader.WebDataset;
import dev.granary.spi.Origin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.PrintWriter;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code granary plan}: the loader's dry run ({@link DataLoader#plan(int)}) from the command line: per epoch, the
 * origin requests and bytes, the hit ratio and the request cost, for a dataset, a cache (a memory tier, and a disk tier
 * directory if given: a staged one counts) and a loader's settings, without reading any data.
 */
@Command(
        name = "plan",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Predict a loader's epochs without reading data: origin requests and bytes, hit ratio and"
                    + " request cost per epoch, for a cache of the given tiers (a staged disk directory counts).",
            "",
            "  granary plan s3://train-data/ --prefix train/ --memory 8G --disk /nvme/granary --capacity 500G --epochs"
                    + " 3"
        },
        footer = {"", ExitCodes.HELP})
final class PlanCommand implements Callable<Integer> {

    @Parameters(
            index = "0",
            paramLabel = "<origin-uri>",
            description = "file:///dir, s3://bucket/prefix or gs://bucket/prefix.")
    String origin;

    @Option(names = "--prefix", paramLabel = "<p>", defaultValue = "", description = "The dataset's key prefix.")
    String prefix;

    @Option(
            names = "--webdataset",
            description = "The prefix holds WebDataset shards (*.tar, with .gidx indexes); plan"
                    + " over their samples, shards streamed in blocks (Shuffle.shardBlocks).")
    boolean webdataset;

    @Option(
            names = "--memory",
            paramLabel = "<size>",
            converter = Sizes.class,
            defaultValue = "1G",
            description = "The memory tier's capacity. Default: ${DEFAULT-VALUE}.")
    long memory;

    @Option(names = "--disk", paramLabel = "<dir>", description = "A disk tier directory (opened; its pages count).")
    Path disk;

    @Option(
            names = "--capacity",
            paramLabel = "<size>",
            converter = Sizes.class,
            description = "The disk tier's capacity.")
    Long capacity;

    @Option(
            names = "--page-size",
            paramLabel = "<size>",
            converter = Sizes.class,
            defaultValue = "1M",
            description = "The cache's page size. Default: ${DEFAULT-VALUE}.")
    long pageSize;

    @Option(
            names = "--epochs",
            paramLabel = "<n>",
            defaultValue = "3",
            description = "Epochs to plan. Default: ${DEFAULT-VALUE}.")
    int epochs;

    @Option(names = "--batch-size", paramLabel = "<n>", defaultValue = "64", description = "Default: ${DEFAULT-VALUE}.")
    int batchSize;

    @Option(
            names = "--seed",
            paramLabel = "<n>",
            defaultValue = "42",
            description = "Shuffle seed. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(
            names = "--rank",
            paramLabel = "<r>",
            defaultValue = "0",
            description = "This rank. Default: ${DEFAULT-VALUE}.")
    int rank;

    @Option(
            names = "--world-size",
            paramLabel = "<n>",
            defaultValue = "1",
            description = "Ranks. Default: ${DEFAULT-VALUE}.")
    int worldSize;

    @Option(
            names = "--get-price",
            paramLabel = "<dollars>",
            defaultValue = "0.0004",
            description = "Dollars per 1 000 GET requests (S3 Standard, us-east-1). Default: ${DEFAULT-VALUE}.")
    double getPrice;

    @Option(
            names = "--list-price",
            paramLabel = "<dollars>",
            defaultValue = "0.005",
            description = "Dollars per 1 000 LIST requests (S3 Standard, us-east-1), which the listing of the"
                    + " dataset costs. Default: ${DEFAULT-VALUE}.")
    double listPrice;

    @Mixin
    Origins origins;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if ((disk == null) != (capacity == null)) {
            throw new IllegalArgumentException("--disk and --capacity: "
                    + (disk == null ? "--capacity alone" : "--disk alone") + " (expected: both, or neither)");
        }
        Origin source = origins.open(origin);
        TieredCache.Builder builder = TieredCache.builder(source)
                .pageSize((int) pageSize)
                .tier(MemoryTier.builder().capacity(memory).build());
        if (disk != null) {
            builder.tier(DiskTier.builder().directory(disk).capacity(capacity).build());
        }
        PrintWriter out = spec.commandLine().getOut();
        try (TieredCache cache = builder.build()) {
            OriginStats before = cache.stats().origin();
            Dataset dataset;
            DataLoader.Builder<String> loader;
            if (webdataset) {
                List<String> shards;
                try (Stream<ObjectInfo> listed = cache.list(prefix)) {
                    shards = listed.map(ObjectInfo::key)
                            .filter(k -> k.endsWith(".tar"))
                            .toList();
                }
                if (shards.isEmpty()) {
                    throw new IllegalArgumentException("prefix: '" + prefix + "' of " + cache.originUri()
                            + " holds no .tar shard (expected: WebDataset shards, with --webdataset)");
                }
                dataset = WebDataset.of(cache, shards);
                loader = DataLoader.builder(dataset, Sample::key).shuffle(Shuffle.shardBlocks(seed, 8));
            } else {
                dataset = Dataset.ofObjects(cache, prefix);
                loader = DataLoader.builder(dataset, Sample::key).shuffle(seed);
            }
            if (dataset.size() == 0) {
                throw new IllegalArgumentException("prefix: '" + prefix + "' of " + cache.originUri()
                        + " holds no object (expected: the dataset's prefix)");
            }
            // Building the dataset listed the prefix (and read shard indexes): real requests, made once per job.
            OriginStats indexing = cache.stats().origin();
            long lists = indexing.metadataRequests() - before.metadataRequests();
            long indexGets = indexing.reads() - before.reads();
            double indexingCost = lists * listPrice / 1000 + indexGets * getPrice / 1000;
            try (DataLoader<String> l =
                    loader.batchSize(batchSize).shard(rank, worldSize).build()) {
                LoaderPlan plan = l.plan(epochs);
                out.printf(
                        Locale.ROOT,
                        "plan: %d samples, tiers %s, batch %d, rank %d of %d%n",
                        dataset.size(),
                        plan.tiers(),
                        batchSize,
                        rank,
                        worldSize);
                out.printf(
                        Locale.ROOT,
                        "indexing (made now, once per job): %d listing/metadata requests, %d GETs" + " (%s), %s%n",
                        lists,
                        indexGets,
                        Sizes.format(indexing.bytes() - before.bytes()),
                        money(indexingCost));
                out.printf(
                        Locale.ROOT,
                        "%5s %9s %10s %14s %12s %9s %10s%n",
                        "epoch",
                        "samples",
                        "GETs",
                        "metadata reqs",
                        "origin",
                        "hit ratio",
                        "GET cost");
                for (EpochPlan e : plan.epochs()) {
                    out.printf(
                            Locale.ROOT,
                            "%5d %9d %10d %14d %12s %8.1f%% %10s%n",
                            e.epoch(),
                            e.samples(),
                            e.originReads(),
                            e.metadataRequests(),
                            Sizes.format(e.originBytes()),
                            100 * e.hitRatio(),
                            money(e.requestCost(getPrice)));
                }
                out.printf(
                        Locale.ROOT,
                        "total: %d origin requests, %s, %s (GETs at %s and LISTs at %s per 1 000)%n",
                        plan.originRequests() + lists + indexGets,
                        Sizes.format(plan.originBytes()),
                        money(plan.requestCost(getPrice) + indexingCost),
                        money(getPrice),
                        money(listPrice));
            }
        }
        out.flush();
        return ExitCodes.OK;
    }

    /** Dollars as people write them: {@code $0.0004}, {@code $12.35}, never {@code 4.0E-4}; at least 2 decimals. */
    static String money(double dollars) {
        BigDecimal d = BigDecimal.valueOf(dollars);
        if (dollars != 0 && Math.abs(dollars) < 0.01) {
            d = d.round(new MathContext(2)); // two significant digits of a small amount
        } else {
            d = d.setScale(2, RoundingMode.HALF_UP);
        }
        String text = d.stripTrailingZeros().toPlainString();
        int dot = text.indexOf('.');
        if (dot < 0) {
            text += ".00";
        } else if (text.length() - dot - 1 < 2) {
            text += "0";
        }
        return "$" + text;
    }
}
