// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Collated batches in reusable off-heap staging buffers. */
class StagingTest {

    private static final int N = 100;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    @BeforeEach
    void setUp() {
        dev.granary.testkit.Dataset files = new dev.granary.testkit.Dataset(root, 3);
        for (int i = 0; i < N; i++) {
            files.put(String.format("train/%04d.bin", i), 200 + i);
        }
    }

    /** Writes each item (a sample index) as an int: the staging buffer then says which samples it holds. */
    private static long collateIndices(List<Integer> items, MemorySegment staging) {
        for (int i = 0; i < items.size(); i++) {
            staging.setAtIndex(ValueLayout.JAVA_INT, i, items.get(i));
        }
        return 4L * items.size();
    }

    @Test
    void everyBatchIsCollatedInOrderIntoAFewReusedBuffers() throws IOException {
        Set<Long> buffers = new HashSet<>();
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<Integer> loader = DataLoader.builder(Dataset.ofObjects(cache, "train/"), Sample::index)
                        .batchSize(8)
                        .shuffle(5)
                        .prefetch(3)
                        .staging(64, StagingTest::collateIndices)
                        .build()) {
            for (int e = 0; e < 3; e++) {
                try (Epoch<Integer> epoch = loader.epoch(e)) {
                    for (Batch<Integer> batch : epoch) {
                        MemorySegment staging = batch.staging();
                        assertTrue(staging.isReadOnly());
                        assertEquals(4L * batch.size(), staging.byteSize());
                        for (int i = 0; i < batch.size(); i++) {
                            assertEquals(
                                    batch.indices()[i],
                                    staging.getAtIndex(ValueLayout.JAVA_INT, i),
                                    "batch " + batch.index() + " item " + i);
                            assertEquals(batch.items().get(i), batch.indices()[i]);
                        }
                        buffers.add(staging.address());
                    }
                }
            }
            try (DataLoader<Integer> plain =
                    DataLoader.builder(loader.dataset(), Sample::index).build()) {
                assertEquals("no staging", plain.stagingPinning());
            }
            assertEquals("not requested", loader.stagingPinning());
        }
        assertTrue(buffers.size() <= 3 + 2, "buffers reused: " + buffers.size());
    }

    @Test
    void pinnedBuffersAreLockedOrTheRefusalIsReported() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<Integer> loader = DataLoader.builder(Dataset.ofObjects(cache, "train/"), Sample::index)
                        .batchSize(8)
                        .staging(4096, StagingTest::collateIndices)
                        .pinnedStaging(true)
                        .build();
                Epoch<Integer> epoch = loader.epoch(0)) {
            String pinning = loader.stagingPinning();
            assertTrue(pinning.equals("locked") || pinning.contains("mlock"), pinning);
            assertEquals(
                    N,
                    StreamSupport.stream(epoch.spliterator(), false)
                            .mapToInt(Batch::size)
                            .sum());
        }
    }

    @Test
    void aCollatorThatFailsOrOverrunsFailsItsBatchAndTheEpochGoesOn() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<Integer> loader = DataLoader.builder(Dataset.ofObjects(cache, "train/"), Sample::index)
                        .batchSize(10)
                        .staging(64, (items, staging) -> {
                            if (items.contains(15)) {
                                throw new IllegalArgumentException("tensor shape mismatch");
                            }
                            return items.contains(25) ? staging.byteSize() + 1 : collateIndices(items, staging);
                        })
                        .build();
                Epoch<Integer> epoch = loader.epoch(0)) {
            var it = epoch.iterator();
            assertEquals(10, it.next().size());
            IllegalStateException failed = assertThrows(IllegalStateException.class, it::next);
            assertTrue(
                    failed.getMessage().contains("collating batch 1")
                            && failed.getMessage().contains("tensor"),
                    failed.getMessage());
            IllegalStateException overrun = assertThrows(IllegalStateException.class, it::next);
            assertTrue(overrun.getMessage().contains("collator wrote 65 bytes"), overrun.getMessage());
            int rest = 0;
            while (it.hasNext()) {
                rest += it.next().size();
            }
            assertEquals(70, rest);
        }
    }

    @Test
    void withoutStagingABatchHasNone() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root);
                DataLoader<Integer> loader = DataLoader.builder(Dataset.ofObjects(cache, "train/"), Sample::index)
                        .batchSize(50)
                        .build();
                Epoch<Integer> epoch = loader.epoch(0)) {
            assertNull(epoch.iterator().next().staging());
        }
    }

    @Test
    void stagingArgumentsAreChecked() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            var b = DataLoader.builder(Dataset.ofObjects(cache, "train/"), Sample::index);
            IllegalArgumentException size =
                    assertThrows(IllegalArgumentException.class, () -> b.staging(0, StagingTest::collateIndices));
            assertTrue(size.getMessage().contains("staging buffer size: 0"), size.getMessage());
            IllegalArgumentException none = assertThrows(IllegalArgumentException.class, () -> b.staging(8, null));
            assertTrue(none.getMessage().contains("collator: null"), none.getMessage());
            IllegalArgumentException pinnedAlone = assertThrows(
                    IllegalArgumentException.class, () -> b.pinnedStaging(true).build());
            assertNotEquals(-1, pinnedAlone.getMessage().indexOf("pinned staging"), pinnedAlone.getMessage());
        }
    }
}
