// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.WebDataset;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The cookbook's packing recipe: small files into shards with their indexes, read back whole by the loader. */
@Timeout(60)
class PackShardsTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    /** Writes {@code count} samples as {@code train/n<i>.jpg} (random bytes) and {@code train/n<i>.cls} (the label). */
    static Map<String, Map<String, byte[]>> smallFiles(Path src, int count) throws IOException {
        Map<String, Map<String, byte[]>> samples = new HashMap<>();
        SplittableRandom random = new SplittableRandom(count);
        for (int i = 0; i < count; i++) {
            String key = String.format("train/n%05d", i);
            byte[] jpg = new byte[100 + random.nextInt(20_000)];
            random.nextBytes(jpg);
            byte[] cls = Integer.toString(i % 10).getBytes(StandardCharsets.US_ASCII);
            Files.createDirectories(src.resolve("train"));
            Files.write(src.resolve(key + ".jpg"), jpg);
            Files.write(src.resolve(key + ".cls"), cls);
            samples.put(key, Map.of("jpg", jpg, "cls", cls));
        }
        Files.writeString(src.resolve("README"), "no extension: not a sample");
        return samples;
    }

    @Test
    void filesArePackedIntoShardsWithIndexesAndReadBackWhole() throws IOException {
        Map<String, Map<String, byte[]>> expected = smallFiles(temp.resolve("images"), 230);
        Path data = temp.resolve("data");

        List<String> shards = PackShards.pack(temp.resolve("images"), data.resolve("shards"), 50);

        assertEquals(
                IntStream.range(0, 5)
                        .mapToObj(i -> String.format("shard-%06d.tar", i))
                        .toList(),
                shards);
        for (String shard : shards) {
            assertTrue(Files.isRegularFile(data.resolve("shards").resolve(shard + ".gidx")), shard + ": no index");
        }
        List<String> keysInShardOrder = new ArrayList<>();
        Map<String, Map<String, byte[]>> read = new LinkedHashMap<>();
        try (TieredCache cache = leaks.watch(TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder().capacity(64L << 20).build())
                .build())) {
            WebDataset dataset =
                    WebDataset.of(cache, shards.stream().map(s -> "shards/" + s).toList());
            assertEquals(230, dataset.size());
            try (DataLoader<Map.Entry<String, Map<String, byte[]>>> loader = DataLoader.builder(
                                    dataset, sample -> Map.entry(sample.key(), copy(sample.fields())))
                            .batchSize(16)
                            .build();
                    Epoch<Map.Entry<String, Map<String, byte[]>>> epoch = loader.epoch(0)) {
                for (Batch<Map.Entry<String, Map<String, byte[]>>> batch : epoch) {
                    for (Map.Entry<String, Map<String, byte[]>> sample : batch.items()) {
                        keysInShardOrder.add(sample.getKey());
                        read.put(sample.getKey(), sample.getValue());
                    }
                }
            }
        }
        assertEquals(expected.keySet(), read.keySet());
        for (Map.Entry<String, Map<String, byte[]>> sample : expected.entrySet()) {
            Map<String, byte[]> fields = read.get(sample.getKey());
            assertEquals(sample.getValue().keySet(), fields.keySet(), sample.getKey());
            for (String field : fields.keySet()) {
                assertArrayEquals(sample.getValue().get(field), fields.get(field), sample.getKey() + "." + field);
            }
        }
        assertNotEquals(
                keysInShardOrder.stream().sorted().toList(),
                keysInShardOrder,
                "the recipe shuffles the samples once before packing");
    }

    static Map<String, byte[]> copy(Map<String, ByteBuffer> fields) {
        Map<String, byte[]> copy = new LinkedHashMap<>();
        fields.forEach((name, buffer) -> {
            byte[] bytes = new byte[buffer.remaining()];
            buffer.duplicate().get(bytes);
            copy.put(name, bytes);
        });
        return copy;
    }
}
