// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.Sample;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

public class FirstLoop {

    /** One decoded sample: here the file's key and a copy of its bytes; in your code, a tensor. */
    public record Example(String key, byte[] bytes) {}

    public static void main(String[] args) throws IOException {
        Path data = Path.of(args.length > 0 ? args[0] : "data"); // your files, under data/train/
        Path cacheDir = Path.of(args.length > 1 ? args[1] : "granary-cache"); // local disk, kept across runs
        train(data, cacheDir, 2, batch -> {}); // your training step in place of {}
    }

    /** Runs {@code epochs} epochs over every file under {@code data/train/}; returns each epoch's figures. */
    public static List<LoaderStats> train(Path data, Path cacheDir, int epochs, Consumer<List<Example>> step)
            throws IOException {
        List<LoaderStats> figures = new ArrayList<>();
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                        .tier(MemoryTier.builder().capacity(256L << 20).build()) // 256 MiB off-heap
                        .tier(DiskTier.builder()
                                .directory(cacheDir)
                                .capacity(1L << 30)
                                .build()) // 1 GiB on disk
                        .build();
                DataLoader<Example> loader = DataLoader.builder(Dataset.ofObjects(cache, "train/"), FirstLoop::decode)
                        .batchSize(32)
                        .shuffle(42L) // a new order every epoch, the same on every run and machine
                        .workers(4) // decode threads
                        .prefetch(4) // batches ready ahead of the trainer
                        .build()) {
            for (int epoch = 0; epoch < epochs; epoch++) {
                try (Epoch<Example> batches = loader.epoch(epoch)) {
                    for (Batch<Example> batch : batches) {
                        step.accept(batch.items());
                    }
                    LoaderStats s = batches.stats();
                    System.out.printf(
                            "epoch %d: %d samples, %d bytes, hit ratio %.2f, %d origin reads%n",
                            epoch, s.samples(), s.bytes(), s.hitRatio(), s.originReads());
                    figures.add(s);
                }
            }
        }
        return figures;
    }

    /** Runs on a decode thread. The sample's buffer is valid only during this call: copy or decode what you keep. */
    static Example decode(Sample sample) {
        ByteBuffer bytes = sample.bytes(); // the whole object, read-only
        byte[] copy = new byte[bytes.remaining()];
        bytes.get(copy);
        return new Example(sample.key(), copy);
    }
}
