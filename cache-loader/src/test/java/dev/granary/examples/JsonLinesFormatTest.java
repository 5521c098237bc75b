// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.CorruptShardException;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.ShardedDataset;
import dev.granary.loader.Shuffle;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** docs/extending.md's format, at work: a loader reads every line of three files once, in shard blocks. */
@Timeout(60)
class JsonLinesFormatTest {

    @TempDir
    Path root;

    @Test
    void aLoaderReadsEveryLineOnce() throws Exception {
        List<String> lines = new ArrayList<>();
        for (int f = 0; f < 3; f++) {
            StringBuilder file = new StringBuilder();
            for (int i = 0; i < 50 + f; i++) {
                String line = "{\"file\": " + f + ", \"line\": " + i + ", \"text\": \"" + "x".repeat(i) + "\"}";
                lines.add(line);
                file.append(line).append('\n');
            }
            Files.writeString(Files.createDirectories(root.resolve("jsonl")).resolve(f + ".jsonl"), file);
        }
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(root))
                .tier(MemoryTier.builder().capacity(16L << 20).build())
                .build()) {
            ShardedDataset dataset = ShardedDataset.of(
                    cache, List.of("jsonl/0.jsonl", "jsonl/1.jsonl", "jsonl/2.jsonl"), new JsonLinesFormat());
            assertEquals(lines.size(), dataset.size());
            List<String> read = new ArrayList<>();
            try (DataLoader<String> loader = DataLoader.builder(
                                    dataset,
                                    sample -> StandardCharsets.UTF_8
                                            .decode(sample.bytes())
                                            .toString())
                            .batchSize(8)
                            .shuffle(Shuffle.shardBlocks(1L, 2))
                            .build();
                    Epoch<String> epoch = loader.epoch(0)) {
                for (Batch<String> batch : epoch) {
                    read.addAll(batch.items());
                }
            }
            assertEquals(
                    lines.stream().sorted().toList(), read.stream().sorted().toList());
            Files.writeString(root.resolve("jsonl/bad.jsonl"), "{}\n{\"no\": \"newline\"}");
            CorruptShardException e = assertThrows(
                    CorruptShardException.class,
                    () -> ShardedDataset.of(cache, List.of("jsonl/bad.jsonl"), new JsonLinesFormat()));
            assertTrue(e.getMessage().contains("the last line has no newline"), e.getMessage());
        }
    }
}
