// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.loader.WebDataset;
import dev.granary.spi.Origin;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code granary index}: {@link WebDataset#writeIndex} for shards another tool wrote (webdataset's Python
 * {@code ShardWriter}, {@code tar}), so loaders index each with one small read. The index goes beside the shard, as
 * {@code <shard>.gidx}, through the origin (POSIX, S3 or GCS can write).
 */
@Command(
        name = "index",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Write the .gidx index of existing WebDataset shards, beside each shard.",
            "",
            "  granary index s3://train-data/ shards/000000.tar shards/000001.tar --endpoint http://minio:9000"
        },
        footer = {"", ExitCodes.HELP})
final class IndexCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "<origin-uri>", description = "Where the shards are.")
    String origin;

    @Parameters(
            index = "1..*",
            arity = "1..*",
            paramLabel = "<shard>",
            description = "Shard keys, relative to the origin.")
    List<String> shards;

    @Mixin
    Origins origins;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        Origin source = origins.open(origin);
        try (TieredCache cache = TieredCache.builder(source)
                .tier(MemoryTier.builder().capacity(64L << 20).build())
                .build()) {
            for (String shard : shards) {
                ObjectInfo index = WebDataset.writeIndex(cache, shard);
                out.println("indexed " + shard + " -> " + index.key() + " (" + Sizes.format(index.size()) + ")");
                out.flush();
            }
        }
        return ExitCodes.OK;
    }
}
