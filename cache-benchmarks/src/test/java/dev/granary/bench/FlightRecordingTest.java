// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JFR recording of two loader epochs — a cold one over a small memory tier and a disk tier, then a warm one from the
 * disk tier reopened — read back with {@link RecordingFile}: one {@code dev.granary.OriginRead} per object read from
 * the origin, one {@code dev.granary.BatchWait} per batch, a {@code dev.granary.Eviction} per page the memory tier
 * evicted, a {@code dev.granary.DiskRecovery} per disk tier opened; each with the figures the cache reports. (Here
 * because this module's tests compile off the module path, where {@code jdk.jfr} is readable; the loader's do not.)
 */
@Timeout(120)
class FlightRecordingTest {

    private static final int OBJECTS = 96;
    private static final int SIZE = 8192;
    private static final int BATCH = 8;

    @TempDir
    Path dir;

    @Test
    void aRecordedEpochHasTheGranaryEvents() throws Exception {
        Path data = Files.createDirectories(dir.resolve("data"));
        Set<String> keys = new TreeSet<>();
        for (int i = 0; i < OBJECTS; i++) {
            byte[] bytes = new byte[SIZE];
            Arrays.fill(bytes, (byte) i);
            String key = String.format("%03d.bin", i);
            Files.write(data.resolve(key), bytes);
            keys.add(key);
        }
        Path disk = dir.resolve("disk");
        Path file = dir.resolve("rec.jfr");
        long evictions;
        try (Recording recording = new Recording()) {
            for (String name : List.of("OriginRead", "BatchWait", "Eviction", "DiskRecovery", "CoalescedMiss")) {
                recording.enable("dev.granary." + name).withoutThreshold();
            }
            recording.start();
            try (TieredCache cache = cache(data, disk);
                    DataLoader<Integer> loader = loader(cache)) {
                try (Epoch<Integer> epoch = loader.epoch(0)) {
                    epoch.forEach(b -> {});
                }
                evictions = cache.stats().tiers().getFirst().evictions();
            }
            try (TieredCache cache = cache(data, disk);
                    DataLoader<Integer> loader = loader(cache)) {
                try (Epoch<Integer> epoch = loader.epoch(1)) {
                    epoch.forEach(b -> {});
                }
                assertEquals(0, cache.stats().origin().reads(), "epoch 1 came from the reopened disk tier");
                evictions += cache.stats().tiers().getFirst().evictions(); // hits promoted into memory evict too
            }
            recording.stop();
            recording.dump(file);
        }

        Map<String, List<RecordedEvent>> events = new TreeMap<>();
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            events.computeIfAbsent(e.getEventType().getName(), k -> new ArrayList<>())
                    .add(e);
        }

        List<RecordedEvent> reads = events.getOrDefault("dev.granary.OriginRead", List.of());
        assertEquals(OBJECTS, reads.size(), "one origin read per object, in epoch 0 only");
        Set<String> readKeys = new TreeSet<>();
        for (RecordedEvent e : reads) {
            readKeys.add(e.getString("key"));
            assertEquals(SIZE, e.getLong("bytes"));
            assertEquals(0, e.getLong("offset"));
            assertEquals(0, e.getInt("retries"));
            assertEquals("ok", e.getString("outcome"));
            assertEquals(data.toUri().toString(), e.getString("origin"));
            assertTrue(!e.getDuration().isNegative());
        }
        assertEquals(keys, readKeys);

        List<RecordedEvent> waits = events.getOrDefault("dev.granary.BatchWait", List.of());
        assertEquals(2 * OBJECTS / BATCH, waits.size(), "one per batch of each epoch");
        Map<Long, Set<Long>> batchesByEpoch = new TreeMap<>();
        for (RecordedEvent e : waits) {
            batchesByEpoch
                    .computeIfAbsent(e.getLong("epoch"), k -> new TreeSet<>())
                    .add(e.getLong("batch"));
            assertEquals(BATCH, e.getInt("samples"));
            assertTrue(!e.getBoolean("failed"));
            assertTrue(e.getString("loader").contains("objects"), e.getString("loader"));
        }
        Set<Long> all = new TreeSet<>();
        for (long b = 0; b < OBJECTS / BATCH; b++) {
            all.add(b);
        }
        assertEquals(Map.of(0L, all, 1L, all), batchesByEpoch);

        List<RecordedEvent> evicted = events.getOrDefault("dev.granary.Eviction", List.of());
        assertTrue(evictions > 0, "the memory tier is smaller than the data");
        assertEquals(
                evictions,
                evicted.stream()
                        .filter(e -> e.getString("tier").equals("memory"))
                        .count());
        for (RecordedEvent e : evicted) {
            assertTrue(keys.contains(e.getString("key")), e.getString("key"));
            assertEquals(SIZE, e.getLong("bytes"));
        }

        List<RecordedEvent> recoveries = events.getOrDefault("dev.granary.DiskRecovery", List.of());
        assertEquals(2, recoveries.size(), "one per disk tier opened");
        assertEquals(0, recoveries.get(0).getLong("pages"), "the first open found an empty directory");
        assertEquals(OBJECTS, recoveries.get(1).getLong("pages"), "the reopen indexed every page of epoch 0");
        assertEquals("disk", recoveries.get(1).getString("tier"));
        assertEquals(disk.toString(), recoveries.get(1).getString("directory"));
    }

    private static TieredCache cache(Path data, Path disk) {
        return TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder()
                        .name("memory")
                        .capacity(256 << 10)
                        .slabSize(64 << 10)
                        .build())
                .tier(DiskTier.builder()
                        .name("disk")
                        .directory(disk)
                        .capacity(4L << 20)
                        .segmentSize(64 << 10)
                        .build())
                .pageSize(64 << 10)
                .build();
    }

    private static DataLoader<Integer> loader(TieredCache cache) throws IOException {
        // Not driven: the memory tier's own policy evicts as the epoch streams through it.
        return DataLoader.<Integer>builder(
                        Dataset.ofObjects(cache, ""), s -> s.bytes().get(0) & 0xff)
                .batchSize(BATCH)
                .workers(2)
                .prefetch(2)
                .driveCache(false)
                .build();
    }
}
