// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.loader.Batch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cookbook's checkpoint recipe: a run that dies in the middle of an epoch, started again on its checkpoint, hands
 * out exactly the batches an uninterrupted run hands out from the checkpoint on.
 */
@Timeout(60)
class ResumeFromCheckpointTest {

    @TempDir
    Path temp;

    /** What a batch is, for comparing runs: epoch, index and the keys in order. */
    record Seen(long epoch, long index, List<String> keys) {
        static Seen of(Batch<String> batch) {
            return new Seen(batch.epoch(), batch.index(), List.copyOf(batch.items()));
        }
    }

    @Test
    void aRunResumedFromItsCheckpointContinuesExactlyWhereTheCheckpointWasTaken() throws IOException {
        ExampleData data = ExampleData.write(temp.resolve("data"), 640, 2 << 10); // 20 batches of 32 per epoch
        List<Seen> uninterrupted = new ArrayList<>();
        ResumeFromCheckpoint.train(data.root(), temp.resolve("a.checkpoint"), 3, b -> uninterrupted.add(Seen.of(b)));
        assertEquals(3 * 20, uninterrupted.size());

        Path checkpoint = temp.resolve("b.checkpoint");
        List<Seen> crashed = new ArrayList<>();
        assertThrows(
                IllegalStateException.class,
                () -> ResumeFromCheckpoint.train(data.root(), checkpoint, 3, b -> {
                    crashed.add(Seen.of(b));
                    if (b.epoch() == 1 && b.index() == 14) {
                        throw new IllegalStateException("killed after batch 14 of epoch 1");
                    }
                }));
        assertEquals(20 + 15, crashed.size());
        String saved = Files.readString(checkpoint);
        assertTrue(saved.startsWith("granary-loader-state/2 epoch=1 nextBatch=10 "), saved);

        List<Seen> resumed = new ArrayList<>();
        ResumeFromCheckpoint.train(data.root(), checkpoint, 3, b -> resumed.add(Seen.of(b)));

        assertEquals(
                uninterrupted.subList(20 + 10, uninterrupted.size()),
                resumed,
                "from batch 10 of epoch 1 on, as if never interrupted");
        assertEquals(uninterrupted.subList(0, 20 + 15), crashed, "the same order before the crash too");
        assertTrue(Files.readString(checkpoint).startsWith("granary-loader-state/2 epoch=3 nextBatch=0 "));
    }
}
