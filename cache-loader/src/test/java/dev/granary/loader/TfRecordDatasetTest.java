// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.math.BigInteger;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link TfRecordDataset} over files TensorFlow's own Java writer made ({@code fixtures/tfrecord}, with DALI's
 * {@code tfrecord2idx} indexes and the values the writer was given, {@code expected.json}): every record's bytes and
 * every feature checked, with the DALI index and by a scan; a stale or damaged index; a damaged record; compressed
 * files; the loader over the files; {@code writeIndex} against DALI's own output; and random damage, which must never
 * give wrong bytes.
 */
@Timeout(120)
class TfRecordDatasetTest {

    private static final List<String> FILES = List.of("examples.tfrecord", "examples2.tfrecord", "plain.tfrecord");

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Map<String, Object> expected;

    @BeforeEach
    void copyFixtures() throws IOException, URISyntaxException {
        Path fixtures = Path.of(getClass()
                        .getResource("/fixtures/tfrecord/expected.json")
                        .toURI())
                .getParent();
        try (var files = Files.list(fixtures)) {
            for (Path f : files.toList()) {
                Files.copy(f, Files.createDirectories(root.resolve("tfr")).resolve(f.getFileName()));
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

    private static List<String> keys() {
        return FILES.stream().map(f -> "tfr/" + f).toList();
    }

    @SuppressWarnings("unchecked")
    private List<Map<String, Object>> records(String file) {
        Map<String, Object> files = (Map<String, Object>) expected.get("files");
        return (List<Map<String, Object>>) ((Map<String, Object>) files.get(file)).get("records");
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** Checks every sample of the dataset against what TensorFlow's writer was given. */
    @SuppressWarnings("unchecked")
    private void assertEverySample(ShardedDataset dataset) throws IOException {
        int i = 0;
        for (String file : FILES) {
            for (Map<String, Object> record : records(file)) {
                Sample sample = dataset.read(i);
                try {
                    assertEquals("tfr/" + file + "#" + record.get("index"), sample.key());
                    assertArrayEquals(
                            Base64.getDecoder().decode((String) record.get("payload_base64")),
                            bytes(sample.bytes()),
                            "record " + i);
                    Map<String, Object> features = (Map<String, Object>) record.get("features");
                    if (features == null) {
                        if (sample.bytes().remaining() > 0) {
                            assertEquals(
                                    Set.of(TfRecordFormat.RECORD),
                                    sample.fields().keySet(),
                                    file);
                        }
                    } else {
                        assertEquals(features.keySet(), sample.fields().keySet(), file + " record " + i);
                        for (Map.Entry<String, Object> f : features.entrySet()) {
                            assertFeature(
                                    f.getKey(),
                                    (Map<String, Object>) f.getValue(),
                                    sample.fields().get(f.getKey()));
                        }
                    }
                } finally {
                    sample.release();
                }
                i++;
            }
        }
        assertEquals(i, dataset.size());
    }

    @SuppressWarnings("unchecked")
    private static void assertFeature(String name, Map<String, Object> want, ByteBuffer got) {
        ByteBuffer le = got.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        switch ((String) want.get("kind")) {
            case "bytes_list" -> {
                List<String> hex = (List<String>) want.get("hex");
                byte[] first = hex.isEmpty() ? new byte[0] : HexFormat.of().parseHex(hex.getFirst());
                assertArrayEquals(first, bytes(got), name);
            }
            case "int64_list" -> {
                List<Object> values = (List<Object>) want.get("values");
                assertEquals(8 * values.size(), got.remaining(), name);
                for (Object v : values) {
                    long value = v instanceof BigInteger big ? big.longValue() : (Long) v;
                    assertEquals(value, le.getLong(), name);
                }
            }
            case "float_list" -> {
                List<String> bits = (List<String>) want.get("bits_hex");
                assertEquals(4 * bits.size(), got.remaining(), name);
                for (String b : bits) {
                    assertEquals(Integer.parseUnsignedInt(b, 16), le.getInt(), name);
                }
            }
            default -> throw new AssertionError(want);
        }
    }

    @Test
    void recordsAndFeaturesAreWhatTensorFlowWroteReadFromDalisIndexes() throws IOException {
        List<IndexingProgress> progress = new CopyOnWriteArrayList<>();
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = TfRecordDataset.of(cache, keys(), progress::add);
            assertEquals(24 + 12 + 8, dataset.size());
            assertEquals(3, progress.size());
            for (IndexingProgress p : progress) {
                assertTrue(p.fromIndexFile(), p.toString());
            }
            // One listing of the directory and one read of each index: nothing of the files themselves.
            assertEquals(3, cache.stats().origin().reads(), cache.stats().toString());
            assertEverySample(dataset);
        }
    }

    @Test
    void withoutIndexesTheFilesAreScannedOnceAndReadTheSame() throws IOException {
        for (String f : FILES) {
            Files.delete(root.resolve("tfr").resolve(f.replace(".tfrecord", ".idx")));
        }
        List<IndexingProgress> progress = new CopyOnWriteArrayList<>();
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = TfRecordDataset.of(cache, keys(), progress::add);
            for (IndexingProgress p : progress) {
                assertFalse(p.fromIndexFile());
                assertEquals("no index file", p.note());
            }
            long reads = cache.stats().origin().reads();
            assertEverySample(dataset);
            assertEquals(reads, cache.stats().origin().reads(), "the scan's parts serve every record");
        }
    }

    @Test
    void aStaleIndexIsReportedAndTheFileScanned() throws IOException {
        Path idx = root.resolve("tfr/plain.idx");
        List<String> lines = new ArrayList<>(Files.readAllLines(idx));
        lines.removeLast(); // one record short: the index no longer covers the file
        Files.write(idx, lines);
        List<IndexingProgress> progress = new CopyOnWriteArrayList<>();
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = TfRecordDataset.of(cache, keys(), progress::add);
            IndexingProgress plain = progress.stream()
                    .filter(p -> p.shard().endsWith("plain.tfrecord"))
                    .findFirst()
                    .orElseThrow();
            assertFalse(plain.fromIndexFile());
            assertTrue(plain.note().contains("does not describe shard 'tfr/plain.tfrecord'"), plain.note());
            assertEverySample(dataset);
        }
    }

    @Test
    void aDamagedIndexOrRecordIsAClearErrorNeverWrongBytes() throws IOException {
        Files.writeString(root.resolve("tfr/examples2.idx"), "0 91\nnot numbers\n");
        try (TieredCache cache = cache()) {
            CorruptShardException e =
                    assertThrows(CorruptShardException.class, () -> TfRecordDataset.of(cache, keys()));
            assertTrue(
                    e.getMessage()
                            .contains("index 'tfr/examples2.idx' of shard 'tfr/examples2.tfrecord' is"
                                    + " damaged: line 2 is 'not numbers'"),
                    e.getMessage());
        }
        Files.delete(root.resolve("tfr/examples2.idx"));
        // A byte of record 3's data changed: its CRC fails when read, naming the file and the offset.
        Path file = root.resolve("tfr/examples.tfrecord");
        byte[] bytes = Files.readAllBytes(file);
        long offset = (Long) records("examples.tfrecord").get(3).get("offset");
        bytes[(int) offset + 20] ^= 1;
        Files.write(file, bytes);
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = TfRecordDataset.of(cache, keys());
            CorruptShardException e = assertThrows(CorruptShardException.class, () -> dataset.read(3));
            assertEquals(offset, e.offset());
            assertTrue(e.getMessage().contains("record data CRC"), e.getMessage());
            Sample fine = dataset.read(4);
            fine.release();
        }
        // The length field's CRC broken: the scan refuses the file.
        bytes[(int) offset + 20] ^= 1;
        bytes[(int) offset + 9] ^= 1;
        Files.write(file, bytes);
        Files.delete(root.resolve("tfr/examples.idx"));
        try (TieredCache cache = cache()) {
            CorruptShardException e =
                    assertThrows(CorruptShardException.class, () -> TfRecordDataset.of(cache, keys()));
            assertEquals(offset, e.offset());
            assertTrue(e.getMessage().contains("record length CRC"), e.getMessage());
        }
    }

