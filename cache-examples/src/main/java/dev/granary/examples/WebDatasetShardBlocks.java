// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.Sample;
import dev.granary.loader.Shuffle;
import dev.granary.loader.WebDataset;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

public class WebDatasetShardBlocks {

    public record Example(String key, int label, byte[] image) {}

    public static void main(String[] args) throws IOException {
        train(Path.of(args[0]), 2, batch -> {
            /* your training step */
        });
    }

    /** Trains on every shard under {@code data/shards/}. */
    public static List<LoaderStats> train(Path data, int epochs, Consumer<List<Example>> step) throws IOException {
        List<LoaderStats> figures = new ArrayList<>();
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder().capacity(512L << 20).build())
                .build()) {
            List<String> shardKeys;
            try (Stream<ObjectInfo> objects = cache.list("shards/")) {
                shardKeys = objects.map(ObjectInfo::key)
                        .filter(key -> key.endsWith(".tar"))
                        .sorted()
                        .toList();
            }
            WebDataset shards = WebDataset.of(cache, shardKeys); // one small read of each shard's .gidx index

            try (DataLoader<Example> loader = DataLoader.builder(shards, WebDatasetShardBlocks::decode)
                    .batchSize(64)
                    .shuffle(Shuffle.shardBlocks(42L, 8)) // shards permuted; 8 at a time, their samples mixed
                    .workers(4)
                    .prefetch(4)
                    .build()) {
                for (int epoch = 0; epoch < epochs; epoch++) {
                    try (Epoch<Example> batches = loader.epoch(epoch)) {
                        for (Batch<Example> batch : batches) {
                            step.accept(batch.items());
                        }
                        LoaderStats s = batches.stats();
                        System.out.printf(
                                "epoch %d: %d samples from %d shards in %d origin requests%n",
                                epoch, s.samples(), shardKeys.size(), s.originReads());
                        figures.add(s);
                    }
                }
            }
        }
        return figures;
    }

    /** A sample's fields are its members: {@code train/n0153.jpg} and {@code train/n0153.cls}. */
    static Example decode(Sample sample) {
        Map<String, ByteBuffer> fields = sample.fields();
        ByteBuffer jpg = fields.get("jpg");
        byte[] image = new byte[jpg.remaining()];
        jpg.get(image);
        int label = Integer.parseInt(
                StandardCharsets.US_ASCII.decode(fields.get("cls")).toString().trim());
        return new Example(sample.key(), label, image);
    }
}
