// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.testkit.LoaderOptionCases;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link LoaderOptions}, the read-only view of a loader's options: every setter of the builder shows in it (the
 * search of {@link LoaderOptionCases}, which the adapters' tests rely on), a loader keeps its builder's options, and
 * the view is a snapshot.
 */
class LoaderOptionsTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Dataset samples(TieredCache cache) throws IOException {
        dev.granary.testkit.Dataset files = new dev.granary.testkit.Dataset(root, 5);
        for (int i = 0; i < 16; i++) {
            files.put(String.format("train/%05d.bin", i), 100);
        }
        return Dataset.ofObjects(cache, "train/");
    }

    @Test
    void everySetterOfTheBuilderShowsInTheOptions() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            List<LoaderOptionCases.Case> cases = LoaderOptionCases.all(samples(cache));
            assertEquals(LoaderOptionCases.setters().size(), cases.size(), "one case per setter");
            assertTrue(cases.size() >= 20, "the builder's setters found: " + cases);
            for (LoaderOptionCases.Case c : cases) {
                assertFalse(c.changed().isEmpty(), c.toString());
            }
        }
    }

    @Test
    void aLoaderHasItsBuildersOptionsAsASnapshot() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            DataLoader.Builder<Integer> builder = DataLoader.builder(samples(cache), Sample::index)
                    .batchSize(5)
                    .shuffle(9L)
                    .shard(1, 2)
                    .workers(2)
                    .readAhead(7);
            LoaderOptions set = builder.options();
            assertEquals(5, set.batchSize());
            assertEquals(Shuffle.samples(9L), set.shuffle());
            assertEquals(1, set.rank());
            assertEquals(2, set.worldSize());
            assertEquals(7, set.readAhead());
            assertEquals(0, set.maxBytesInFlight(), "not set: derived when the loader is built");
            assertEquals(0, set.stagingBytes(), "no staging");
            try (DataLoader<Integer> loader = builder.build()) {
                assertEquals(set, loader.options());
                builder.batchSize(6);
                assertEquals(5, loader.options().batchSize(), "the builder's later calls do not reach a built loader");
                assertEquals(5, set.batchSize(), "nor an earlier snapshot");
                assertNotEquals(set, builder.options());
            }
        }
    }
}
