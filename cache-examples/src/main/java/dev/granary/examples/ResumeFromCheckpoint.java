// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderState;
import dev.granary.loader.Sample;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.function.Consumer;

public class ResumeFromCheckpoint {

    public static void main(String[] args) throws IOException {
        train(Path.of(args[0]), Path.of(args[1]), 10, batch -> {
            /* your training step */
        });
    }

    /** Trains until {@code epochs}; if {@code checkpoint} exists, first continues from where it was taken. */
    public static void train(Path data, Path checkpoint, int epochs, Consumer<Batch<String>> step) throws IOException {
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                        .tier(MemoryTier.builder().capacity(256L << 20).build())
                        .build();
                DataLoader<String> loader = DataLoader.builder(Dataset.ofObjects(cache, "train/"), Sample::key)
                        .batchSize(32)
                        .shuffle(42L)
                        .workers(4)
                        .prefetch(4)
                        .build()) {
            long first = 0;
            if (Files.exists(checkpoint)) {
                LoaderState state = LoaderState.decode(Files.readString(checkpoint));
                loader.resume(state); // the next epoch(...) yields exactly the batches not handed out yet
                first = state.epoch();
                // ... and load the model's weights saved with it
            }
            for (long epoch = first; epoch < epochs; epoch++) {
                try (Epoch<String> batches = loader.epoch(epoch)) {
                    for (Batch<String> batch : batches) {
                        step.accept(batch);
                        if ((batch.index() + 1) % 10 == 0) { // every 10 batches, with the model's weights
                            save(loader.state(), checkpoint);
                        }
                    }
                }
                save(loader.state(), checkpoint); // after an epoch: the start of the next one
            }
        }
    }

    /** {@code state.encode()} is one line of text; LoaderState is also Serializable. */
    static void save(LoaderState state, Path checkpoint) throws IOException {
        Path partial = checkpoint.resolveSibling(checkpoint.getFileName() + ".partial");
        Files.writeString(partial, state.encode());
        Files.move(partial, checkpoint, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
