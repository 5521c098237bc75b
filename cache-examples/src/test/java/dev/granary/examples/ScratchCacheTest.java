// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The cookbook's scratch recipe: the job's cache directory exists while it trains and is gone after. */
@Timeout(60)
class ScratchCacheTest {

    @TempDir
    Path temp;

    @Test
    void theCacheDirectoryIsRemovedWhenTheJobEnds() throws IOException {
        ExampleData data = ExampleData.write(temp.resolve("data"), 200, 32 << 10);
        Path scratch = temp.resolve("tmp").resolve("granary-job-17");
        AtomicLong bytes = new AtomicLong();
        AtomicLong whileTraining = new AtomicLong();

        ScratchCache.train(data.root(), scratch, 2, sizes -> {
            sizes.forEach(bytes::addAndGet);
            if (Files.isDirectory(scratch)) {
                whileTraining.incrementAndGet();
            }
        });

        assertEquals(2 * data.totalBytes(), bytes.get(), "every byte of every file, twice");
        assertTrue(whileTraining.get() > 0, "the directory exists while the job runs");
        assertFalse(Files.exists(scratch), "removed at close");
        assertTrue(Files.isDirectory(temp.resolve("tmp")), "its parent is kept");
    }
}
