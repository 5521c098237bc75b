// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.Sample;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

public class ScratchCache {

    public static void main(String[] args) throws IOException {
        String job = System.getenv()
                .getOrDefault(
                        "SLURM_JOB_ID", String.valueOf(ProcessHandle.current().pid()));
        Path scratch = Path.of(args[1]).resolve("granary-" + job); // e.g. node-local $TMPDIR
        train(Path.of(args[0]), scratch, 3, batch -> {
            /* your training step */
        });
    }

    public static void train(Path data, Path scratch, int epochs, Consumer<List<Integer>> step) throws IOException {
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                        .tier(MemoryTier.builder().capacity(64L << 20).build())
                        .tier(DiskTier.builder()
                                .directory(scratch)
                                .capacity(2L << 30)
                                .deleteOnClose(
                                        true) // its files, and the directory if it made it, go when the cache closes
                                .build())
                        .build();
                DataLoader<Integer> loader = DataLoader.builder(
                                Dataset.ofObjects(cache, "train/"),
                                (Sample sample) -> sample.bytes().remaining())
                        .batchSize(32)
                        .shuffle(42L)
                        .build()) {
            for (int epoch = 0; epoch < epochs; epoch++) {
                try (Epoch<Integer> batches = loader.epoch(epoch)) {
                    for (Batch<Integer> batch : batches) {
                        step.accept(batch.items());
                    }
                }
            }
        }
    }
}
