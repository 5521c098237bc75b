// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.granary.examples.FirstLoop.Example;
import dev.granary.loader.LoaderStats;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The README's first loop, over real files in a temporary directory. */
@Timeout(60)
class FirstLoopTest {

    @TempDir
    Path temp;

    @Test
    void everyFileIsReadInEachEpochAndTheSecondEpochComesFromTheCache() throws IOException {
        ExampleData data = ExampleData.write(temp.resolve("data"), 300, 64 << 10);
        List<Example> trained = new ArrayList<>();

        List<LoaderStats> epochs = FirstLoop.train(data.root(), temp.resolve("granary-cache"), 2, trained::addAll);

        assertEquals(2, epochs.size());
        data.assertEveryObjectOnce(entries(trained.subList(0, data.count())), "epoch 0");
        data.assertEveryObjectOnce(entries(trained.subList(data.count(), trained.size())), "epoch 1");
        assertEquals(data.count(), epochs.get(0).samples());
        assertEquals(data.totalBytes(), epochs.get(0).bytes());
        assertEquals(data.count(), epochs.get(0).originReads(), "epoch 0: one origin read per file");
        assertEquals(0, epochs.get(1).originReads(), "epoch 1: every sample from the cache");
    }

    @Test
    void mainRunsTwiceOnTheSameCacheDirectory() throws IOException {
        // A second run opens the disk tier's directory again: the first one closed it (else: "held by ...").
        ExampleData data = ExampleData.write(temp.resolve("data"), 50, 8 << 10);
        String[] args = {data.root().toString(), temp.resolve("granary-cache").toString()};
        FirstLoop.main(args);
        FirstLoop.main(args);
    }

    static List<Map.Entry<String, byte[]>> entries(List<Example> examples) {
        return examples.stream().map(e -> Map.entry(e.key(), e.bytes())).toList();
    }
}
