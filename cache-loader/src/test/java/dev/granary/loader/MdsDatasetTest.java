// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link MdsDataset} over shards MosaicML Streaming's own {@code MDSWriter} made ({@code fixtures/mds}: raw and zstd,
 * 30 samples of every column encoding, with {@code expected.json}, the bytes the writer stored): every field of every
 * sample; indexing in one small read per shard; a shard-block epoch through the loader, resumed mid-epoch, and its dry
 * run; damaged shards and index files; random damage, which must never give wrong bytes.
 */
@Timeout(120)
class MdsDatasetTest {

    private static final List<String> DIRS = List.of("raw", "zstd");

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Map<String, Object> expected;

    @BeforeEach
    void copyFixtures() throws IOException, URISyntaxException {
        Path fixtures = Path.of(
                        getClass().getResource("/fixtures/mds/expected.json").toURI())
                .getParent();
        for (String dir : DIRS) {
            try (var files = Files.list(fixtures.resolve(dir))) {
                for (Path f : files.toList()) {
                    Files.copy(
                            f,
                            Files.createDirectories(root.resolve("mds").resolve(dir))
                                    .resolve(f.getFileName()));
                }
            }
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> json = (Map<String, Object>)
                Json.parse(Files.readString(fixtures.resolve("expected.json"), StandardCharsets.UTF_8));
        expected = json;
    }

    private TieredCache cache() {
        return LoaderFixture.cache(leaks, root);
    }

    @SuppressWarnings("unchecked")
    private List<Map<String, Map<String, Object>>> samples() {
        return (List<Map<String, Map<String, Object>>>) (List<?>) expected.get("samples");
    }

    @SuppressWarnings("unchecked")
    private List<String> shardFiles(String dir) {
        List<String> files = new ArrayList<>();
        Map<String, Object> datasets = (Map<String, Object>) expected.get("datasets");
        for (Object s : (List<Object>) ((Map<String, Object>) datasets.get(dir)).get("shards")) {
            files.add((String) ((Map<String, Object>) s).get("file"));
        }
        return files;
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** What a sample's fields hold, concatenated, for comparing samples: the exact bytes of every field. */
    private static String fingerprint(Sample sample) {
        StringBuilder s = new StringBuilder(sample.key());
        for (Map.Entry<String, ByteBuffer> f : sample.fields().entrySet()) {
            s.append(' ').append(f.getKey()).append('=').append(HexFormat.of().formatHex(bytes(f.getValue())));
        }
        return s.toString();
    }

    /** Checks every field of every sample against the bytes MDSWriter stored, and decodes a few. */
    @SuppressWarnings("unchecked")
    private void assertEverySample(ShardedDataset dataset) throws IOException {
        List<Map<String, Map<String, Object>>> samples = samples();
        assertEquals(samples.size(), dataset.size());
        assertEquals(
                expected.get("column_order_in_shards"),
                List.copyOf(MdsDataset.columns(dataset).keySet()));
        Map<String, Object> columns = (Map<String, Object>) expected.get("columns");
        for (Map.Entry<String, String> c : MdsDataset.columns(dataset).entrySet()) {
            assertEquals(columns.get(c.getKey()), c.getValue(), c.getKey());
        }
        for (int i = 0; i < samples.size(); i++) {
            Sample sample = dataset.read(i);
            try {
                Map<String, Map<String, Object>> want = samples.get(i);
                assertEquals(want.keySet(), sample.fields().keySet(), "sample " + i);
                for (Map.Entry<String, Map<String, Object>> c : want.entrySet()) {
                    assertArrayEquals(
                            HexFormat.of().parseHex((String) c.getValue().get("encoded_hex")),
                            bytes(sample.fields().get(c.getKey())),
                            "sample " + i + " column " + c.getKey());
                }
                assertEquals(
                        want.get("text").get("value"),
                        StandardCharsets.UTF_8
                                .decode(sample.fields().get("text"))
                                .toString());
                assertEquals(
                        ((Number) want.get("id").get("value")).longValue(),
                        sample.fields().get("id").order(ByteOrder.LITTLE_ENDIAN).getLong(0));
                MdsDataset.NdArray any = MdsDataset.ndarray(sample.fields().get("anyarr"), "ndarray");
                assertEquals(want.get("anyarr").get("dtype"), any.dtype(), "sample " + i);
                List<Object> shape = (List<Object>) want.get("anyarr").get("shape");
                assertEquals(shape.size(), any.shape().length);
                for (int d = 0; d < shape.size(); d++) {
                    assertEquals(((Number) shape.get(d)).longValue(), any.shape()[d]);
                }
                MdsDataset.NdArray grid = MdsDataset.ndarray(sample.fields().get("grid"), "ndarray:int16:3,4");
                assertEquals(24, grid.values().remaining());
                MdsDataset.NdArray tokens = MdsDataset.ndarray(sample.fields().get("tokens"), "ndarray:uint16");
                assertEquals(
                        ((List<Object>) want.get("tokens").get("values")).size() * 2,
                        tokens.values().remaining());
            } finally {
                sample.release();
            }
        }
    }

    @Test
    void everyFieldIsWhatMdsWriterStoredRawAndZstd() throws IOException {
        for (String dir : DIRS) {
            try (TieredCache cache = cache()) {
                ShardedDataset dataset = MdsDataset.of(cache, "mds/" + dir);
                assertEquals(
                        "mds/" + dir + "/" + shardFiles(dir).getFirst(),
                        dataset.shards().getFirst());
                assertEquals("mds/" + dir + "/" + shardFiles(dir).getFirst() + "#0", dataset.key(0));
                assertEverySample(dataset);
                assertEquals(List.of(), MdsDataset.verify(dataset), "sha1 and xxh64 are both checked");
            }
        }
    }

    @Test
    void indexingIsOneSmallReadPerShardAndAZstdShardIsDecodedOncePerEpoch() throws IOException {
        try (TieredCache cache = cache()) {
            long before = cache.stats().origin().reads();
            long bytesBefore = cache.stats().origin().bytes();
            ShardedDataset raw = MdsDataset.of(cache, "mds/raw");
            assertEquals(1 + 4, cache.stats().origin().reads() - before, "index.json, then one header per shard");
            long index = Files.size(root.resolve("mds/raw/index.json"));
            long headers = 4 * 4 + 4L * (8 + 9 + 9 + 4 + 4);
            assertEquals(index + headers, cache.stats().origin().bytes() - bytesBefore, "the headers only");
            assertEquals(0, raw.decoding().shardsDecoded());
        }
        try (TieredCache cache = cache()) {
            long before = cache.stats().origin().reads();
            ShardedDataset zstd = MdsDataset.of(cache, "mds/zstd");
            assertEquals(1 + 4, cache.stats().origin().reads() - before, "index.json, then each shard whole");
            assertEquals(4, zstd.decoding().shardsDecoded());
            List<String> first = epoch(zstd, Integer.MAX_VALUE, null);
            assertEquals(zstd.size(), first.size());
            assertEquals(4, zstd.decoding().shardsDecoded(), "the decoded shards were held for the epoch");
            assertEquals(1 + 4, cache.stats().origin().reads() - before, "and the epoch read nothing more");
        }
        try (TieredCache cache = cache()) {
            ShardedDataset tiny = MdsDataset.of(cache, "mds/zstd", 0); // holds the last shard only
            List<String> keys = epoch(tiny, Integer.MAX_VALUE, null);
            assertEquals(tiny.size(), keys.size());
            ShardedDataset.Decoding d = tiny.decoding();
            assertTrue(d.shardsDecoded() >= 4, "every shard decoded at least once: " + d);
            assertTrue(d.heldBytes() <= 4096, "one shard held: " + d);
        }
    }

    /** Runs epoch 0 with shard blocks, taking at most {@code batches} batches; returns the samples' fingerprints. */
    private static List<String> epoch(ShardedDataset dataset, int batches, LoaderState[] state) throws IOException {
        List<String> out = new ArrayList<>();
        try (DataLoader<String> loader = DataLoader.builder(dataset, MdsDatasetTest::fingerprint)
                .batchSize(4)
                .workers(2)
                .shuffle(Shuffle.shardBlocks(7L, 2))
                .build()) {
            if (state != null && state[0] != null) {
                loader.resume(LoaderState.decode(state[0].encode()));
            }
            try (Epoch<String> epoch = loader.epoch(0)) {
                Iterator<Batch<String>> it = epoch.iterator();
                for (int b = 0; b < batches && it.hasNext(); b++) {
                    out.addAll(it.next().items());
                }
                if (state != null) {
                    state[0] = loader.state();
                }
            }
        }
        return out;
    }

    @Test
    void aShardBlockEpochResumedMidEpochGivesTheSameSamples() throws IOException {
        for (String dir : DIRS) {
            List<String> whole;
            try (TieredCache cache = cache()) {
                whole = epoch(MdsDataset.of(cache, "mds/" + dir), Integer.MAX_VALUE, null);
            }
            assertEquals(30, whole.size());
            assertEquals(30, whole.stream().distinct().count());
            LoaderState[] state = new LoaderState[1];
            List<String> resumed;
            try (TieredCache cache = cache()) {
                resumed = epoch(MdsDataset.of(cache, "mds/" + dir), 3, state);
            }
            assertEquals(3, state[0].nextBatch());
            try (TieredCache cache = cache()) {
                resumed.addAll(epoch(MdsDataset.of(cache, "mds/" + dir), Integer.MAX_VALUE, state));
            }
            assertEquals(whole, resumed, dir + ": the same samples in the same order");
        }
    }

    @Test
    void theDryRunIsWhatTheEpochReads() throws IOException {
        for (String dir : DIRS) {
            for (boolean blocks : new boolean[] {true, false}) {
                try (TieredCache cache = cache()) {
                    ShardedDataset dataset = MdsDataset.of(cache, "mds/" + dir);
                    try (DataLoader<String> loader = DataLoader.builder(dataset, MdsDatasetTest::fingerprint)
                            .batchSize(4)
                            .shuffle(blocks ? Shuffle.shardBlocks(3L, 2) : Shuffle.samples(3L))
                            .build()) {
                        EpochPlan plan = loader.plan(1).epochs().getFirst();
                        long before = cache.stats().origin().reads();
                        try (Epoch<String> epoch = loader.epoch(0)) {
                            for (Batch<String> batch : epoch) {
                                assertTrue(batch.size() > 0);
                            }
                        }
                        assertEquals(
                                plan.originRequests(),
                                cache.stats().origin().reads() - before,
                                dir + (blocks ? " shard blocks" : " per sample") + ": " + plan);
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------------ damage

    private Path shard(String dir, int s) {
        return root.resolve("mds").resolve(dir).resolve(shardFiles(dir).get(s));
    }

    private CorruptShardException damaged(String dir) {
        return assertThrows(CorruptShardException.class, () -> {
            try (TieredCache cache = cache()) {
                ShardedDataset dataset = MdsDataset.of(cache, "mds/" + dir);
                for (int i = 0; i < dataset.size(); i++) {
                    dataset.read(i).release();
                }
                MdsDataset.verify(dataset);
            }
        });
    }

    private static void putInt(byte[] b, int at, int value) {
        ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).putInt(at, value);
    }

    @Test
    void aDamagedRawShardIsAClearErrorNamingIt() throws IOException {
        Path shard = shard("raw", 1);
        byte[] original = Files.readAllBytes(shard);

        Files.write(shard, java.util.Arrays.copyOf(original, original.length - 10));
        CorruptShardException e = damaged("raw");
        assertTrue(
                e.getMessage().contains("mds/raw/shard.00001.mds")
                        && e.getMessage().contains("3783, its raw_data"),
                e.getMessage());

        byte[] b = original.clone();
        putInt(b, 0, 8);
        Files.write(shard, b);
        e = damaged("raw");
        assertTrue(e.getMessage().contains("sample count 8 in the shard's header (expected: 9"), e.getMessage());

        b = original.clone();
        putInt(b, 4 + 4 * 3, 5);
        Files.write(shard, b);
        e = damaged("raw");
        assertTrue(e.getMessage().contains("offset 3 of the shard's offsets table: 5 (expected: from"), e.getMessage());

        b = original.clone();
        int sample0 = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getInt(4);
        putInt(b, sample0, 7777); // the first variable column's size
        Files.write(shard, b);
        e = damaged("raw");
        assertTrue(e.getMessage().contains("sample 0: its columns' sizes add up to"), e.getMessage());

        b = original.clone();
        b[b.length - 1] ^= 1; // a sample's last byte: only the hashes see it
        Files.write(shard, b);
        e = damaged("raw");
        assertTrue(
                e.getMessage().contains("of the shard: ") && e.getMessage().contains("as index.json records it"),
                e.getMessage());
    }

    @Test
    void aDamagedZstdShardOrHashIsAClearError() throws IOException {
        Path shard = shard("zstd", 2);
        byte[] original = Files.readAllBytes(shard);
        byte[] b = original.clone();
        b[original.length / 2] ^= 0x10;
        Files.write(shard, b);
        CorruptShardException e = damaged("zstd");
        assertTrue(e.getMessage().contains("mds/zstd/shard.00002.mds.zstd"), e.getMessage());

        Files.write(shard, java.util.Arrays.copyOf(original, original.length - 3));
        e = damaged("zstd");
        assertTrue(e.getMessage().contains("zip_data bytes"), e.getMessage());

        Files.write(shard, original);
        Path index = root.resolve("mds/zstd/index.json");
        String text = Files.readString(index);
        String sha1 = text.replaceFirst("(?s).*?\"zip_data\": \\{[^}]*?\"sha1\": \"([0-9a-f]+)\".*", "$1");
        Files.writeString(index, text.replace(sha1, "0".repeat(40)));
        e = damaged("zstd");
        assertTrue(
                e.getMessage().contains("sha1 of the compressed shard: " + sha1 + " (expected: " + "0".repeat(40)),
                e.getMessage());
    }

    @Test
    void randomDamageNeverGivesWrongBytes() throws IOException {
        List<String> want = new ArrayList<>();
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = MdsDataset.of(cache, "mds/raw");
            for (int i = 0; i < dataset.size(); i++) {
                Sample s = dataset.read(i);
                want.add(fingerprint(s));
                s.release();
            }
        }
        SplittableRandom random = new SplittableRandom(28);
        int caught = 0;
        int rounds = 0;
        for (String dir : DIRS) {
            Path shard = shard(dir, 0);
            byte[] original = Files.readAllBytes(shard);
            for (int round = 0; round < 150; round++, rounds++) {
                byte[] damaged = original.clone();
                int flips = 1 + random.nextInt(3);
                for (int k = 0; k < flips; k++) {
                    // raw: the header, the framing the index is made of; zstd: anywhere in the stream
                    int at = dir.equals("raw") ? random.nextInt(4 + 4 * (8 + 1)) : random.nextInt(original.length);
                    damaged[at] ^= (byte) (1 << random.nextInt(8));
                }
                Files.write(shard, damaged);
                try (TieredCache cache = cache()) {
                    ShardedDataset dataset;
                    try {
                        dataset = MdsDataset.of(cache, "mds/" + dir);
                    } catch (CorruptShardException e) {
                        caught++;
                        continue;
                    }
                    if (dir.equals("raw")) {
                        // the hashes see any damage, also where the framing cannot (a sample's own bytes)
                        assertThrows(CorruptShardException.class, () -> MdsDataset.verify(dataset));
                    }
                    for (int i = 0; i < dataset.size(); i++) {
                        try {
                            Sample s = dataset.read(i);
                            try {
                                String got = fingerprint(s)
                                        .replace("mds/" + dir + "/", "mds/raw/")
                                        .replace(".mds.zstd#", ".mds#");
                                assertEquals(want.get(i), got, dir + " round " + round + " sample " + i);
                            } finally {
                                s.release();
                            }
                        } catch (CorruptShardException e) {
                            caught++;
                        }
                    }
                }
            }
            Files.write(shard, original);
        }
        assertTrue(caught >= rounds, "every round's damage is caught: " + caught + " of " + rounds);
    }

    // ------------------------------------------------------------------------------------------------ index.json

    private CorruptShardException badIndex(String dir, String from, String to) throws IOException {
        Path index = root.resolve("mds").resolve(dir).resolve("index.json");
        String text = Files.readString(index);
        assertTrue(text.contains(from), from);
        Files.writeString(index, text.replace(from, to));
        try (TieredCache cache = cache()) {
            return assertThrows(CorruptShardException.class, () -> MdsDataset.of(cache, "mds/" + dir));
        } finally {
            Files.writeString(index, text);
        }
    }

    @Test
    void indexJsonErrorsNameTheFileAndTheExpectation() throws IOException {
        try (TieredCache cache = cache()) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> MdsDataset.of(cache, "mds/none"));
            assertTrue(
                    e.getMessage().contains("no 'mds/none/index.json'")
                            && e.getMessage().contains("expected"),
                    e.getMessage());
        }
        String m = badIndex("raw", "{\"shards\"", "{\"shards\" [").getMessage();
        assertTrue(m.contains("'mds/raw/index.json' is not JSON"), m);
        m = badIndex("raw", "\"pkl\"", "\"pickle5\"").getMessage();
        assertTrue(m.contains("'mds/raw/index.json' shard 0: column 'obj'") && m.contains("encoding 'pickle5'"), m);
        m = badIndex("zstd", "\"compression\": \"zstd\"", "\"compression\": \"br\"")
                .getMessage();
        assertTrue(m.contains("compression \"br\" (expected: null or \"zstd\""), m);
        m = badIndex("raw", "\"samples\": 8", "\"samples\": -8").getMessage();
        assertTrue(m.contains("shard 0: samples -8 (expected: an integer from 0"), m);
        m = badIndex("raw", "\"basename\": \"shard.00000.mds\"", "\"basename\": \"../x.mds\"")
                .getMessage();
        assertTrue(m.contains("raw_data.basename \"../x.mds\" (expected: a file name beside index.json)"), m);
        m = badIndex("raw", "\"column_sizes\": [null, null, 2", "\"column_sizes\": [null, null, 3")
                .getMessage();
        assertTrue(m.contains("column 'f16' (float16) of size 3 (expected: 2 bytes)"), m);
    }

    @Test
    void zstdJniMissingIsNamedAndXxh64IsXxh64() {
        IOException e = assertThrows(
                IOException.class, () -> MdsFormat.Codec.require("com.example.NoSuchZstd", "mds/a.mds.zstd"));
        assertTrue(
                e.getMessage().contains("needs com.github.luben:zstd-jni")
                        && e.getMessage().contains("mds/a"),
                e.getMessage());
        assertEquals(0xef46db3751d8e999L, XxHash64.hash(ByteBuffer.allocate(0)));
        assertEquals(0x44bc2cf5ad770999L, XxHash64.hash(ByteBuffer.wrap("abc".getBytes(StandardCharsets.US_ASCII))));
    }

    @Test
    void badArgumentsAreRefused() throws IOException {
        try (TieredCache cache = cache()) {
            assertThrows(IllegalArgumentException.class, () -> MdsDataset.of(null, "mds/raw"));
            assertThrows(IllegalArgumentException.class, () -> MdsDataset.of(cache, null));
            assertThrows(IllegalArgumentException.class, () -> MdsDataset.of(cache, "/mds/raw"));
            assertThrows(IllegalArgumentException.class, () -> MdsDataset.of(cache, "mds/raw", -1));
            assertThrows(IllegalArgumentException.class, () -> MdsDataset.columns(null));
            assertThrows(IllegalArgumentException.class, () -> MdsDataset.ndarray(ByteBuffer.allocate(1), "str"));
            assertThrows(
                    IllegalArgumentException.class, () -> MdsDataset.ndarray(ByteBuffer.allocate(3), "ndarray:int16"));
        }
    }
}
