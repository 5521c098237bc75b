// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j;

import dev.granary.LeakDetection;
import dev.granary.TieredCache;
import dev.granary.loader.ShardWriter;
import dev.granary.loader.WebDataset;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A small WebDataset in real tar files for the adapter's tests: sample {@code i} has field {@code raw}
 * ({@link #COLUMNS} bytes, the first of which is {@code i}, so a row says which sample it is) and {@code cls} (the
 * class {@code i % CLASSES} as ASCII). Read through a PosixOrigin and a MemoryTier with every lease tracked.
 */
final class Shards {

    static final int COLUMNS = 6;
    static final int CLASSES = 4;

    final byte[][] raw;
    final int[] classes;
    final List<String> keys;

    private Shards(byte[][] raw, int[] classes, List<String> keys) {
        this.raw = raw;
        this.classes = classes;
        this.keys = keys;
    }

    /** Writes {@code count} samples (at most 256), {@code perShard} to a shard, into {@code dir}. */
    static Shards write(Path dir, int count, int perShard) {
        byte[][] raw = new byte[count][COLUMNS];
        int[] classes = new int[count];
        SplittableRandom random = new SplittableRandom(count);
        ShardWriter writer = ShardWriter.builder(dir)
                .pattern("part-%05d.tar")
                .maxCount(perShard)
                .build();
        try {
            for (int i = 0; i < count; i++) {
                random.nextBytes(raw[i]);
                raw[i][0] = (byte) i;
                classes[i] = i % CLASSES;
                Map<String, byte[]> fields = new LinkedHashMap<>();
                fields.put("raw", raw[i]);
                fields.put("cls", Integer.toString(classes[i]).getBytes(StandardCharsets.US_ASCII));
                writer.write(String.format("s/%04d", i), fields);
            }
        } finally {
            writer.close();
        }
        return new Shards(raw, classes, writer.shards());
    }

    /** Copies {@code raw} into the features (as 0..255) and one-hots {@code cls}. */
    static final SampleEncoder ENCODER = (sample, features, labels) -> {
        var raw = sample.fields().get("raw");
        for (int i = 0; i < features.length; i++) {
            features[i] = raw.get(i) & 0xFF;
        }
        labels[
                Integer.parseInt(StandardCharsets.US_ASCII
                        .decode(sample.fields().get("cls"))
                        .toString())] = 1f;
    };

    static TieredCache cache(LeakCheck leaks, Path dir) {
        MemoryTier memory =
                MemoryTier.builder().capacity(8L << 20).slabSize(1 << 20).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        return leaks.watch(TieredCache.builder(PosixOrigin.of(dir))
                .tier(memory)
                .pageSize(4 << 10)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }

    WebDataset dataset(TieredCache cache) throws IOException {
        return WebDataset.of(cache, keys);
    }

    /** {@return the features sample {@code index} was written with, as the encoder makes them} */
    float[] features(int index) {
        float[] f = new float[COLUMNS];
        for (int i = 0; i < COLUMNS; i++) {
            f[i] = raw[index][i] & 0xFF;
        }
        return f;
    }

    float[] labels(int index) {
        float[] l = new float[CLASSES];
        l[classes[index]] = 1f;
        return l;
    }
}
