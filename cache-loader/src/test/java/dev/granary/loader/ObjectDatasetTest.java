// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Origin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Dataset#ofObjects} and {@link Dataset#ofKeys} over real files: reads pinned to the listing (no stat, however
 * small the cache's metadata), objects changed or deleted after the listing, listings out of order, and the compact
 * storage of keys, sizes and versions rebuilt exactly.
 */
class ObjectDatasetTest {

    private static final int N = 300;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private dev.granary.testkit.Dataset files;

    @BeforeEach
    void setUp() {
        files = new dev.granary.testkit.Dataset(root, 7);
        for (int i = 0; i < N; i++) {
            // sizes on both sides of the 4 KiB page: one page, several pages, and empty
            files.put(String.format("train/c%02d/%05d.bin", i % 7, i), i == 5 ? 0 : 200 + (i * 131) % 9000);
        }
    }

    private TieredCache cache(Origin origin, int metadataCapacity, Duration ttl) {
        MemoryTier memory =
                MemoryTier.builder().capacity(16L << 20).slabSize(1 << 20).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        return leaks.watch(TieredCache.builder(origin)
                .tier(memory)
                .pageSize(4096)
                .metadataCapacity(metadataCapacity)
                .metadataTtl(ttl)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }

    /** Reads sample {@code index} and copies its bytes; releases it. */
    private static byte[] read(Dataset dataset, int index) throws IOException {
        Sample sample = dataset.read(index);
        try {
            ByteBuffer b = sample.bytes();
            byte[] out = new byte[b.remaining()];
            b.get(out);
            return out;
        } finally {
            sample.release();
        }
    }

    @Test
    void aListingOfMoreObjectsThanTheMetadataCapacityReadsEverySampleWithoutAStat() throws IOException {
        // A capacity of 16 and a TTL of zero: every sample read through the cache's metadata would stat.
        try (TieredCache cache = cache(PosixOrigin.of(root), 16, Duration.ZERO)) {
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            assertEquals(N, dataset.size());
            assertEquals(1, cache.stats().origin().metadataRequests(), "the listing");
            List<String> sorted = new ArrayList<>(new TreeMap<>(files.objects()).keySet());
            for (int epoch = 0; epoch < 2; epoch++) {
                try (DataLoader<LoaderFixture.Item> loader = DataLoader.builder(dataset, LoaderFixture::copy)
                                .batchSize(16)
                                .workers(2)
                                .shuffle(epoch)
                                .build();
                        Epoch<LoaderFixture.Item> e = loader.epoch(epoch)) {
                    int n = 0;
                    for (Batch<LoaderFixture.Item> batch : e) {
                        for (LoaderFixture.Item item : batch.items()) {
                            assertEquals(sorted.get(item.index()), item.key());
                            assertArrayEquals(files.bytes(item.key()), item.bytes(), item.key());
                            n++;
                        }
                    }
                    assertEquals(N, n);
                }
                assertEquals(1, cache.stats().origin().metadataRequests(), "no stat after the listing, epoch " + epoch);
            }
            // every sample was cached in epoch 0: epoch 1 read nothing more from the origin
            long expected = 0;
            for (byte[] b : files.objects().values()) {
                expected += b.length;
            }
            assertEquals(expected, cache.stats().origin().bytes());
            for (int i = 0; i < N; i++) {
                assertEquals(files.bytes(sorted.get(i)).length, dataset.byteSize(i));
            }
        }
    }

    @Test
    void anObjectChangedAfterTheListingFailsNamingItsKeyAndNeverYieldsItsNewBytes() throws IOException {
        try (TieredCache cache = cache(PosixOrigin.of(root), 1 << 20, Duration.ofHours(1))) {
            ObjectDataset dataset = (ObjectDataset) Dataset.ofObjects(cache, "train/");
            String cachedKey = dataset.key(10);
            String changedKey = dataset.key(20);
            byte[] listed = files.bytes(cachedKey);
            assertArrayEquals(listed, read(dataset, 10)); // now cached
            // both rewritten with the same sizes (a new inode, so a new version)
            files.put(cachedKey, files.bytes(cachedKey).length);
            files.put(changedKey, files.bytes(changedKey).length);
            assertArrayEquals(listed, read(dataset, 10), "cached bytes of the listed version are that version's");
            ObjectChangedException changed = assertThrows(ObjectChangedException.class, () -> dataset.read(20));
            assertEquals(changedKey, changed.key());
            assertTrue(changed.getMessage().contains("'" + changedKey + "'"), changed.getMessage());
            assertEquals(dataset.object(20).version(), changed.expectedVersion());
            // and through a loader: the sample's batch fails naming the key; every other sample arrives intact
            try (DataLoader<LoaderFixture.Item> loader = DataLoader.builder(dataset, LoaderFixture::copy)
                            .batchSize(8)
                            .build();
                    Epoch<LoaderFixture.Item> e = loader.epoch(0)) {
                var it = e.iterator();
                List<SampleException> failures = new ArrayList<>();
                int n = 0;
                while (it.hasNext()) {
                    try {
                        for (LoaderFixture.Item item : it.next().items()) {
                            byte[] expected = item.key().equals(cachedKey) ? listed : files.bytes(item.key());
                            assertArrayEquals(expected, item.bytes(), item.key());
                            n++;
                        }
                    } catch (SampleException failed) {
                        failures.add(failed);
                    }
                }
                assertEquals(1, failures.size(), failures.toString());
                assertEquals(changedKey, failures.get(0).key());
                assertInstanceOf(ObjectChangedException.class, failures.get(0).getCause());
                assertEquals(N - 8, n, "the failed batch's other samples are not delivered; the rest are");
            }
            // a new listing takes the change in
            Dataset again = Dataset.ofObjects(cache, "train/");
            assertArrayEquals(files.bytes(changedKey), read(again, 20));
        }
    }

    @Test
    void loaderSupportListDoesNotRememberTheVersionsWhereCacheListDoes() throws IOException {
        try (TieredCache cache = cache(PosixOrigin.of(root), 1 << 20, Duration.ofHours(1))) {
            List<ObjectInfo> listed;
            try (Stream<ObjectInfo> s = cache.loaderSupport().list("train/")) {
                listed = s.toList();
            }
            assertEquals(N, listed.size());
            assertEquals(1, cache.stats().origin().metadataRequests());
            assertEquals(listed.get(0), cache.stat(listed.get(0).key()));
            assertEquals(2, cache.stats().origin().metadataRequests(), "not remembered: a stat");
            try (Stream<ObjectInfo> s = cache.list("train/")) {
                assertEquals(N, s.count());
            }
            assertEquals(listed.get(1), cache.stat(listed.get(1).key()));
            assertEquals(3, cache.stats().origin().metadataRequests(), "remembered by cache.list: no stat");
        }
    }

    @Test
    void anObjectDeletedAfterTheListingFailsWithNoSuchObjectNamingItsKey() throws IOException {
        try (TieredCache cache = cache(PosixOrigin.of(root), 1 << 20, Duration.ofHours(1))) {
            ObjectDataset dataset = (ObjectDataset) Dataset.ofObjects(cache, "train/");
            String key = dataset.key(33);
            files.delete(key);
            NoSuchObjectException missing = assertThrows(NoSuchObjectException.class, () -> dataset.read(33));
            assertEquals(key, missing.key());
            assertTrue(missing.getMessage().contains("'" + key + "'"), missing.getMessage());
            assertEquals(1, cache.stats().origin().metadataRequests(), "the listing only");
        }
    }

    @Test
    void ofKeysReadsTheCurrentVersionAsCacheReadDoes() throws IOException {
        try (TieredCache cache = cache(PosixOrigin.of(root), 1 << 20, Duration.ZERO)) {
            List<String> keys = new ArrayList<>(files.objects().keySet()).reversed();
            ObjectDataset dataset = (ObjectDataset) Dataset.ofKeys(cache, keys);
            assertEquals(keys.size(), dataset.size());
            for (int i = 0; i < keys.size(); i++) {
                assertEquals(keys.get(i), dataset.key(i), "the given order, not sorted");
                assertEquals(-1, dataset.byteSize(i));
                assertNull(dataset.object(i));
            }
            String key = keys.get(3);
            files.put(key, 777);
            assertArrayEquals(files.bytes(key), read(dataset, 3), "the current version");
            assertEquals(1, cache.stats().origin().metadataRequests(), "one stat per read (TTL zero)");
            assertThrows(IndexOutOfBoundsException.class, () -> dataset.key(keys.size()));
            IllegalArgumentException lone = assertThrows(
                    IllegalArgumentException.class,
                    () -> Dataset.ofKeys(cache, List.of("train/a.jpg", "train/\uDC00.jpg")));
            assertTrue(
                    lone.getMessage().startsWith("key 1: ") && lone.getMessage().contains("unpaired surrogate"),
                    lone.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> dataset.byteSize(-1));
        }
    }

    @Test
    void aListingOutOfOrderIsSortedWithItsSizesAndVersions() throws IOException {
        try (TieredCache cache = cache(new Relisting(PosixOrigin.of(root), false), 1 << 20, Duration.ofHours(1))) {
            ObjectDataset dataset = (ObjectDataset) Dataset.ofObjects(cache, "train/");
            List<String> sorted = new ArrayList<>(new TreeMap<>(files.objects()).keySet());
            assertEquals(sorted.size(), dataset.size());
            for (int i = 0; i < sorted.size(); i++) {
                String key = sorted.get(i);
                assertEquals(key, dataset.key(i));
                assertEquals(files.bytes(key).length, dataset.byteSize(i));
                assertEquals(cache.loaderSupport().list(key).findFirst().orElseThrow(), dataset.object(i));
                assertArrayEquals(files.bytes(key), read(dataset, i), key);
            }
        }
        try (TieredCache cache = cache(new Relisting(PosixOrigin.of(root), true), 1 << 20, Duration.ofHours(1))) {
            IllegalArgumentException twice =
                    assertThrows(IllegalArgumentException.class, () -> Dataset.ofObjects(cache, "train/"));
            assertTrue(twice.getMessage().contains("listed a key twice"), twice.getMessage());
        }
    }

    @Test
    void frontCodedStringsRebuildEveryStringExactly() {
        SplittableRandom random = new SplittableRandom(42);
        List<String> strings = new ArrayList<>();
        String[] alphabet = {"a", "b", "/", "é", "日本", "\uD83D\uDE00", "0", "_", "\u0000"};
        // shared prefixes of every length, repeats, unicode, an empty string, and sorted and unsorted runs
        for (int i = 0; i < 200_000; i++) {
            String last = strings.isEmpty() ? "" : strings.get(strings.size() - 1);
            int cut = random.nextInt(last.length() + 1);
            if (cut > 0 && cut < last.length() && Character.isLowSurrogate(last.charAt(cut))) {
                cut--; // never split a surrogate pair
            }
            StringBuilder s = new StringBuilder(i % 3 == 0 ? "" : last.substring(0, cut));
            for (int k = random.nextInt(12); k > 0; k--) {
                s.append(alphabet[random.nextInt(alphabet.length)]);
            }
            strings.add(s.toString());
        }
        strings.add("x".repeat(FrontCodedStrings.CHUNK + 10)); // a block larger than a chunk
        strings.add("y");
        FrontCodedStrings.Builder builder = new FrontCodedStrings.Builder();
        strings.forEach(builder::add);
        assertFalse(builder.sorted());
        FrontCodedStrings fc = builder.build();
        assertEquals(strings.size(), fc.size());
        for (int i = 0; i < strings.size(); i++) {
            assertEquals(strings.get(i), fc.get(i), "string " + i);
        }
        List<String> inOrder = new ArrayList<>();
        fc.forEach((i, str) -> {
            assertEquals(inOrder.size(), i);
            inOrder.add(str);
        });
        assertEquals(strings, inOrder);
        assertTrue(fc.heapBytes() > FrontCodedStrings.CHUNK, "several chunks");
        assertThrows(IndexOutOfBoundsException.class, () -> fc.get(strings.size()));
        IllegalArgumentException lone = assertThrows(
                IllegalArgumentException.class, () -> new FrontCodedStrings.Builder().add("train/\uD83D.jpg"));
        assertTrue(lone.getMessage().contains("unpaired surrogate"), lone.getMessage());

        FrontCodedStrings.Builder ascending = new FrontCodedStrings.Builder();
        List<String> sorted = new ArrayList<>(new TreeSet<>(strings.subList(0, 1000)));
        sorted.sort((a, b) ->
                Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8)));
        sorted.forEach(ascending::add);
        assertTrue(ascending.sorted());
    }

    @Test
    void versionsOfEveryShapeAreRebuiltExactly() {
        SplittableRandom random = new SplittableRandom(3);
        int n = 5000;
        long[] sizes = new long[n];
        List<String> etags = new ArrayList<>();
        List<String> generations = new ArrayList<>();
        List<String> posix = new ArrayList<>();
        List<String> other = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            sizes[i] = i == 7 ? 0 : random.nextLong(1L << 40);
            etags.add(i == 9 ? "\"" + hex32(random) + "-12\"" : "\"" + hex32(random) + "\"");
            generations.add(
                    i == 1 ? "0" : i == 2 ? Long.toString(Long.MAX_VALUE) : Long.toString(random.nextLong(1L << 60)));
            posix.add(Long.toHexString(sizes[i]) + "-" + Long.toHexString(i == 3 ? -1L : random.nextLong()) + "-"
                    + Long.toHexString(random.nextLong(1L << 30)));
            other.add("W/\"" + Integer.toHexString(i) + "\"");
        }
        check(etags, sizes, ObjectVersions.Shape.ETAG);
        check(generations, sizes, ObjectVersions.Shape.DECIMAL);
        check(posix, sizes, ObjectVersions.Shape.POSIX);
        check(other, sizes, ObjectVersions.Shape.STRINGS);
        check(Collections.nCopies(n, "v1"), sizes, ObjectVersions.Shape.CONSTANT);
        // near misses are never forced into a shape: they are kept as they are
        List<String> nearMisses = new ArrayList<>(generations);
        nearMisses.set(10, "007");
        nearMisses.set(11, "9223372036854775808"); // Long.MAX_VALUE + 1
        nearMisses.set(12, "-5");
        check(nearMisses, sizes, ObjectVersions.Shape.DECIMAL);
        List<String> upper = new ArrayList<>(etags);
        upper.set(20, upper.get(20).toUpperCase(Locale.ROOT));
        upper.set(21, upper.get(21).replace("\"", "'"));
        check(upper, sizes, ObjectVersions.Shape.ETAG);
        List<String> posixMisses = new ArrayList<>(posix);
        posixMisses.set(
                30,
                Long.toHexString(sizes[30] + 1)
                        + posix.get(30).substring(posix.get(30).indexOf('-')));
        posixMisses.set(31, posix.get(31) + "-0");
        posixMisses.set(32, posix.get(32).replaceFirst("-", "-0"));
        check(posixMisses, sizes, ObjectVersions.Shape.POSIX);
        // too many misfits: plain strings
        List<String> mixed = new ArrayList<>(etags.subList(0, n / 2));
        mixed.addAll(generations.subList(n / 2, n));
        check(mixed, sizes, ObjectVersions.Shape.STRINGS);
    }

    private static void check(List<String> versions, long[] sizes, ObjectVersions.Shape shape) {
        FrontCodedStrings.Builder b = new FrontCodedStrings.Builder();
        versions.forEach(b::add);
        ObjectVersions encoded = ObjectVersions.of(b.build(), i -> sizes[i]);
        assertEquals(shape, encoded.shape());
        for (int i = 0; i < versions.size(); i++) {
            assertEquals(versions.get(i), encoded.get(i, sizes[i]), "version " + i);
        }
    }

    private static String hex32(SplittableRandom random) {
        return String.format("%016x%016x", random.nextLong(), random.nextLong());
    }

    /** A real origin whose listing comes in reverse order, or with one key listed twice. */
    private record Relisting(Origin delegate, boolean duplicate) implements Origin {
        @Override
        public URI uri() {
            return delegate.uri();
        }

        @Override
        public ObjectInfo stat(String key) throws IOException {
            return delegate.stat(key);
        }

        @Override
        public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
            delegate.read(object, position, dst);
        }

        @Override
        public Stream<ObjectInfo> list(String prefix) throws IOException {
            List<ObjectInfo> listed;
            try (Stream<ObjectInfo> s = delegate.list(prefix)) {
                listed = new ArrayList<>(s.toList());
            }
            if (duplicate) {
                listed.add(listed.get(listed.size() / 2));
            }
            return listed.reversed().stream();
        }

        @Override
        public void close() throws IOException {
            delegate.close();
        }
    }
}
