// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.OriginStats;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link WebDataset} over real tar files through a {@link PosixOrigin} and a memory tier: what every sample holds,
 * what indexing and sample reads cost at the origin (headers only; one ranged read per sample), damaged, missing and
 * changed shards, argument checks, and the shards Python's {@code tarfile} and GNU tar write.
 */
@Timeout(60)
class WebDatasetTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    // ---------------------------------------------------------------------------------------------------------------
    // Shards written here, and what they hold

    /** A sample as written: its shard, key, fields in tar order, and the byte range of its fields' data. */
    record Written(String shard, String key, Map<String, byte[]> fields, long start, long end) {}

    /** A shard being written: the TarWriter, plus every header's offset and every regular member's data range. */
    private static final class Shard {
        final String key;
        final TarWriter tar = new TarWriter();
        final List<Long> headers = new ArrayList<>();
        final List<String> names = new ArrayList<>();
        final List<long[]> data = new ArrayList<>();
        final List<Written> samples = new ArrayList<>();
        long next;
        byte[] bytes;

        Shard(String key) {
            this.key = key;
        }

        long file(String name, byte[] bytes) {
            headers.add(next);
            names.add(name);
            long offset = tar.add(name, bytes);
            assertEquals(next + TarIndex.BLOCK, offset, "TarWriter puts data right after its header");
            data.add(new long[] {offset, bytes.length});
            next = offset + (bytes.length + TarIndex.BLOCK - 1) / TarIndex.BLOCK * (long) TarIndex.BLOCK;
            return offset;
        }

        void directory(String name) {
            headers.add(next);
            names.add(name);
            tar.addDirectory(name);
            next += TarIndex.BLOCK;
        }

        /** Adds a sample's fields in order; a field named null is a member without extension put between them. */
        void sample(String key, Map<String, byte[]> fields, String between) {
            long start = -1;
            long end = -1;
            int k = 0;
            for (Map.Entry<String, byte[]> f : fields.entrySet()) {
                if (between != null && k++ == 1) {
                    file(between, "not a field".getBytes(UTF_8));
                }
                long offset = file(key + "." + f.getKey(), f.getValue());
                start = start < 0 ? offset : start;
                end = offset + f.getValue().length;
            }
            samples.add(new Written(this.key, key, fields, start, end));
        }

        byte[] finish() {
            headers.add(next); // the end-of-archive block
            bytes = tar.finish();
            assertEquals(next + 2 * TarIndex.BLOCK, bytes.length);
            return bytes;
        }
    }

    private static byte[] random(SplittableRandom random, int size) {
        byte[] b = new byte[size];
        random.nextBytes(b);
        return b;
    }

    /**
     * Three shards of multi-field samples {@code x/NNNNNN.{jpg,cls,seg.png}}: a directory member, members without an
     * extension (one between two fields of a sample), a sample with one field, a field of exactly one block and one of
     * a block and a byte, an empty field.
     */
    private List<Shard> writeShards(long seed) throws IOException {
        SplittableRandom random = new SplittableRandom(seed);
        int[] perShard = {5, 7, 4};
        List<Shard> shards = new ArrayList<>();
        int n = 0;
        for (int s = 0; s < perShard.length; s++) {
            Shard shard = new Shard(String.format("shards/%06d.tar", s));
            if (s == 0) {
                shard.directory("x/");
            }
            for (int j = 0; j < perShard[s]; j++, n++) {
                String key = String.format("x/%06d", n);
                Map<String, byte[]> fields = new LinkedHashMap<>();
                int jpg = switch (n) {
                    case 1 -> 512;
                    case 2 -> 513;
                    case 3 -> 0;
                    default -> 1 + random.nextInt(3000);
                };
                if (n != 6) { // sample 6 has only its class
                    fields.put("jpg", random(random, jpg));
                }
                fields.put("cls", Integer.toString(random.nextInt(1000)).getBytes(UTF_8));
                if (n != 6) {
                    fields.put("seg.png", random(random, 100 + random.nextInt(2000)));
                }
                shard.sample(key, fields, n == 4 ? "x/LICENSE" : null);
                if (s == 1 && j == 2) {
                    shard.file("x/README", "a member without extension".getBytes(UTF_8));
                }
            }
            Files.createDirectories(root.resolve("shards"));
            Files.write(root.resolve(shard.key), shard.finish());
            shards.add(shard);
        }
        return shards;
    }

    private static List<String> keys(List<Shard> shards) {
        return shards.stream().map(s -> s.key).toList();
    }

    private static List<Written> samples(List<Shard> shards) {
        return shards.stream().flatMap(s -> s.samples.stream()).toList();
    }

    /** A decoder's copy of a sample: key, index and every field's bytes, in the sample's field order. */
    record Item(String key, int index, Map<String, byte[]> fields) {}

    static Item copyFields(Sample sample) {
        Map<String, byte[]> fields = new LinkedHashMap<>();
        for (Map.Entry<String, ByteBuffer> f : sample.fields().entrySet()) {
            ByteBuffer b = f.getValue().duplicate();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            fields.put(f.getKey(), bytes);
        }
        return new Item(sample.key(), sample.index(), fields);
    }

    private static void assertFields(Map<String, byte[]> expected, Map<String, byte[]> actual, String what) {
        assertEquals(List.copyOf(expected.keySet()), List.copyOf(actual.keySet()), what + ": fields in tar order");
        for (Map.Entry<String, byte[]> f : expected.entrySet()) {
            assertArrayEquals(f.getValue(), actual.get(f.getKey()), what + "." + f.getKey());
        }
    }

    /** Reads sample {@code i} outside a loader and copies it. */
    private static Item read(WebDataset dataset, int i) throws IOException {
        Sample sample = dataset.read(i);
        try {
            return copyFields(sample);
        } finally {
            sample.release();
        }
    }

    /** Every origin data read: object key, position, length. */
    record Read(String key, long position, long length) {}

    private static FaultyOrigin recording(Path root, ConcurrentLinkedQueue<Read> reads) {
        return new FaultyOrigin(PosixOrigin.of(root))
                .onRead((object, position, length) -> reads.add(new Read(object.key(), position, length)));
    }

    // ---------------------------------------------------------------------------------------------------------------
    // What the samples hold

    @Test
    void everySampleHoldsWhatWasWrittenNumberedShardByShardInTarOrder() throws IOException {
        List<Shard> shards = writeShards(1);
        List<Written> written = samples(shards);
        assertEquals(16, written.size());
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            WebDataset dataset = WebDataset.of(cache, keys(shards));
            assertEquals(keys(shards), dataset.shards());
            assertEquals(written.size(), dataset.size());
            assertEquals(cache, dataset.cache());
            for (int i = 0; i < written.size(); i++) {
                Written w = written.get(i);
                assertEquals(w.key(), dataset.key(i), "sample " + i);
                assertEquals(String.format("x/%06d", i), dataset.key(i), "numbered shard by shard in tar order");
                assertEquals(w.shard(), dataset.shard(i), "shard of sample " + i);
                assertEquals(List.copyOf(w.fields().keySet()), dataset.fields(i), "fields of sample " + i);
                assertEquals(w.end() - w.start(), dataset.byteSize(i), "byte size of sample " + i);
                Item item = read(dataset, i);
                assertEquals(w.key(), item.key());
                assertEquals(i, item.index());
                assertFields(w.fields(), item.fields(), w.key());
            }
            assertEquals(List.of("cls"), dataset.fields(6), "a one-field sample");
            assertEquals(List.of("jpg", "cls", "seg.png"), dataset.fields(4), "x/LICENSE between fields is skipped");
            assertThrows(IndexOutOfBoundsException.class, () -> dataset.key(written.size()));
            assertThrows(IndexOutOfBoundsException.class, () -> dataset.shard(-1));
            assertThrows(IndexOutOfBoundsException.class, () -> dataset.fields(written.size()));

            try (DataLoader<Item> loader = DataLoader.builder(dataset, WebDatasetTest::copyFields)
                    .batchSize(3)
                    .shuffle(11)
                    .workers(2)
                    .prefetch(2)
                    .build()) {
                for (int e = 0; e < 2; e++) {
                    Set<Integer> seen = new HashSet<>();
                    try (Epoch<Item> epoch = loader.epoch(e)) {
                        for (Batch<Item> batch : epoch) {
                            for (Item item : batch.items()) {
                                Written w = written.get(item.index());
                                assertEquals(w.key(), item.key());
                                assertFields(w.fields(), item.fields(), "epoch " + e + " " + w.key());
                                assertTrue(seen.add(item.index()), "sample " + item.index() + " twice in epoch " + e);
                            }
                        }
                    }
                    assertEquals(written.size(), seen.size(), "every sample in epoch " + e);
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // What it costs at the origin

    @Test
    void indexingWithoutIndexFilesListsOnceAndReadsEachShardInOnePart() throws IOException {
        List<Shard> shards = writeShards(2); // shards of a few KiB: one part each
        ConcurrentLinkedQueue<Read> reads = new ConcurrentLinkedQueue<>();
        FaultyOrigin origin = recording(root, reads);
        try (TieredCache cache = LoaderFixture.cache(leaks, origin, 16L << 20)) {
            WebDataset.of(cache, keys(shards));
            OriginStats stats = cache.stats().origin();
            assertEquals(0, origin.stats(), "no stat per shard: the listing gave sizes and versions");
            assertEquals(1, stats.metadataRequests(), "one listing");
            Set<Read> expected = new HashSet<>();
            for (Shard shard : shards) {
                expected.add(new Read(shard.key, 0, shard.bytes.length));
            }
            assertEquals(expected, new HashSet<>(reads), "each shard in one read of its only part");
            assertEquals(shards.size(), stats.reads());

            // A second index: the parts are served by the cache.
            reads.clear();
            WebDataset.of(cache, keys(shards));
            assertEquals(List.of(), List.copyOf(reads));
        }
    }

    @Test
    void aSampleReadIsOneOriginReadOfExactlyItsExtent() throws IOException {
        List<Shard> shards = writeShards(3);
        List<Written> written = samples(shards);
        ConcurrentLinkedQueue<Read> reads = new ConcurrentLinkedQueue<>();
        try (TieredCache cache = LoaderFixture.cache(leaks, recording(root, reads), 16L << 20)) {
            WebDataset dataset = WebDataset.of(cache, keys(shards));
            // Indexing scanned each shard in one part, which for shards this small is [0, size): the very extent of
            // page 0, from which the cache would serve every sample (decision 0008). Drop it: this test is about
            // a sample's own miss.
            for (Shard shard : shards) {
                cache.invalidate(shard.key);
            }
            int[] probes = {4, 9, 15}; // a sample with a skipped member inside its extent; shards 1 and 2
            for (int i : probes) {
                reads.clear();
                OriginStats before = cache.stats().origin();
                Item item = read(dataset, i);
                OriginStats after = cache.stats().origin();
                Written w = written.get(i);
                assertFields(w.fields(), item.fields(), w.key());
                assertEquals(
                        List.of(new Read(w.shard(), w.start(), w.end() - w.start())),
                        List.copyOf(reads),
                        "sample " + i);
                assertEquals(1, after.reads() - before.reads());
                assertEquals(dataset.byteSize(i), after.bytes() - before.bytes());
                assertEquals(0, after.metadataRequests() - before.metadataRequests(), "the shard's stat is cached");
                reads.clear();
                read(dataset, i);
                assertEquals(List.of(), List.copyOf(reads), "sample " + i + " again: a hit");
            }

            // An epoch reads each remaining sample once, as one read of its extent, and the next epoch none.
            reads.clear();
            long expectedBytes = 0;
            Set<Read> expectedReads = new HashSet<>();
            for (int i = 0; i < written.size(); i++) {
                if (i != probes[0] && i != probes[1] && i != probes[2]) {
                    Written w = written.get(i);
                    expectedBytes += w.end() - w.start();
                    expectedReads.add(new Read(w.shard(), w.start(), w.end() - w.start()));
                }
            }
            OriginStats before = cache.stats().origin();
            try (DataLoader<Item> loader = DataLoader.builder(dataset, WebDatasetTest::copyFields)
                    .batchSize(4)
                    .shuffle(5)
                    .workers(2)
                    .streamShards(false)
                    .build()) { // per-sample reads: not whole shards
                try (Epoch<Item> epoch = loader.epoch(0)) {
                    epoch.forEach(batch -> {});
                }
                OriginStats after = cache.stats().origin();
                assertEquals(written.size() - probes.length, after.reads() - before.reads());
                assertEquals(expectedBytes, after.bytes() - before.bytes());
                assertEquals(expectedReads, new HashSet<>(reads));
                assertEquals(expectedReads.size(), reads.size(), "no sample read twice");
                reads.clear();
                try (Epoch<Item> epoch = loader.epoch(1)) {
                    epoch.forEach(batch -> {});
                }
                assertEquals(List.of(), List.copyOf(reads), "the second epoch is served by the memory tier");
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Damaged, missing and changed shards

    private CorruptShardException corrupt(TieredCache cache, String goodShard, byte[] bytes) throws IOException {
        String bad = "shards/bad-" + Integer.toHexString(Arrays.hashCode(bytes)) + ".tar";
        Files.write(root.resolve(bad), bytes);
        CorruptShardException e =
                assertThrows(CorruptShardException.class, () -> WebDataset.of(cache, List.of(goodShard, bad)));
        assertEquals(bad, e.shard());
        assertTrue(e.getMessage().startsWith("shard '" + bad + "' at offset " + e.offset() + ": "), e.getMessage());
        return e;
    }

    @Test
    void aDamagedShardNamesItselfAndTheOffset() throws IOException {
        List<Shard> shards = writeShards(4);
        Shard shard = shards.get(1);
        byte[] good = shard.bytes;
        String other = shards.get(0).key;
        // Shard 1 has no directory member, so its members and regular members are numbered alike.
        int member = shard.names.indexOf("x/000007.seg.png");
        long header = shard.headers.get(member);
        long[] data = shard.data.get(member);
        assertTrue(data[1] >= 100, "a member with data to cut");
        assertEquals(header + TarIndex.BLOCK, data[0]);
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            // Cut in the middle of the member's data: the header that promised the data is the offset.
            byte[] cut = Arrays.copyOf(good, (int) (data[0] + data[1] / 2));
            CorruptShardException e = corrupt(cache, other, cut);
            assertEquals(header, e.offset(), e.getMessage());
            assertTrue(
                    e.getMessage()
                            .contains("truncated: member 'x/000007.seg.png' of " + data[1] + " bytes at offset "
                                    + data[0]),
                    e.getMessage());

            // Cut in the middle of the header.
            cut = Arrays.copyOf(good, (int) header + 100);
            e = corrupt(cache, other, cut);
            assertEquals(header, e.offset(), e.getMessage());
            assertTrue(e.getMessage().contains("truncated: 100 bytes left for a header"), e.getMessage());

            // A flipped bit in the name: the stored checksum no longer matches.
            byte[] flipped = good.clone();
            flipped[(int) header + 3] ^= 1;
            e = corrupt(cache, other, flipped);
            assertEquals(header, e.offset(), e.getMessage());
            assertTrue(e.getMessage().contains("bad header checksum"), e.getMessage());
            assertEquals(0, cache.stats().openLeases(), "no lease left behind by a failed index");
        }
    }

    @Test
    void aMissingShardIsNoSuchObjectNamingTheKey() throws IOException {
        List<Shard> shards = writeShards(5);
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            NoSuchObjectException e = assertThrows(
                    NoSuchObjectException.class,
                    () -> WebDataset.of(cache, List.of(shards.get(0).key, "shards/missing.tar")));
            assertEquals("shards/missing.tar", e.key());
            assertTrue(e.getMessage().contains("'shards/missing.tar'"), e.getMessage());
        }
    }

    @Test
    void badArgumentsSayWhatWasExpected() throws IOException {
        List<Shard> shards = writeShards(6);
        String a = shards.get(0).key;
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            assertMessage(
                    assertThrows(IllegalArgumentException.class, () -> WebDataset.of(null, List.of(a))),
                    "cache: null (expected: a TieredCache)");
            assertMessage(
                    assertThrows(IllegalArgumentException.class, () -> WebDataset.of(cache, List.of())),
                    "keys: empty (expected: at least one object key)");
            assertMessage(
                    assertThrows(IllegalArgumentException.class, () -> WebDataset.of(cache, null)),
                    "keys: null (expected: at least one object key)");
            assertMessage(
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> WebDataset.of(cache, List.of(a, shards.get(1).key, a))),
                    "key 2: '" + a + "' appears twice (expected: each key once)");
            assertMessage(
                    assertThrows(IllegalArgumentException.class, () -> WebDataset.of(cache, List.of("../x"))),
                    "key 0: '../x' (expected: a relative object key without '..' segments)");

            // A shard with no member named key.ext holds no sample.
            Shard empty = new Shard("shards/empty.tar");
            empty.directory("x/");
            empty.file("x/README", new byte[10]);
            Files.write(root.resolve(empty.key), empty.finish());
            IllegalArgumentException none =
                    assertThrows(IllegalArgumentException.class, () -> WebDataset.of(cache, List.of(empty.key)));
            assertTrue(
                    none.getMessage()
                            .contains("no samples in format 'webdataset' (expected: shards that hold" + " samples)"),
                    none.getMessage());
            assertEquals(0, cache.stats().openLeases());
        }
    }

    private static void assertMessage(IllegalArgumentException e, String expected) {
        assertEquals(expected, e.getMessage());
    }

    /**
     * A shard rewritten at the origin after it was indexed — other sizes, so the old offsets now fall on other
     * members' data and headers — must never yield bytes that are not the indexed version's. With a metadata TTL of
     * zero every read asks the origin for the current version; with the default TTL the old version is trusted, a
     * sample already cached is served from it, and an origin read pinned to it finds the file changed. The index only
     * holds for the old version, so a read must fail with {@link ObjectChangedException} naming the shard, or return
     * exactly the old version's bytes.
     */
    @ParameterizedTest(name = "metadata TTL {0} s")
    @ValueSource(longs = {0, 60})
    void aShardChangedAfterIndexingNeverYieldsWrongBytes(long ttlSeconds) throws IOException {
        List<Shard> shards = writeShards(7);
        List<Written> written = samples(shards);
        Shard shard = shards.get(1);
        MemoryTier memory =
                MemoryTier.builder().capacity(16L << 20).slabSize(1 << 20).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        try (TieredCache cache = leaks.watch(TieredCache.builder(PosixOrigin.of(root))
                .tier(memory)
                .pageSize(64 << 10)
                .metadataTtl(Duration.ofSeconds(ttlSeconds))
                .leakDetection(LeakDetection.PARANOID)
                .build())) {
            WebDataset dataset = WebDataset.of(cache, keys(shards));
            int first = shards.get(0).samples.size();
            int count = shard.samples.size();
            read(dataset, first); // one sample of the shard is cached in its old version

            // The same sample keys, each field 700 bytes longer and of other bytes; a new mtime and inode.
            Shard rewritten = new Shard(shard.key);
            SplittableRandom random = new SplittableRandom(99);
            for (Written w : shard.samples) {
                Map<String, byte[]> fields = new LinkedHashMap<>();
                w.fields().forEach((name, bytes) -> fields.put(name, random(random, bytes.length + 700)));
                rewritten.sample(w.key(), fields, null);
            }
            Path file = root.resolve(shard.key);
            FileTime old = Files.getLastModifiedTime(file);
            Path tmp = root.resolve("shards/rewrite.tmp");
            Files.write(tmp, rewritten.finish());
            Files.setLastModifiedTime(tmp, FileTime.fromMillis(old.toMillis() + 10_000));
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            assertTrue(rewritten.bytes.length > shard.bytes.length, "every old extent lies inside the new shard");

            for (int i = first; i < first + count; i++) {
                Written w = written.get(i);
                try {
                    Item item = read(dataset, i);
                    assertFields(w.fields(), item.fields(), "sample " + i + " of the changed shard");
                } catch (ObjectChangedException e) {
                    assertEquals(shard.key, e.key(), e.getMessage());
                }
            }
            // Through a loader: a changed sample fails its batch with the shard's change as the cause.
            List<Integer> indices = new ArrayList<>();
            for (int i = first; i < first + count; i++) {
                indices.add(i);
            }
            try (DataLoader<Item> loader = DataLoader.builder(dataset, WebDatasetTest::copyFields)
                            .batchSize(1)
                            .workers(1)
                            .build();
                    Epoch<Item> epoch = loader.epoch(0)) {
                var it = epoch.iterator();
                while (it.hasNext()) {
                    try {
                        for (Item item : it.next().items()) {
                            assertFields(written.get(item.index()).fields(), item.fields(), "sample " + item.index());
                        }
                    } catch (SampleException e) {
                        assertInstanceOf(ObjectChangedException.class, e.getCause(), e.toString());
                        assertTrue(indices.contains(e.index()), "only samples of the changed shard fail: " + e);
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Shards real tools write

    private static byte[] resource(String name) throws IOException {
        try (InputStream in = WebDatasetTest.class.getResourceAsStream("/tar/" + name)) {
            assertNotNull(in, "test resource /tar/" + name);
            return in.readAllBytes();
        }
    }

    /** The members Python's tarfile lists in a fixture (see make_fixtures.py). */
    private static List<TarIndex.Member> pythonMembers(String fixture) throws IOException {
        List<TarIndex.Member> members = new ArrayList<>();
        for (String line : new String(resource(fixture + ".expected"), UTF_8).split("\n")) {
            if (!line.isEmpty()) {
                String[] parts = line.split("\t");
                members.add(new TarIndex.Member(parts[0], Long.parseLong(parts[1]), Long.parseLong(parts[2])));
            }
        }
        return members;
    }

    /** What make_fixtures.py stores in a member: the SHA-256 of its name, repeated to its size. */
    private static byte[] content(String name, long size) {
        try {
            byte[] seed = MessageDigest.getInstance("SHA-256").digest(name.getBytes(UTF_8));
            byte[] data = new byte[Math.toIntExact(size)];
            for (int i = 0; i < data.length; i++) {
                data[i] = seed[i % seed.length];
            }
            return data;
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"pax", "gnu", "gnutar-posix", "webdataset"})
    void shardsFromPythonAndGnuTarLoadAsTheirMembersGroup(String fixture) throws IOException {
        String key = "shards/" + fixture + ".tar";
        Files.createDirectories(root.resolve("shards"));
        Files.write(root.resolve(key), resource(fixture + ".tar"));
        List<ShardSamples.Entry> expected = ShardSamples.group(key, pythonMembers(fixture));
        assertTrue(!expected.isEmpty(), fixture + " has samples");
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            WebDataset dataset = WebDataset.of(cache, List.of(key));
            assertEquals(expected.size(), dataset.size(), fixture);
            List<String> seen = new ArrayList<>();
            try (DataLoader<Item> loader = DataLoader.builder(dataset, WebDatasetTest::copyFields)
                            .batchSize(2)
                            .workers(2)
                            .build();
                    Epoch<Item> epoch = loader.epoch(0)) {
                for (Batch<Item> batch : epoch) {
                    for (Item item : batch.items()) {
                        ShardSamples.Entry entry = expected.get(item.index());
                        assertEquals(entry.key(), item.key());
                        assertEquals(entry.key(), dataset.key(item.index()));
                        assertEquals(key, dataset.shard(item.index()));
                        assertEquals(entry.end() - entry.start(), dataset.byteSize(item.index()));
                        assertEquals(
                                entry.fields().stream()
                                        .map(ShardSamples.Field::name)
                                        .toList(),
                                dataset.fields(item.index()));
                        Map<String, byte[]> fields = new LinkedHashMap<>();
                        for (ShardSamples.Field f : entry.fields()) {
                            fields.put(f.name(), content(entry.key() + "." + f.name(), f.size()));
                        }
                        assertFields(fields, item.fields(), fixture + " " + entry.key());
                        seen.add(item.key());
                    }
                }
            }
            assertEquals(expected.stream().map(ShardSamples.Entry::key).toList(), seen, "in tar order");
        }
    }
}
