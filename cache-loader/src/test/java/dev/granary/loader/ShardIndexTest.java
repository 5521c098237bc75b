// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.NoSuchObjectException;
import dev.granary.ObjectInfo;
import dev.granary.OriginStats;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Origin;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Index files beside shards ({@code <shard>.gidx}) over real files through a {@link PosixOrigin}: the round trip from
 * {@link ShardWriter} to {@link WebDataset}, what indexing costs at the origin with and without index files, the
 * binding rules (stale, unconfirmed, damaged, newer format), {@link WebDataset#writeIndex}, and members of one sample
 * that are not adjacent.
 */
class ShardIndexTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    /** Every origin data read: object key, position, length. */
    record Read(String key, long position, long length) {}

    /** A cache whose memory tier holds whole 8 MiB parts (its slabs are 16 MiB). */
    private TieredCache cache(Origin origin) {
        MemoryTier memory =
                MemoryTier.builder().capacity(64L << 20).slabSize(16L << 20).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        return leaks.watch(TieredCache.builder(origin)
                .tier(memory)
                .pageSize(64 << 10)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }

    private FaultyOrigin recording(ConcurrentLinkedQueue<Read> reads) {
        return new FaultyOrigin(PosixOrigin.of(root))
                .onRead((object, position, length) -> reads.add(new Read(object.key(), position, length)));
    }

    private static Map<String, byte[]> sample(SplittableRandom random, int i) {
        Map<String, byte[]> fields = new LinkedHashMap<>();
        byte[] jpg = new byte[1 + random.nextInt(3000)];
        random.nextBytes(jpg);
        fields.put("jpg", jpg);
        fields.put("cls", Integer.toString(i % 10).getBytes(StandardCharsets.US_ASCII));
        if (i % 3 == 0) {
            byte[] seg = new byte[100 + random.nextInt(1000)];
            random.nextBytes(seg);
            fields.put("seg.png", seg);
        }
        return fields;
    }

    /** Writes {@code samples} samples into shards of 5 under {@code dir}; returns what was written, by key. */
    private Map<String, Map<String, byte[]>> writeShards(String dir, int samples, boolean indexes, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        Map<String, Map<String, byte[]>> written = new LinkedHashMap<>();
        try (ShardWriter writer = ShardWriter.builder(root.resolve(dir))
                .maxCount(5)
                .indexes(indexes)
                .build()) {
            for (int i = 0; i < samples; i++) {
                String key = String.format("x/%06d", i);
                Map<String, byte[]> fields = sample(random, i);
                writer.write(key, fields);
                written.put(key, fields);
            }
        }
        return written;
    }

    private List<String> shardKeys(String dir) throws IOException {
        try (Stream<Path> files = Files.list(root.resolve(dir))) {
            return files.map(p -> dir + "/" + p.getFileName())
                    .filter(k -> k.endsWith(".tar"))
                    .sorted()
                    .toList();
        }
    }

    private static Map<String, byte[]> fields(Sample sample) {
        Map<String, byte[]> out = new LinkedHashMap<>();
        for (Map.Entry<String, ByteBuffer> f : sample.fields().entrySet()) {
            byte[] b = new byte[f.getValue().remaining()];
            f.getValue().duplicate().get(b);
            out.put(f.getKey(), b);
        }
        return out;
    }

    private static void assertSample(Map<String, byte[]> expected, Map<String, byte[]> actual, String what) {
        assertEquals(List.copyOf(expected.keySet()), List.copyOf(actual.keySet()), what);
        expected.forEach((name, bytes) -> assertArrayEquals(bytes, actual.get(name), what + "." + name));
    }

    private static void assertAllSamples(WebDataset dataset, Map<String, Map<String, byte[]>> written)
            throws IOException {
        assertEquals(written.size(), dataset.size());
        for (int i = 0; i < dataset.size(); i++) {
            Sample sample = dataset.read(i);
            try {
                assertSample(written.get(dataset.key(i)), fields(sample), dataset.key(i));
            } finally {
                sample.release();
            }
        }
    }

    /** The same dataset, indexed twice (from index files and by scanning), must describe the same samples. */
    private static void assertSameIndex(WebDataset expected, WebDataset actual) {
        assertEquals(expected.size(), actual.size());
        for (int i = 0; i < expected.size(); i++) {
            assertEquals(expected.key(i), actual.key(i));
            assertEquals(expected.fields(i), actual.fields(i), expected.key(i));
            assertEquals(expected.sampleStart(i), actual.sampleStart(i), expected.key(i));
            assertEquals(expected.sampleLength(i), actual.sampleLength(i), expected.key(i));
            assertEquals(expected.shardOf(i), actual.shardOf(i), expected.key(i));
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Round trip and cost

    @Test
    void indexFilesFromShardWriterIndexEachShardInOneRead() throws IOException {
        Map<String, Map<String, byte[]>> written = writeShards("shards", 30, true, 1);
        List<String> shards = shardKeys("shards");
        assertEquals(6, shards.size());
        ConcurrentLinkedQueue<Read> reads = new ConcurrentLinkedQueue<>();
        FaultyOrigin origin = recording(reads);
        List<IndexingProgress> progress = new CopyOnWriteArrayList<>();
        try (TieredCache cache = cache(origin)) {
            WebDataset dataset = WebDataset.of(cache, shards, progress::add);
            OriginStats stats = cache.stats().origin();
            assertEquals(0, origin.stats(), "no HEAD per shard");
            assertEquals(1, stats.metadataRequests(), "one listing of the shards' common prefix");
            Set<Read> expected = new HashSet<>();
            for (String shard : shards) {
                expected.add(new Read(shard + ".gidx", 0, Files.size(root.resolve(shard + ".gidx"))));
            }
            assertEquals(expected, new HashSet<>(reads), "one read per shard: its whole index file");
            assertEquals(shards.size(), reads.size());
            assertTrue(stats.reads() + stats.metadataRequests() <= 2L * shards.size(), stats.toString());
            for (int s = 0; s < shards.size(); s++) {
                assertTrue(dataset.indexedFromFile(s), shards.get(s));
                assertTrue(dataset.verifies(s), "ShardWriter records no version: samples are checked");
                assertEquals(
                        Files.size(root.resolve(shards.get(s))),
                        dataset.shardInfo(s).size());
            }
            assertEquals(shards.size(), progress.size());
            for (int k = 0; k < progress.size(); k++) {
                assertEquals(k + 1, progress.get(k).shardsDone());
                assertEquals(shards.size(), progress.get(k).shardsTotal());
                assertTrue(progress.get(k).fromIndexFile());
                assertEquals("", progress.get(k).note());
            }
            assertTrue(progress.getLast().done());
            assertEquals(
                    expected.stream().mapToLong(Read::length).sum(),
                    progress.getLast().bytesRead());
            assertEquals(
                    stats.reads() + stats.metadataRequests(), progress.getLast().originRequests());
            assertEquals(
                    shards,
                    progress.stream().map(IndexingProgress::shard).sorted().toList());

            assertAllSamples(dataset, written);
            // The same shards without their index files: the scan finds exactly what the indexes say.
            for (String shard : shards) {
                Files.delete(root.resolve(shard + ".gidx"));
            }
            WebDataset scanned = WebDataset.of(cache, shards);
            for (int s = 0; s < shards.size(); s++) {
                assertFalse(scanned.indexedFromFile(s));
                assertFalse(scanned.verifies(s));
            }
            assertSameIndex(scanned, dataset);
        }
    }

    @Test
    void withoutAnIndexAShardIsScannedInPartsThatEpochOneFindsInTheCache() throws IOException {
        // One shard of ~9.6 MiB: two parts, with a sample across the 8 MiB boundary; and a small one.
        SplittableRandom random = new SplittableRandom(2);
        Map<String, Map<String, byte[]>> written = new LinkedHashMap<>();
        Files.createDirectories(root.resolve("big"));
        TarWriter big = new TarWriter();
        boolean across = false;
        for (int i = 0; i < 96; i++) {
            byte[] data = new byte[100_000 + random.nextInt(5_000)];
            random.nextBytes(data);
            String key = String.format("b/%03d", i);
            long at = big.add(key + ".bin", data);
            big.add(key + ".cls", new byte[] {(byte) i});
            across |= at < ShardParts.DEFAULT_PART_SIZE && at + data.length > ShardParts.DEFAULT_PART_SIZE;
            Map<String, byte[]> f = new LinkedHashMap<>();
            f.put("bin", data);
            f.put("cls", new byte[] {(byte) i});
            written.put(key, f);
        }
        assertTrue(across, "a sample crosses the part boundary");
        byte[] bigBytes = big.finish();
        assertEquals(2, ShardParts.count(bigBytes.length, ShardParts.DEFAULT_PART_SIZE));
        Files.write(root.resolve("big/0.tar"), bigBytes);
        TarWriter small = new TarWriter();
        small.add("s/1.txt", new byte[] {42});
        Files.write(root.resolve("big/1.tar"), small.finish());
        written.put("s/1", Map.of("txt", new byte[] {42}));
        List<String> shards = List.of("big/0.tar", "big/1.tar");

        ConcurrentLinkedQueue<Read> reads = new ConcurrentLinkedQueue<>();
        List<IndexingProgress> progress = new CopyOnWriteArrayList<>();
        try (TieredCache cache = cache(recording(reads))) {
            WebDataset dataset = WebDataset.of(cache, shards, progress::add);
            assertEquals(
                    Set.of(
                            new Read("big/0.tar", 0, ShardParts.DEFAULT_PART_SIZE),
                            new Read(
                                    "big/0.tar",
                                    ShardParts.DEFAULT_PART_SIZE,
                                    bigBytes.length - ShardParts.DEFAULT_PART_SIZE),
                            new Read("big/1.tar", 0, Files.size(root.resolve("big/1.tar")))),
                    new HashSet<>(reads),
                    "each shard read in its parts, once");
            assertEquals(3, reads.size());
            assertEquals(1, cache.stats().origin().metadataRequests());
            assertFalse(dataset.indexedFromFile(0));
            assertFalse(progress.getFirst().fromIndexFile());
            assertEquals("no index file", progress.getFirst().note());
            assertEquals(
                    bigBytes.length + Files.size(root.resolve("big/1.tar")),
                    progress.getLast().bytesRead());
            List<ShardSamples.Entry> expected = ShardSamples.group(
                    "big/0.tar",
                    TarIndex.scan(
                            "big/0.tar",
                            bigBytes.length,
                            (offset, length) -> ByteBuffer.wrap(bigBytes, (int) offset, length)
                                    .slice()));
            for (int i = 0; i < expected.size(); i++) {
                assertEquals(expected.get(i).key(), dataset.key(i));
                assertEquals(expected.get(i).start(), dataset.sampleStart(i));
            }

            // Epoch 1 reading the shards in parts (as shard streaming does): every part is a cache hit.
            reads.clear();
            OriginStats before = cache.stats().origin();
            for (int s = 0; s < dataset.shardCount(); s++) {
                ObjectInfo info = dataset.shardInfo(s);
                for (int p = 0; p < ShardParts.count(info.size(), ShardParts.DEFAULT_PART_SIZE); p++) {
                    try (var lease = cache.loaderSupport()
                            .readExtent(
                                    info,
                                    ShardParts.start(p, ShardParts.DEFAULT_PART_SIZE),
                                    ShardParts.length(p, info.size(), ShardParts.DEFAULT_PART_SIZE))) {
                        assertEquals(
                                ShardParts.length(p, info.size(), ShardParts.DEFAULT_PART_SIZE),
                                lease.bytes().remaining());
                    }
                }
            }
            assertEquals(0, cache.stats().origin().reads() - before.reads(), "the parts indexing read: " + reads);
            assertAllSamples(dataset, written);
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Binding an index to its shard

    @Test
    void anIndexForAShardOfAnotherSizeIsStaleAndTheShardIsScannedWithAWarning() throws Exception {
        writeShards("stale", 5, true, 3);
        String shard = "stale/shard-000000.tar";
        // Rewritten by another tool: other samples, another size; the old index stays.
        SplittableRandom random = new SplittableRandom(4);
        Map<String, Map<String, byte[]>> rewritten = new LinkedHashMap<>();
        TarWriter tar = new TarWriter();
        for (int i = 0; i < 7; i++) {
            Map<String, byte[]> f = sample(random, i);
            String key = String.format("y/%06d", i);
            f.forEach((name, bytes) -> tar.add(key + "." + name, bytes));
            rewritten.put(key, f);
        }
        byte[] bytes = tar.finish();
        long indexed = ShardIndexFile.decode(ByteBuffer.wrap(Files.readAllBytes(root.resolve(shard + ".gidx"))))
                .shardSize();
        assertTrue(bytes.length != indexed);
        Files.write(root.resolve(shard), bytes);
        try (TieredCache cache = cache(PosixOrigin.of(root))) {
            List<IndexingProgress> progress = new CopyOnWriteArrayList<>();
            WebDataset dataset = WebDataset.of(cache, List.of(shard), progress::add);
            assertFalse(dataset.indexedFromFile(0));
            assertAllSamples(dataset, rewritten);
            // The note is the warning logged.
            String warning = progress.getFirst().note();
            assertTrue(
                    warning.contains("'" + shard + "'")
                            && warning.contains(indexed + " bytes")
                            && warning.contains(bytes.length + " bytes")
                            && warning.contains("stale"),
                    warning);
        }
    }

    /** Rewrites bytes inside a sample's field, keeping the shard's size, with a new modification time. */
    private void changeInPlace(String shard, long offset) throws IOException {
        Path file = root.resolve(shard);
        byte[] bytes = Files.readAllBytes(file);
        bytes[(int) offset] ^= 0x5a;
        FileTime old = Files.getLastModifiedTime(file);
        Files.write(file, bytes);
        Files.setLastModifiedTime(file, FileTime.fromMillis(old.toMillis() + 10_000));
    }

    @Test
    void aShardOfTheSameSizeWithOtherBytesFailsItsChangedSampleAndNeverYieldsWrongBytes() throws IOException {
        Map<String, Map<String, byte[]>> written = writeShards("same", 10, true, 5);
        List<String> shards = shardKeys("same");
        try (TieredCache cache = cache(PosixOrigin.of(root))) {
            WebDataset before = WebDataset.of(cache, shards);
            int changed = 7; // in the second shard
            assertEquals(1, before.shardOf(changed));
            changeInPlace(shards.get(1), before.sampleStart(changed) + 1);
            cache.invalidate(shards.get(1));

            WebDataset dataset = WebDataset.of(cache, shards);
            assertTrue(dataset.indexedFromFile(1) && dataset.verifies(1), "same size, no version: unconfirmed");
            String key = dataset.key(changed);
            CorruptShardException e = assertThrows(CorruptShardException.class, () -> dataset.read(changed));
            assertEquals(shards.get(1), e.shard());
            assertEquals(dataset.sampleStart(changed), e.offset());
            assertTrue(
                    e.getMessage().contains("sample '" + key + "'")
                            && e.getMessage().contains("CRC32C"),
                    e.getMessage());
            // It says the shard or the index is wrong, how to tell which, and never to drop the check first.
            assertTrue(
                    e.getMessage().contains("Either the shard's bytes changed after the index was written")
                            && e.getMessage().contains("check the shard against its source")
                            && e.getMessage().contains("Do not delete or rewrite the index first"),
                    e.getMessage());
            assertEquals(0, cache.stats().openLeases(), "the failed sample's lease is released");
            // Through a loader: the changed sample fails its batch; every other sample arrives intact.
            int ok = 0;
            try (DataLoader<Map<String, byte[]>> loader = DataLoader.builder(dataset, ShardIndexTest::fields)
                            .batchSize(1)
                            .workers(2)
                            .build();
                    Epoch<Map<String, byte[]>> epoch = loader.epoch(0)) {
                var it = epoch.iterator();
                int index = 0;
                while (it.hasNext()) {
                    try {
                        for (Map<String, byte[]> item : it.next().items()) {
                            assertSample(written.get(dataset.key(index)), item, dataset.key(index));
                            ok++;
                        }
                    } catch (SampleException failed) {
                        assertEquals(changed, failed.index());
                        assertInstanceOf(CorruptShardException.class, failed.getCause());
                    }
                    index++;
                }
            }
            assertEquals(written.size() - 1, ok);
        }
    }

    @Test
    void writeIndexRecordsTheVersionAndARewriteOfTheSameSizeIsCheckedAgain() throws IOException {
        Map<String, Map<String, byte[]>> written = writeShards("plain", 10, false, 6);
        List<String> shards = shardKeys("plain");
        ConcurrentLinkedQueue<Read> reads = new ConcurrentLinkedQueue<>();
        try (TieredCache cache = cache(recording(reads))) {
            WebDataset scanned = WebDataset.of(cache, shards);
            for (String shard : shards) {
                byte[] expected = WebDataset.indexBytes(cache, shard);
                ObjectInfo info = WebDataset.writeIndex(cache, shard);
                assertEquals(shard + ".gidx", info.key());
                assertArrayEquals(
                        expected,
                        Files.readAllBytes(root.resolve(shard + ".gidx")),
                        "indexBytes is what writeIndex writes");
                assertEquals(expected.length, info.size());
            }
            reads.clear();
            OriginStats before = cache.stats().origin();
            WebDataset indexed = WebDataset.of(cache, shards);
            OriginStats cost = cache.stats().origin();
            assertEquals(1, cost.metadataRequests() - before.metadataRequests());
            assertEquals(shards.size(), cost.reads() - before.reads(), "one read per index: " + reads);
            for (int s = 0; s < shards.size(); s++) {
                assertTrue(indexed.indexedFromFile(s));
                assertFalse(indexed.verifies(s), "the recorded version is the shard's: trusted");
            }
            assertSameIndex(scanned, indexed);
            assertAllSamples(indexed, written);

            changeInPlace(shards.get(0), indexed.sampleStart(2) + 3);
            cache.invalidate(shards.get(0));
            WebDataset again = WebDataset.of(cache, shards);
            assertTrue(again.indexedFromFile(0) && again.verifies(0), "another version of the same size");
            assertFalse(again.verifies(1));
            CorruptShardException e = assertThrows(CorruptShardException.class, () -> again.read(2));
            assertTrue(e.getMessage().contains("sample '" + again.key(2) + "'"), e.getMessage());
            Sample fine = again.read(1);
            try {
                assertSample(written.get(again.key(1)), fields(fine), again.key(1));
            } finally {
                fine.release();
            }

            NoSuchObjectException missing =
                    assertThrows(NoSuchObjectException.class, () -> WebDataset.writeIndex(cache, "plain/missing.tar"));
            assertEquals("plain/missing.tar", missing.key());
        }
    }

    @Test
    void writeIndexThroughAnOriginThatCannotWriteSaysSo() throws IOException {
        writeShards("ro", 3, false, 7);
        PosixOrigin posix = PosixOrigin.of(root);
        Origin readOnly = new Origin() {
            @Override
            public URI uri() {
                return posix.uri();
            }

            @Override
            public ObjectInfo stat(String key) throws IOException {
                return posix.stat(key);
            }

            @Override
            public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
                posix.read(object, position, dst);
            }

            @Override
            public Stream<ObjectInfo> list(String prefix) throws IOException {
                return posix.list(prefix);
            }

            @Override
            public void close() {}
        };
        try (TieredCache cache = cache(readOnly)) {
            UnsupportedOperationException e = assertThrows(
                    UnsupportedOperationException.class, () -> WebDataset.writeIndex(cache, "ro/shard-000000.tar"));
            assertTrue(
                    e.getMessage().contains("cannot write objects")
                            && e.getMessage().contains(".gidx"),
                    e.getMessage());
            assertTrue(WebDataset.indexBytes(cache, "ro/shard-000000.tar").length > 0, "indexBytes needs no write");
        }
    }

    @Test
    void writeObjectDropsWhatTheCacheKnewOfTheKey() throws IOException {
        Files.createDirectories(root.resolve("w"));
        Files.write(root.resolve("w/k.bin"), new byte[] {1, 2, 3});
        try (TieredCache cache = cache(PosixOrigin.of(root))) {
            try (var lease = cache.read("w/k.bin")) { // cached, version known for the metadata TTL (default)
                assertEquals(3, lease.bytes().remaining());
            }
            ObjectInfo written = cache.loaderSupport().writeObject("w/k.bin", new byte[] {9, 8, 7, 6});
            assertEquals(4, written.size());
            assertEquals(written, cache.stat("w/k.bin"), "the new version, not the one the cache knew");
            try (var lease = cache.read("w/k.bin")) {
                byte[] got = new byte[lease.bytes().remaining()];
                lease.bytes().duplicate().get(got);
                assertArrayEquals(new byte[] {9, 8, 7, 6}, got);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Damaged indexes

    private CorruptShardException damaged(TieredCache cache, String shard, byte[] index) throws IOException {
        Files.write(root.resolve(shard + ".gidx"), index);
        cache.invalidate(shard + ".gidx");
        CorruptShardException e = assertThrows(CorruptShardException.class, () -> WebDataset.of(cache, List.of(shard)));
        assertEquals(shard, e.shard());
        assertEquals(-1, e.offset());
        String m = e.getMessage();
        assertTrue(m.contains("index '" + shard + ".gidx' of shard '" + shard + "' is damaged"), m);
        assertTrue(
                m.contains("the index file itself does not check out")
                        && m.contains("check the shard against" + " its source first")
                        && m.contains("WebDataset.writeIndex(cache, \"" + shard + "\")"),
                m);
        assertFalse(m.contains("delete it"), "deleting an index is never advice that could serve wrong bytes: " + m);
        return e;
    }

    @Test
    void aDamagedIndexNamesIndexAndShardAndWhatToDo() throws Exception {
        writeShards("bad", 5, true, 8);
        String shard = "bad/shard-000000.tar";
        byte[] good = Files.readAllBytes(root.resolve(shard + ".gidx"));
        long size = Files.size(root.resolve(shard));
        try (TieredCache cache = cache(PosixOrigin.of(root))) {
            byte[] flipped = good.clone();
            flipped[good.length / 2] ^= 1;
            assertTrue(damaged(cache, shard, flipped).getMessage().contains("CRC32C"));

            byte[] truncated = Arrays.copyOf(good, good.length - 7);
            assertTrue(damaged(cache, shard, truncated).getMessage().contains("CRC32C"));
            assertTrue(
                    damaged(cache, shard, Arrays.copyOf(good, 5)).getMessage().contains("length"));

            byte[] magic = good.clone();
            magic[0] = 'X';
            assertTrue(damaged(cache, shard, magic).getMessage().contains("magic"));

            // A well-formed index whose last sample runs past the shard.
            ShardIndexFile.Decoded decoded = ShardIndexFile.decode(ByteBuffer.wrap(good));
            List<ShardSamples.Entry> samples = new ArrayList<>(decoded.samples());
            ShardSamples.Entry last = samples.removeLast();
            samples.add(new ShardSamples.Entry(
                    last.key(),
                    last.start(),
                    size + 10,
                    List.of(new ShardSamples.Field(
                            last.fields().getFirst().name(), last.start(), size + 10 - last.start()))));
            byte[] past = ShardIndexFile.encode(size, "", samples, decoded.crcs());
            assertTrue(damaged(cache, shard, past).getMessage().contains("within the shard's " + size + " bytes"));

            // An index of a newer format is not damaged: the shard is scanned, with a warning.
            byte[] newer = good.clone();
            ByteBuffer.wrap(newer).order(ByteOrder.LITTLE_ENDIAN).putInt(8, 2);
            Files.write(root.resolve(shard + ".gidx"), newer);
            cache.invalidate(shard + ".gidx");
            List<IndexingProgress> progress = new CopyOnWriteArrayList<>();
            WebDataset dataset = WebDataset.of(cache, List.of(shard), progress::add);
            assertFalse(dataset.indexedFromFile(0));
            assertEquals(5, dataset.size());
            assertTrue(
                    progress.getFirst().note().contains("format version 2 (expected: 1)"),
                    progress.getFirst().note());
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Grouping

    @Test
    void membersOfOneSampleThatAreNotAdjacentAreRefusedNamingShardAndKey() throws IOException {
        Files.createDirectories(root.resolve("mixed"));
        TarWriter tar = new TarWriter();
        tar.add("k/a.jpg", new byte[10]);
        tar.add("k/b.jpg", new byte[10]);
        tar.add("k/a.cls", new byte[] {1});
        Files.write(root.resolve("mixed/0.tar"), tar.finish());
        try (TieredCache cache = cache(PosixOrigin.of(root))) {
            CorruptShardException e =
                    assertThrows(CorruptShardException.class, () -> WebDataset.of(cache, List.of("mixed/0.tar")));
            assertEquals("mixed/0.tar", e.shard());
            assertTrue(e.getMessage().contains("members of sample 'k/a' are not adjacent"), e.getMessage());
            assertThrows(CorruptShardException.class, () -> WebDataset.writeIndex(cache, "mixed/0.tar"));
            assertFalse(Files.exists(root.resolve("mixed/0.tar.gidx")));
        }
    }

    @Test
    void aShardMissingFromTheListingIsNoSuchObject() throws IOException {
        writeShards("some", 5, true, 9);
        try (TieredCache cache = cache(PosixOrigin.of(root))) {
            NoSuchObjectException e = assertThrows(
                    NoSuchObjectException.class,
                    () -> WebDataset.of(cache, List.of("some/shard-000000.tar", "some/shard-000009.tar")));
            assertEquals("some/shard-000009.tar", e.key());
        }
    }
}
