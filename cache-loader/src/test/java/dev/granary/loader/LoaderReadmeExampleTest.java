// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The "Loading batches" loop the README once showed, over two real tar shards. The README's examples now live in
 * {@code cache-examples}, tested there; docs/cookbook.md shows the WebDataset loop.
 */
class LoaderReadmeExampleTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    record Example(String label, int pixels) {}

    private final List<Example> trained = new ArrayList<>();
    private final List<LoaderState> checkpoints = new ArrayList<>();

    static Example decode(Map<String, ByteBuffer> fields) {
        return new Example(
                StandardCharsets.US_ASCII.decode(fields.get("cls")).toString(),
                fields.get("jpg").remaining());
    }

    void train(List<Example> items) {
        trained.addAll(items);
    }

    @Test
    void theReadmeLoopRuns() throws IOException {
        for (int s = 0; s < 2; s++) {
            TarWriter tar = new TarWriter();
            for (int i = 0; i < 50; i++) {
                tar.add(String.format("n%02d/%04d.jpg", s, i), new byte[100 + i]);
                tar.add(
                        String.format("n%02d/%04d.cls", s, i),
                        Integer.toString(i % 10).getBytes(StandardCharsets.US_ASCII));
            }
            Files.createDirectories(root.resolve("shards"));
            Files.write(root.resolve(String.format("shards/%06d.tar", s)), tar.finish());
        }
        int rank = 0;
        int worldSize = 1;
        int epochs = 2;
        try (TieredCache cache = leaks.watch(TieredCache.builder(PosixOrigin.of(root))
                .tier(MemoryTier.builder().capacity(8L << 20).build())
                .build())) {
            // --- the loop ---
            Dataset shards = WebDataset.of(cache, List.of("shards/000000.tar", "shards/000001.tar"));

            try (DataLoader<Example> loader = DataLoader.builder(shards, sample -> decode(sample.fields()))
                    .batchSize(64)
                    .shuffle(Shuffle.shardBlocks(42L, 8))
                    .shard(rank, worldSize, Partitioning.STABLE)
                    .workers(8)
                    .prefetch(4)
                    .build()) {
                for (int epoch = 0; epoch < epochs; epoch++) {
                    try (Epoch<Example> batches = loader.epoch(epoch)) {
                        for (Batch<Example> batch : batches) {
                            train(batch.items());
                        }
                    }
                    LoaderState checkpoint = loader.state();
                    checkpoints.add(checkpoint);
                }
                LoaderPlan plan = loader.plan(3); // the next three epochs, predicted
                EpochPlan e = plan.epochs().get(1);
                double dollars = e.requestCost(0.0004);
                assertEquals(0, e.originRequests(), "the memory tier holds both shards: " + e);
                assertEquals(0.0, dollars);
            }
            // --- end ---
        }
        assertEquals(200, trained.size());
        assertEquals(
                2 * (100 * 100 + 49 * 50),
                trained.stream().mapToInt(Example::pixels).sum(),
                "every sample, twice");
        assertEquals(
                List.of(1L, 2L), checkpoints.stream().map(LoaderState::epoch).toList());
    }
}
