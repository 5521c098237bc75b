// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.examples.WebDatasetShardBlocks.Example;
import dev.granary.loader.LoaderStats;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The cookbook's WebDataset recipe, over shards the packing recipe wrote. */
@Timeout(60)
class WebDatasetShardBlocksTest {

    @TempDir
    Path temp;

    @Test
    void shardBlocksReadEachShardWholeAndEverySampleOncePerEpoch() throws IOException {
        Map<String, Map<String, byte[]>> expected = PackShardsTest.smallFiles(temp.resolve("images"), 600);
        Path data = temp.resolve("data");
        int shards = PackShards.pack(temp.resolve("images"), data.resolve("shards"), 25)
                .size();
        assertEquals(24, shards);
        List<Example> trained = new ArrayList<>();

        List<LoaderStats> epochs = WebDatasetShardBlocks.train(data, 2, trained::addAll);

        assertEquals(2 * 600, trained.size());
        for (int epoch = 0; epoch < 2; epoch++) {
            Set<String> seen = new HashSet<>();
            for (Example e : trained.subList(epoch * 600, epoch * 600 + 600)) {
                assertTrue(seen.add(e.key()), "epoch " + epoch + ": " + e.key() + " twice");
                Map<String, byte[]> files = expected.get(e.key());
                assertArrayEquals(files.get("jpg"), e.image(), e.key());
                assertEquals(new String(files.get("cls"), StandardCharsets.US_ASCII), Integer.toString(e.label()));
            }
            assertEquals(expected.keySet(), seen, "epoch " + epoch);
        }
        long requests = epochs.get(0).originReads();
        assertTrue(
                requests > 0 && requests <= shards,
                "epoch 0: each shard read whole (one request per part), not" + " one request per sample: " + requests
                        + " requests for " + shards + " shards");
        assertEquals(0, epochs.get(1).originReads(), "epoch 1: from the memory tier");
    }
}
