// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.PrestageResult;
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

public class PrestageThenTrain {

    public record Example(String key, byte[] bytes) {}

    public static void main(String[] args) throws IOException {
        Path data = Path.of(args[0]);
        Path nodeCache = Path.of(args[1]);
        prestage(data, nodeCache); // before the job: an init container, a prologue
        train(data, nodeCache, 2, batch -> {
            /* your training step */
        }); // the job
    }

    /** Pulls every object under {@code train/} into the disk tier; running it again fetches only what is missing. */
    public static PrestageResult prestage(Path data, Path nodeCache) throws IOException {
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(DiskTier.builder().directory(nodeCache).capacity(4L << 30).build())
                .build()) {
            PrestageResult r = cache.prestage(
                    "train/",
                    p -> System.out.printf(
                            "%d/%d objects, %.1f MB/s%n",
                            p.objectsDone(), p.objectsTotal(), p.bytesPerSecond() / 1e6)); // total: -1 until listed
            System.out.printf(
                    "staged %d objects (%d bytes), %d already cached, %d failed%n",
                    r.objects(), r.bytes(), r.alreadyCached(), r.failed().size());
            return r;
        }
    }

    /** The same origin, directory and page size as the prestage: the first epoch reads no data from the origin. */
    public static List<LoaderStats> train(Path data, Path nodeCache, int epochs, Consumer<List<Example>> step)
            throws IOException {
        List<LoaderStats> figures = new ArrayList<>();
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                        .tier(MemoryTier.builder().capacity(256L << 20).build())
                        .tier(DiskTier.builder()
                                .directory(nodeCache)
                                .capacity(4L << 30)
                                .build())
                        .build();
                DataLoader<Example> loader = DataLoader.builder(
                                Dataset.ofObjects(cache, "train/"), PrestageThenTrain::decode)
                        .batchSize(32)
                        .shuffle(42L)
                        .workers(4)
                        .prefetch(4)
                        .build()) {
            for (int epoch = 0; epoch < epochs; epoch++) {
                try (Epoch<Example> batches = loader.epoch(epoch)) {
                    for (Batch<Example> batch : batches) {
                        step.accept(batch.items());
                    }
                    LoaderStats s = batches.stats();
                    System.out.printf("epoch %d: %d samples, %d origin reads%n", epoch, s.samples(), s.originReads());
                    figures.add(s);
                }
            }
        }
        return figures;
    }

    static Example decode(Sample sample) {
        ByteBuffer bytes = sample.bytes();
        byte[] copy = new byte[bytes.remaining()];
        bytes.get(copy);
        return new Example(sample.key(), copy);
    }
}
