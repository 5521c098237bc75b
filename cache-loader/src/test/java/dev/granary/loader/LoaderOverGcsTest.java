// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.cloud.WriteChannel;
import com.google.cloud.storage.BlobInfo;
import com.google.cloud.storage.Storage;
import com.google.cloud.storage.contrib.nio.testing.LocalStorageHelper;
import dev.granary.TieredCache;
import dev.granary.origin.gcs.GcsOrigin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The loop of API.md over {@link GcsOrigin}. No real GCS server runs here: the storage is google-cloud-nio's
 * in-process {@code LocalStorageHelper} — real GcsOrigin code (reads pinned to the generation, listing, ranged reads
 * through its ReadChannel) without HTTP, pagination or real generations (see docs/origins.md).
 */
class LoaderOverGcsTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @Test
    void objectsAndShardsLoadThroughGcs() throws IOException {
        Storage storage = LocalStorageHelper.customOptions(false).getService();
        SplittableRandom random = new SplittableRandom(8);
        Map<String, byte[]> objects = new HashMap<>();
        for (int i = 0; i < 30; i++) {
            byte[] bytes = new byte[500 + random.nextInt(3000)];
            random.nextBytes(bytes);
            String key = String.format("train/%03d.bin", i);
            objects.put(key, bytes);
            write(storage, key, bytes);
        }
        Map<String, byte[]> jpgs = new HashMap<>();
        TarWriter tar = new TarWriter();
        for (int i = 0; i < 20; i++) {
            byte[] jpg = new byte[100 + random.nextInt(900)];
            random.nextBytes(jpg);
            jpgs.put("s/" + i, jpg);
            tar.add("s/" + i + ".jpg", jpg);
            tar.add("s/" + i + ".cls", new byte[] {(byte) i});
        }
        write(storage, "shards/0.tar", tar.finish());

        MemoryTier memory = MemoryTier.builder().capacity(8L << 20).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        try (TieredCache cache = leaks.watch(TieredCache.builder(
                        GcsOrigin.builder().bucket("b-1").storage(storage).build())
                .tier(memory)
                .build())) {
            Dataset files = Dataset.ofObjects(cache, "train/");
            Dataset shards = WebDataset.of(cache, List.of("shards/0.tar"));
            try (DataLoader<String> a = DataLoader.builder(files, s -> {
                                byte[] got = new byte[s.bytes().remaining()];
                                s.bytes().get(got);
                                assertArrayEquals(objects.get(s.key()), got, s.key());
                                return s.key();
                            })
                            .batchSize(7)
                            .shuffle(1)
                            .build();
                    DataLoader<String> b = DataLoader.builder(shards, s -> {
                                byte[] got = new byte[s.fields().get("jpg").remaining()];
                                s.fields().get("jpg").get(got);
                                assertArrayEquals(jpgs.get(s.key()), got, s.key());
                                assertEquals(
                                        Integer.parseInt(s.key().substring(2)),
                                        s.fields().get("cls").get(0));
                                return s.key();
                            })
                            .batchSize(6)
                            .shuffle(2)
                            .build()) {
                for (int e = 0; e < 2; e++) {
                    assertEquals(objects.keySet(), new HashSet<>(drain(a, e)));
                    assertEquals(jpgs.keySet(), new HashSet<>(drain(b, e)));
                }
            }
            // writeIndex through GcsOrigin.write (the fake assigns the upload a generation): the next index is read
            // from it and trusted, since it records the shard's generation.
            WebDataset.writeIndex(cache, "shards/0.tar");
            WebDataset indexed = WebDataset.of(cache, List.of("shards/0.tar"));
            assertTrue(indexed.indexedFromFile(0) && !indexed.verifies(0));
            assertEquals(
                    jpgs.keySet(),
                    new HashSet<>(IntStream.range(0, indexed.size())
                            .mapToObj(indexed::key)
                            .toList()));
        }
    }

    /** Writes through a WriteChannel, which is how the fake assigns generations. */
    private static void write(Storage storage, String name, byte[] bytes) {
        try (WriteChannel writer =
                storage.writer(BlobInfo.newBuilder("b-1", name).build())) {
            writer.write(ByteBuffer.wrap(bytes));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static List<String> drain(DataLoader<String> loader, long epoch) {
        List<String> keys = new ArrayList<>();
        try (Epoch<String> batches = loader.epoch(epoch)) {
            for (Batch<String> batch : batches) {
                keys.addAll(batch.items());
            }
        }
        return keys;
    }
}
