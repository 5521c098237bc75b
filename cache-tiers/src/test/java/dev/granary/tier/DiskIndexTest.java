// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The disk tier's primitive index ({@link DiskIndex}, {@link ObjectNames}) through the tier itself, against a model:
 * random puts, removals, invalidations and evictions (tiny segments), then every key looked up; and readers leasing
 * pages under optimistic reads while writers add, remove and evict, every byte checked.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DiskIndexTest {

    private static final int PAGE = 512;
    private static final long SEGMENT = 16 << 10;

    @TempDir
    Path root;

    /** Page bytes are a function of the key: a wrong page can never pass for the right one. */
    private static byte[] bytesOf(PageKey key) {
        byte[] b = new byte[key.length()];
        long seed = key.key().hashCode() * 31L + key.version().hashCode() * 17L + key.offset();
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    private static Page heapPage(PageKey key) {
        Page page = new Page(key, MemorySegment.ofArray(bytesOf(key))) {
            @Override
            protected void deallocate() {}
        };
        page.seal();
        return page;
    }

    private static PageKey key(int object, int version, int page) {
        return new PageKey("file:///data/", "obj/" + object, "v" + version, (long) page * PAGE, PAGE);
    }

    private static void assertBytes(PageKey key, Page page) {
        byte[] expected = bytesOf(key);
        assertEquals(
                -1,
                MemorySegment.mismatch(
                        page.segment(), 0, page.length(), MemorySegment.ofArray(expected), 0, expected.length),
                "bytes of " + key);
    }

    @Test
    void agreesWithAModelUnderRandomOperations() {
        SplittableRandom random = new SplittableRandom(17);
        Set<PageKey> model = new HashSet<>(); // what the tier may hold: a superset of what it does hold
        try (DiskTier tier = DiskTier.builder()
                .directory(root.resolve("d"))
                .capacity(8 * SEGMENT)
                .segmentSize(SEGMENT)
                .build()) {
            for (int step = 0; step < 20_000; step++) {
                PageKey key = key(random.nextInt(40), random.nextInt(3), random.nextInt(6));
                int op = random.nextInt(10);
                if (op < 6) {
                    if (tier.put(heapPage(key))) {
                        model.add(key);
                    }
                } else if (op < 8) {
                    boolean removed = tier.remove(key);
                    assertTrue(!removed || model.contains(key), "removed a page never put: " + key);
                    model.remove(key);
                    assertNull(tier.get(key), "gone after remove: " + key);
                } else if (op < 9) {
                    tier.invalidate(key.origin(), key.key());
                    model.removeIf(k -> k.key().equals(key.key()));
                    for (int v = 0; v < 3; v++) {
                        assertNull(tier.get(key(Integer.parseInt(key.key().substring(4)), v, 0)));
                    }
                } else {
                    Page page = tier.get(key);
                    if (page != null) {
                        assertTrue(model.contains(key), "served a page not put: " + key);
                        assertBytes(key, page);
                        page.release();
                    }
                }
            }
            // Every key the tier says it holds is one that was put, served with its own bytes; evictions happened.
            int held = 0;
            for (PageKey key : tier.keys()) {
                assertTrue(model.contains(key), "held but never put (or removed): " + key);
                Page page = tier.get(key);
                assertNotNull(page, "listed but not served: " + key);
                assertBytes(key, page);
                page.release();
                held++;
            }
            assertEquals(tier.pageCount(), held);
            assertTrue(tier.stats().evictions() > 0, "the run evicted segments: " + tier.stats());
        }
        // And after a reopen: the same pages, every one checked against its CRC on first read.
        try (DiskTier reopened = DiskTier.builder()
                .directory(root.resolve("d"))
                .capacity(8 * SEGMENT)
                .segmentSize(SEGMENT)
                .build()) {
            for (PageKey key : reopened.keys()) {
                Page page = reopened.get(key);
                assertNotNull(page, key.toString());
                assertBytes(key, page);
                page.release();
            }
            assertEquals(0, reopened.stats().corruptions());
        }
    }

    @Test
    void reopenIndexesEveryRecordOnceAndSharesNamesAmongAnObjectsPages() throws Exception {
        SplittableRandom random = new SplittableRandom(29);
        Set<PageKey> model = new HashSet<>();
        Path directory = root.resolve("r");
        try (DiskTier tier = DiskTier.builder()
                .directory(directory)
                .capacity(64 * SEGMENT)
                .segmentSize(SEGMENT)
                .build()) {
            for (int object = 0; object < 60; object++) {
                // One set of strings per object, as the cache passes them; 1 to 8 pages each.
                String name = "obj/" + object;
                String version = "v" + random.nextInt(3);
                int pages = 1 + random.nextInt(8);
                for (int p = 0; p < pages; p++) {
                    PageKey key = new PageKey("file:///data/", name, version, (long) p * PAGE, PAGE);
                    assertTrue(tier.put(heapPage(key)), key.toString());
                    model.add(key);
                    if (random.nextInt(4) == 0) { // a second record of the same page, in this or a later segment
                        assertTrue(tier.remove(key));
                        assertTrue(tier.put(heapPage(key)), key.toString());
                    }
                }
            }
            assertEquals(0, tier.stats().evictions(), "no evictions: every record put is on disk");
        }
        try (var files = java.nio.file.Files.list(directory.resolve(DiskDirectory.SEGMENTS))) {
            assertTrue(files.count() > 4, "several segments written");
        }
        try (DiskTier reopened = DiskTier.builder()
                .directory(directory)
                .capacity(64 * SEGMENT)
                .segmentSize(SEGMENT)
                .build()) {
            assertEquals(model.size(), reopened.pageCount(), "each page once, whatever records it has");
            Set<String> objects = new HashSet<>();
            for (PageKey key : model) {
                Page page = reopened.get(key);
                assertNotNull(page, key.toString());
                assertBytes(key, page);
                page.release();
                objects.add(key.key());
            }
            assertEquals(objects.size(), reopened.index().nameCount(), "one name per object version");
            for (PageKey key : model) {
                assertTrue(reopened.remove(key), key.toString());
            }
            assertEquals(0, reopened.index().nameCount(), "no name outlives its last page");
        }
    }

    @Test
    void objectNamesSurviveCollidingRemovals() {
        ObjectNames names = new ObjectNames();
        Map<Integer, String> ids = new HashMap<>();
        List<Integer> live = new ArrayList<>();
        SplittableRandom random = new SplittableRandom(3);
        for (int i = 0; i < 5_000; i++) {
            if (live.isEmpty() || random.nextInt(3) > 0) {
                String key = "k" + random.nextInt(2_000);
                int id = names.acquire("o", key, "v");
                String previous = ids.putIfAbsent(id, key);
                assertTrue(previous == null || previous.equals(key), "id " + id + " names two objects");
                live.add(id);
            } else {
                int id = live.remove(random.nextInt(live.size()));
                String key = ids.get(id);
                names.release(id);
                if (!live.contains(id)) {
                    ids.remove(id);
                    assertEquals(-1, names.find("o", key, "v", ObjectNames.hash("o", key, "v")), key);
                }
            }
            for (Map.Entry<Integer, String> e : ids.entrySet()) {
                if (random.nextInt(50) == 0) {
                    assertEquals(
                            (int) e.getKey(),
                            names.find("o", e.getValue(), "v", ObjectNames.hash("o", e.getValue(), "v")),
                            e.getValue());
                }
            }
        }
        assertEquals(ids.size(), names.size());
    }

    /** Names a recovery scan adds as bytes are the same names as those added as strings, and survive compaction. */
    @Test
    void objectNamesHeldAsBytesAreTheNamesTheirStringsSay() {
        for (String[] n : new String[][] {
            {"train/000123.jpg", "4096-1700000004551-1000123"}, {"", ""}, {"k", ""}, {"a/b c~!", "W/\"etag\""}
        }) {
            byte[] b = (n[0] + n[1]).getBytes(StandardCharsets.US_ASCII);
            assertEquals(
                    ObjectNames.hash("o", n[0], n[1]),
                    ObjectNames.hash("o", b, 0, n[0].length(), n[0].length(), n[1].length()),
                    "hash of " + n[0] + " " + n[1]);
        }
        ObjectNames names = new ObjectNames();
        Map<Integer, String> ids = new HashMap<>(); // id -> key, for names whose version is "v" + key
        Map<Integer, Integer> counts = new HashMap<>();
        SplittableRandom random = new SplittableRandom(11);
        int asBytes = 0;
        for (int i = 0; i < 200_000; i++) {
            String key = "train/" + random.nextInt(30_000) + ".jpg";
            String version = "v" + key.length() + key;
            int hash = ObjectNames.hash("o", key, version);
            if (random.nextInt(3) > 0) { // add one page of it, as a put (strings) or a recovery (bytes) would
                int id;
                if (random.nextBoolean()) {
                    id = names.acquire(names.find("o", key, version, hash), "o", key, version, hash);
                } else {
                    byte[] b = ("xx" + key + version).getBytes(StandardCharsets.US_ASCII);
                    int found = names.find("o", b, 2, key.length(), 2 + key.length(), version.length(), hash);
                    assertEquals(names.find("o", key, version, hash), found, key);
                    id = names.acquireBytes(found, "o", b, 2, key.length(), 2 + key.length(), version.length(), hash);
                    if (found < 0) {
                        assertTrue(names.heldAsBytes(id), key);
                        asBytes++;
                    }
                }
                String previous = ids.putIfAbsent(id, key);
                assertTrue(previous == null || previous.equals(key), "id " + id + " names " + previous + " and " + key);
                counts.merge(id, 1, Integer::sum);
            } else if (!ids.isEmpty()) { // release one page of some name
                int id = names.find("o", key, version, hash);
                if (id >= 0) {
                    names.release(id);
                    if (counts.merge(id, -1, Integer::sum) == 0) {
                        counts.remove(id);
                        ids.remove(id);
                        assertEquals(-1, names.find("o", key, version, hash), key);
                    }
                }
            }
        }
        assertTrue(asBytes > 10_000, "names added as bytes: " + asBytes);
        assertEquals(ids.size(), names.size());
        for (Map.Entry<Integer, String> e : ids.entrySet()) {
            String key = e.getValue();
            String version = "v" + key.length() + key;
            int id = e.getKey();
            assertEquals(id, names.find("o", key, version, ObjectNames.hash("o", key, version)), key);
            assertEquals(key, names.key(id));
            assertEquals(version, names.version(id));
            assertTrue(names.keyIs(id, key));
            assertFalse(names.keyIs(id, key + "x"));
            assertEquals(-1, names.find("o", key, version + "x", ObjectNames.hash("o", key, version + "x")));
            assertEquals(-1, names.find("p", key, version, ObjectNames.hash("p", key, version)));
        }
    }

    /**
     * After a reopen, names are held as the scan's bytes (or decoded strings where not ASCII): pages are found under
     * their keys, listed with their keys, invalidated by key, and a name goes with its last page.
     */
    @Test
    void reopenedNamesServeLookupsListingsAndInvalidations() throws Exception {
        Path directory = root.resolve("n");
        List<PageKey> keys = new ArrayList<>();
        for (int object = 0; object < 40; object++) {
            String name = object % 4 == 0 ? "données/é" + object + ".jpg" : "train/" + object + ".jpg";
            String version = object % 8 == 1 ? "v\u00e9" + object : "v" + object;
            for (int p = 0; p < 1 + object % 3; p++) {
                keys.add(new PageKey(
                        object % 5 == 0 ? "s3://b/" : "file:///data/", name, version, (long) p * PAGE, PAGE));
            }
        }
        try (DiskTier tier = DiskTier.builder()
                .directory(directory)
                .capacity(64 * SEGMENT)
                .segmentSize(SEGMENT)
                .build()) {
            for (PageKey key : keys) {
                assertTrue(tier.put(heapPage(key)), key.toString());
            }
        }
        try (DiskTier reopened = DiskTier.builder()
                .directory(directory)
                .capacity(64 * SEGMENT)
                .segmentSize(SEGMENT)
                .build()) {
            assertEquals(keys.size(), reopened.pageCount());
            assertEquals(new HashSet<>(keys), new HashSet<>(reopened.keys()), "listed under their own keys");
            for (PageKey key : keys) {
                Page page = reopened.get(key);
                assertNotNull(page, key.toString());
                assertBytes(key, page);
                page.release();
                assertNull(reopened.get(
                        new PageKey(key.origin(), key.key(), key.version() + "x", key.offset(), key.length())));
            }
            PageKey first = keys.get(0); // "données/é0.jpg": decoded strings
            PageKey ascii = keys.get(3); // "train/2.jpg", "v2": bytes
            assertFalse(reopened.index().nameHeldAsBytes(first));
            assertFalse(reopened.index().nameHeldAsBytes(keys.get(1)), "train/1.jpg, version not ASCII");
            assertTrue(reopened.index().nameHeldAsBytes(ascii));
            reopened.invalidate(first.origin(), first.key());
            reopened.invalidate(ascii.origin(), ascii.key());
            assertNull(reopened.get(first));
            assertNull(reopened.get(ascii));
            assertEquals(38, reopened.index().nameCount(), "two names gone with their pages");
            // A put of a page the reopened tier already holds (its name as bytes) finds it: no second record.
            PageKey held = keys.get(keys.size() - 1);
            assertTrue(reopened.put(heapPage(held)));
            assertEquals(38, reopened.index().nameCount());
        }
    }

    @Test
    void readersLeaseOnlyRightBytesWhileWritersChurn() throws InterruptedException {
        try (DiskTier tier = DiskTier.builder()
                .directory(root.resolve("c"))
                .capacity(6 * SEGMENT)
                .segmentSize(SEGMENT)
                .build()) {
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicLong hits = new AtomicLong();
            CountDownLatch done = new CountDownLatch(2);
            List<Thread> threads = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                int seed = w;
                threads.add(Thread.ofPlatform().start(() -> {
                    SplittableRandom random = new SplittableRandom(seed);
                    try {
                        for (int i = 0; i < 20_000 && failure.get() == null; i++) {
                            PageKey key = key(random.nextInt(200), random.nextInt(2), random.nextInt(4));
                            if (random.nextInt(8) == 0) {
                                tier.remove(key);
                            } else {
                                tier.put(heapPage(key));
                            }
                        }
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    } finally {
                        done.countDown();
                    }
                }));
            }
            for (int r = 0; r < 3; r++) {
                int seed = 100 + r;
                threads.add(Thread.ofPlatform().start(() -> {
                    SplittableRandom random = new SplittableRandom(seed);
                    try {
                        while (done.getCount() > 0 && failure.get() == null) {
                            PageKey key = key(random.nextInt(200), random.nextInt(2), random.nextInt(4));
                            Page page = tier.get(key);
                            if (page != null) {
                                assertEquals(key, page.key());
                                assertBytes(key, page);
                                // the first bytes again, read after others may have evicted the segment: still ours
                                assertEquals(bytesOf(key)[0], page.segment().get(ValueLayout.JAVA_BYTE, 0));
                                page.release();
                                hits.incrementAndGet();
                            }
                        }
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
            if (failure.get() != null) {
                throw new AssertionError("a reader or writer failed", failure.get());
            }
            assertTrue(hits.get() > 0, "readers hit pages while writers churned");
            assertTrue(tier.stats().evictions() > 0, "segments were evicted meanwhile: " + tier.stats());
        }
    }

    @Test
    void leasedPagesKeepTheirSegmentMappedAfterEviction() {
        try (DiskTier tier = DiskTier.builder()
                .directory(root.resolve("l"))
                .capacity(4 * SEGMENT)
                .segmentSize(SEGMENT)
                .build()) {
            PageKey first = key(0, 0, 0);
            assertTrue(tier.put(heapPage(first)));
            Page held = tier.get(first);
            assertNotNull(held);
            for (int i = 1; i < 400; i++) {
                tier.put(heapPage(key(i, 0, 0)));
            }
            assertNull(tier.get(first), "its segment was evicted");
            assertBytes(first, held); // still mapped: the lease holds the segment
            assertFalse(tier.isReleased());
            held.release();
        }
    }
}
