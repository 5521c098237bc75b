// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.PrestageResult;
import dev.granary.Progress;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Await;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.Gate;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link TieredCache#prestage} over real files (a POSIX origin) into a real disk tier under a memory tier: what it
 * stages, that a new cache over the reopened directory reads everything without one origin data read, that a second run
 * skips what the first staged, cancellation (by {@link Progress#cancel()} and by interrupt), and failures named per
 * object (a read error, a missing key, a disk that cannot take segments).
 */
@Timeout(60)
class PrestageTest {

    private static final int PAGE = 16 << 10;
    private static final int OBJECTS = 40;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Path data;
    private Path dir;
    private Dataset dataset;
    private long totalBytes;
    private long totalPages;

    @BeforeEach
    void setUp() throws IOException {
        data = Files.createDirectories(root.resolve("data"));
        dir = root.resolve("disk");
        dataset = new Dataset(data, 11);
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < OBJECTS; i++) {
            // Sizes from one byte to several pages, and one empty object.
            byte[] bytes = dataset.put(String.format("train/%03d.bin", i), i == 7 ? 0 : 1 + random.nextInt(70_000));
            totalBytes += bytes.length;
            totalPages += (bytes.length + PAGE - 1) / PAGE;
        }
        dataset.put("trainee.txt", 10); // matches the prefix "train" but not "train/"
        dataset.put("val/0.bin", 100);
    }

    private DiskTier.Builder disk() {
        return DiskTier.builder().directory(dir).capacity(8L << 20).segmentSize(256 << 10);
    }

    private TieredCache cache(FaultyOrigin origin, DiskTier disk) {
        MemoryTier memory = MemoryTier.builder().capacity(4L << 20).build();
        TieredCache cache = TieredCache.builder(origin)
                .tier(memory)
                .tier(disk)
                .pageSize(PAGE)
                .leakDetection(LeakDetection.PARANOID)
                .build();
        leaks.released("disk tier " + disk, disk::isReleased);
        leaks.released("memory tier", memory::isReleased);
        return leaks.watch(cache);
    }

    @Test
    void stagesAPrefixIntoTheDiskTierAndANewCacheReadsItWithoutTheOrigin() throws Exception {
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(data));
        List<Progress> seen = new CopyOnWriteArrayList<>();
        PrestageResult result;
        try (TieredCache cache = cache(origin, disk().build())) {
            result = cache.prestage("train/", seen::add);
            // Staged below memory: the memory tier was neither filled nor asked.
            assertEquals(0, cache.stats().tiers().get(0).usedBytes(), "memory tier stays empty");
            assertEquals(totalPages, origin.reads(), "one origin read per page");
        }
        assertEquals(OBJECTS, result.objects());
        assertEquals(totalBytes, result.bytes());
        assertEquals(totalBytes, result.bytesFetched());
        assertEquals(1, result.alreadyCached(), "only the empty object needs nothing");
        assertTrue(result.complete(), result.toString());
        assertEquals(List.of(), result.failed());
        Progress last = seen.getLast();
        assertEquals(OBJECTS, last.objectsDone());
        assertEquals(OBJECTS, last.objectsTotal());
        assertEquals(totalBytes, last.bytesTotal());
        assertEquals(totalBytes, last.bytesDone());
        for (int i = 1; i < seen.size(); i++) {
            assertTrue(seen.get(i).objectsDone() >= seen.get(i - 1).objectsDone(), "progress only grows");
            assertTrue(seen.get(i).bytesDone() >= seen.get(i - 1).bytesDone(), "progress only grows");
        }
        assertEquals(Duration.ZERO, last.eta().orElseThrow());

        // A new process's cache over the same directory: every object comes from the disk tier.
        FaultyOrigin second = new FaultyOrigin(PosixOrigin.of(data));
        try (TieredCache cache = cache(second, disk().build())) {
            for (Map.Entry<String, byte[]> e : dataset.objects().entrySet()) {
                if (!e.getKey().startsWith("train/")) {
                    continue;
                }
                try (Lease lease = cache.read(e.getKey())) {
                    Bytes.assertSame(e.getValue(), lease.bytes(), e.getKey());
                }
            }
            assertEquals(0, second.reads(), "no origin data read after a prestage");
            assertEquals(0, cache.stats().origin().reads());
        }
    }

    @Test
    void aSecondRunSkipsWhatTheFirstStaged() throws Exception {
        List<String> half = new ArrayList<>();
        long halfPages = 0;
        for (Map.Entry<String, byte[]> e : dataset.objects().entrySet()) {
            if (e.getKey().startsWith("train/") && half.size() < OBJECTS / 2) {
                half.add(e.getKey());
                halfPages += (e.getValue().length + PAGE - 1) / PAGE;
            }
        }
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(data));
        try (TieredCache cache = cache(origin, disk().build())) {
            List<Progress> seen = new CopyOnWriteArrayList<>();
            PrestageResult first = cache.prestage(half, seen::add);
            assertEquals(half.size(), first.objects());
            assertEquals(half.size(), seen.getLast().objectsTotal(), "a key list's size is known at once");
            assertEquals(halfPages, origin.reads());
        }
        // Resumed by another cache (another process) over the same directory.
        FaultyOrigin again = new FaultyOrigin(PosixOrigin.of(data));
        try (TieredCache cache = cache(again, disk().build())) {
            PrestageResult second = cache.prestage("train/", p -> {});
            assertEquals(OBJECTS, second.objects());
            assertEquals(half.size(), second.alreadyCached(), "the first half (with the empty object in it)");
            assertEquals(totalPages - halfPages, again.reads(), "only the missing pages are read");
            assertTrue(second.complete());
        }
    }

    @Test
    void aDatasetLargerThanTheStagingTierStagesWhatFitsKeepsItAndSaysWhatIsLeft() throws Exception {
        // Room for about a third of the dataset: 4 segments of 128 KiB against ~1.4 MB.
        DiskTier.Builder small =
                DiskTier.builder().directory(dir).capacity(512 << 10).segmentSize(128 << 10);
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(data));
        PrestageResult first;
        try (TieredCache cache = cache(origin, small.build())) {
            first = cache.prestage("train/", p -> {});
        }
        assertTrue(first.objects() > 1 && first.notStaged() > 0, first.toString());
        assertEquals(OBJECTS, first.objects() + first.notStaged() + first.failedCount(), first.toString());
        assertEquals(0, first.failedCount(), "a full tier is no failure: " + first.failed());
        assertFalse(first.complete(), "objects left out: not complete");
        assertEquals(totalBytes, first.bytes() + first.bytesNotStaged(), first.toString());
        long stagedPages = 0;
        for (Map.Entry<String, byte[]> e : dataset.objects().entrySet()) {
            stagedPages += (e.getValue().length + PAGE - 1) / PAGE;
        }
        assertTrue(
                origin.reads() < stagedPages / 2,
                "fetching stops once the tier is full: " + origin.reads() + " reads of " + stagedPages + " pages");

        // A second run over the same directory finds all of it first, and fetches little: the tier is still full.
        FaultyOrigin again = new FaultyOrigin(PosixOrigin.of(data));
        PrestageResult second;
        try (TieredCache cache = cache(again, small.build())) {
            second = cache.prestage("train/", p -> {});
        }
        assertTrue(
                second.alreadyCached() >= first.objects(),
                "nothing the first run kept was pushed out: " + second + " after " + first);
        assertEquals(OBJECTS, second.objects() + second.notStaged(), second.toString());
        assertFalse(second.complete());

        // Everything counted as staged is held: a new cache reads it without the origin (its disk tier is opened
        // larger, so its own fills of the rest evict nothing while it counts).
        FaultyOrigin reader = new FaultyOrigin(PosixOrigin.of(data));
        int held = 0;
        try (TieredCache cache = cache(
                reader,
                DiskTier.builder()
                        .directory(dir)
                        .capacity(64L << 20)
                        .segmentSize(128 << 10)
                        .build())) {
            for (Map.Entry<String, byte[]> e : dataset.objects().entrySet()) {
                if (!e.getKey().startsWith("train/")) {
                    continue;
                }
                int before = reader.reads();
                try (Lease lease = cache.read(e.getKey())) {
                    Bytes.assertSame(e.getValue(), lease.bytes(), e.getKey());
                }
                held += reader.reads() == before ? 1 : 0;
            }
        }
        assertEquals(second.objects(), held, "staged " + second.objects() + ", held " + held);
    }

    @Test
    void anEmptySelectionIsRefused() throws Exception {
        try (TieredCache cache = cache(new FaultyOrigin(PosixOrigin.of(data)), disk().build())) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> cache.prestage("trian/", p -> {}));
            assertTrue(e.getMessage().startsWith("prefix 'trian/': no object under it at "), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> cache.prestage(List.of(), p -> {}));
            assertTrue(e.getMessage().startsWith("keys: empty"), e.getMessage());
        }
    }

    @Test
    void cancelFromTheListenerStopsAndALaterRunFinishes() throws Exception {
        Gate gate = new Gate();
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(data, 2)).holdReads(gate);
        try (TieredCache cache = cache(origin, disk().build())) {
            PrestageResult cancelled = cache.prestage("train/", p -> {
                p.cancel();
                gate.open();
            });
            assertTrue(cancelled.cancelled());
            assertFalse(cancelled.complete());
            assertEquals(0, cancelled.failedCount());
            // Two reads in flight when it was cancelled: at most the two objects they belong to finished.
            assertTrue(cancelled.objects() <= 2, cancelled.toString());
            assertTrue(origin.reads() <= 2, "no read started after the cancel: " + origin.reads());

            PrestageResult rest = cache.prestage("train/", p -> {});
            assertEquals(OBJECTS, rest.objects());
            assertTrue(rest.complete());
        }
    }

    @Test
    void interruptingTheCallerCancels() throws Exception {
        Gate gate = new Gate();
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(data, 2)).holdReads(gate);
        try (TieredCache cache = cache(origin, disk().build())) {
            AtomicReference<PrestageResult> result = new AtomicReference<>();
            AtomicReference<Boolean> flag = new AtomicReference<>();
            Thread caller = Thread.ofPlatform().start(() -> {
                try {
                    result.set(cache.prestage("train/", p -> {}));
                    flag.set(Thread.currentThread().isInterrupted());
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            Await.until(() -> gate.waiting() == 2, () -> "two reads waiting at the gate");
            caller.interrupt();
            gate.open();
            caller.join();
            assertTrue(result.get().cancelled(), String.valueOf(result.get()));
            assertTrue(result.get().objects() < OBJECTS);
            assertTrue(flag.get(), "the interrupt flag is set again for the caller");
        }
    }

    @Test
    void failuresAreNamedPerObjectAndTheRestIsStaged() throws Exception {
        String bad = "train/003.bin";
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(data)).onRead((object, position, length) -> {
            if (object.key().equals(bad)) {
                throw new IOException("injected: connection reset reading " + object.key());
            }
        });
        try (TieredCache cache = cache(origin, disk().build())) {
            PrestageResult result = cache.prestage("train/", p -> {});
            assertEquals(OBJECTS - 1, result.objects());
            assertEquals(1, result.failedCount());
            assertEquals(bad, result.failed().getFirst().key());
            assertTrue(
                    result.failed().getFirst().reason().contains("injected: connection reset"),
                    result.failed().getFirst().reason());
            assertFalse(result.complete());

            PrestageResult missing = cache.prestage(List.of("train/000.bin", "train/nope.bin"), p -> {});
            assertEquals(1, missing.objects());
            assertEquals(1, missing.alreadyCached());
            assertEquals("train/nope.bin", missing.failed().getFirst().key());
            assertTrue(
                    missing.failed().getFirst().reason().startsWith("NoSuchObjectException"),
                    missing.failed().getFirst().reason());
        }
    }

    @Test
    void aDiskThatCannotTakeSegmentsFailsEveryObjectNamingTheTier() throws Exception {
        DiskTier full = disk().files((file, size) -> {
                    throw new IOException("No space left on device");
                })
                .retryAfter(Duration.ofHours(1))
                .build();
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(data));
        try (TieredCache cache = cache(origin, full)) {
            PrestageResult result = cache.prestage("train/", p -> {});
            assertEquals(1, result.objects(), "only the empty object: it has no page");
            assertEquals(OBJECTS - 1, result.failedCount());
            assertTrue(
                    result.failed().getFirst().reason().contains("'disk' refused"),
                    result.failed().getFirst().reason());
        }
    }

    @Test
    void badArgumentsAreRefused() throws Exception {
        try (TieredCache cache = cache(new FaultyOrigin(PosixOrigin.of(data)), disk().build())) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> cache.prestage("../x", p -> {}));
            assertTrue(e.getMessage().contains("'..'"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> cache.prestage("train/", null));
            assertTrue(e.getMessage().startsWith("progress listener: null"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> cache.prestage((List<String>) null, p -> {}));
        }
    }
}
