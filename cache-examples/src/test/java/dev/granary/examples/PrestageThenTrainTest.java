// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.granary.PrestageResult;
import dev.granary.examples.PrestageThenTrain.Example;
import dev.granary.loader.LoaderStats;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The cookbook's prestage recipe: staged once, the job's first epoch makes no origin data request. */
@Timeout(60)
class PrestageThenTrainTest {

    @TempDir
    Path temp;

    @Test
    void aPrestagedDatasetIsTrainedOnWithoutOriginReads() throws IOException {
        ExampleData data = ExampleData.write(temp.resolve("data"), 250, 32 << 10);
        Path nodeCache = temp.resolve("node-cache");

        PrestageResult first = PrestageThenTrain.prestage(data.root(), nodeCache);
        assertEquals(data.count(), first.objects());
        assertEquals(data.totalBytes(), first.bytes());
        assertEquals(0, first.alreadyCached());
        assertEquals(List.of(), first.failed());

        PrestageResult again = PrestageThenTrain.prestage(data.root(), nodeCache);
        assertEquals(data.count(), again.alreadyCached(), "a second prestage finds everything staged");
        assertEquals(0, again.bytesFetched());

        List<Example> trained = new ArrayList<>();
        List<LoaderStats> epochs = PrestageThenTrain.train(data.root(), nodeCache, 2, trained::addAll);

        assertEquals(0, epochs.get(0).originReads(), "epoch 0 reads the staged pages");
        assertEquals(0, epochs.get(1).originReads());
        data.assertEveryObjectOnce(
                trained.subList(0, data.count()).stream()
                        .map(e -> Map.entry(e.key(), e.bytes()))
                        .toList(),
                "epoch 0");
    }
}