    @Test
    void compressedFilesAreRefusedSayingSo() throws IOException {
        try (TieredCache cache = cache()) {
            CorruptShardException e = assertThrows(
                    CorruptShardException.class, () -> TfRecordDataset.of(cache, List.of("tfr/examples.tfrecord.gz")));
            assertTrue(
                    e.getMessage().contains("a GZIP-compressed TFRecord file (it starts with 1f 8b)"), e.getMessage());
        }
    }

    @Test
    void aLoaderReadsEveryRecordOnceInShardBlocks() throws IOException {
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = TfRecordDataset.of(cache, keys());
            Set<String> seen = new HashSet<>();
            try (DataLoader<LoaderFixture.Item> loader = DataLoader.builder(dataset, LoaderFixture::copy)
                            .batchSize(5)
                            .workers(2)
                            .shuffle(Shuffle.shardBlocks(7L, 2))
                            .build();
                    Epoch<LoaderFixture.Item> epoch = loader.epoch(0)) {
                for (Batch<LoaderFixture.Item> batch : epoch) {
                    for (LoaderFixture.Item item : batch.items()) {
                        assertTrue(seen.add(item.key()), item.key());
                    }
                }
            }
            assertEquals(dataset.size(), seen.size());
        }
    }

    @Test
    void writeIndexWritesWhatDalisTfrecord2idxWrites() throws IOException {
        for (String f : FILES) {
            Path idx = root.resolve("tfr").resolve(f.replace(".tfrecord", ".idx"));
            byte[] dali = Files.readAllBytes(idx);
            Files.delete(idx);
            try (TieredCache cache = cache()) {
                assertEquals(
                        "tfr/" + f.replace(".tfrecord", ".idx"),
                        TfRecordDataset.writeIndex(cache, "tfr/" + f).key());
            }
            assertArrayEquals(dali, Files.readAllBytes(idx), f);
        }
    }

    @Test
    void randomDamageNeverGivesWrongBytes() throws IOException {
        byte[] original = Files.readAllBytes(root.resolve("tfr/examples.tfrecord"));
        List<byte[]> records = new ArrayList<>();
        for (Map<String, Object> r : records("examples.tfrecord")) {
            records.add(Base64.getDecoder().decode((String) r.get("payload_base64")));
        }
        Files.delete(root.resolve("tfr/examples.idx"));
        SplittableRandom random = new SplittableRandom(28);
        int caught = 0;
        for (int round = 0; round < 200; round++) {
            byte[] damaged = original.clone();
            int flips = 1 + random.nextInt(3);
            for (int k = 0; k < flips; k++) {
                damaged[random.nextInt(damaged.length)] ^= (byte) (1 << random.nextInt(8));
            }
            Files.write(root.resolve("tfr/examples.tfrecord"), damaged);
            try (TieredCache cache = cache()) {
                ShardedDataset dataset;
                try {
                    dataset = TfRecordDataset.of(cache, List.of("tfr/examples.tfrecord"));
                } catch (CorruptShardException e) {
                    caught++;
                    continue;
                }
                for (int i = 0; i < dataset.size(); i++) {
                    try {
                        Sample s = dataset.read(i);
                        try {
                            assertArrayEquals(records.get(i), bytes(s.bytes()), "round " + round + " record " + i);
                        } finally {
                            s.release();
                        }
                    } catch (CorruptShardException e) {
                        caught++;
                    }
                }
            }
        }
        assertTrue(caught >= 200, "every round's damage is caught: " + caught);
    }

    @Test
    void badArgumentsAreRefused() throws IOException {
        try (TieredCache cache = cache()) {
            assertThrows(IllegalArgumentException.class, () -> TfRecordDataset.of(cache, List.of()));
            assertThrows(IllegalArgumentException.class, () -> TfRecordDataset.of(null, keys()));
            assertThrows(
                    dev.granary.NoSuchObjectException.class,
                    () -> TfRecordDataset.of(cache, List.of("tfr/missing.tfrecord")));
        }
    }
}
