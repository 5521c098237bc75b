// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.Dataset;
import dev.granary.loader.testkit.LoaderOptionCases;
import dev.granary.testkit.LeakCheck;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every option of the loader reaches the iterator's loader through {@link GranaryDataSetIterator.Builder#loader},
 * its one way in (docs/decisions/0020-one-home-per-option.md). The options are {@code DataLoader.Builder}'s setters,
 * enumerated by reflection ({@link LoaderOptionCases}), each set to a value other than its default; the iterator's
 * loader must have it as a loader built directly does. An option the loader gains is enumerated too, and fails here
 * until it reaches the iterator — or is added to {@link #THE_ITERATORS_OWN}, refused with a reason.
 */
class EveryLoaderOptionTest {

    /**
     * The options the iterator keeps for itself, refused through {@code loader(...)}: it sizes and fills its staging.
     */
    private static final Set<String> THE_ITERATORS_OWN = Set.of("staging");

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path dir;

    @Test
    void everyLoaderOptionReachesTheIteratorsLoader() throws Exception {
        Shards shards = Shards.write(dir, 24, 8);
        try (TieredCache cache = Shards.cache(leaks, dir)) {
            Dataset samples = shards.dataset(cache);
            List<LoaderOptionCases.Case> cases = LoaderOptionCases.all(samples);
            assertEquals(LoaderOptionCases.setters().size(), cases.size(), "one case per option");
            for (LoaderOptionCases.Case option : cases) {
                GranaryDataSetIterator.Builder builder = GranaryDataSetIterator.builder(samples, Shards.ENCODER)
                        .features(Shards.COLUMNS)
                        .labels(Shards.CLASSES)
                        .loader(LoaderOptionCases.BASE);
                if (THE_ITERATORS_OWN.contains(option.name())) {
                    IllegalArgumentException e = assertThrows(
                            IllegalArgumentException.class, () -> builder.loader(option::apply), option.toString());
                    assertTrue(e.getMessage().startsWith(option.name() + ": "), e.getMessage());
                    continue;
                }
                try (GranaryDataSetIterator iterator =
                        builder.loader(option::apply).build()) {
                    option.assertReached(iterator.loader().options(), "a GranaryDataSetIterator");
                }
            }
        }
    }
}
