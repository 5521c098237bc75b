// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link TokenDataset} over Megatron-LM indexed datasets written by Megatron-LM's own {@code IndexedDatasetBuilder}
 * ({@code fixtures/megatron}, every dtype code, documents of several sequences, empty ones, a multimodal one) and
 * numpy {@code .npy} arrays written by {@code numpy.save} ({@code fixtures/npy}): every document and every window
 * checked byte for byte against the values the writers were given; each way an {@code .idx} can lie is a clear error
 * naming the file; {@code .npy} arrays that are not 1-D little-endian integers are refused saying why.
 */
@Timeout(120)
class TokenDatasetTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private Map<String, Object> megatron;
    private Map<String, Object> npy;

    @BeforeEach
    @SuppressWarnings("unchecked")
    void copyFixtures() throws IOException, URISyntaxException {
        for (String kind : List.of("megatron", "npy")) {
            Path fixtures = Path.of(getClass()
                            .getResource("/fixtures/" + kind + "/expected.json")
                            .toURI())
                    .getParent();
            try (var files = Files.list(fixtures)) {
                for (Path f : files.toList()) {
                    Files.copy(f, Files.createDirectories(root.resolve(kind)).resolve(f.getFileName()));
                }
            }
        }
        megatron = (Map<String, Object>) ((Map<String, Object>)
                        Json.parse(Files.readString(root.resolve("megatron/expected.json"), StandardCharsets.UTF_8)))
                .get("datasets");
        npy = (Map<String, Object>) ((Map<String, Object>)
                        Json.parse(Files.readString(root.resolve("npy/expected.json"), StandardCharsets.UTF_8)))
                .get("files");
    }

    private TieredCache cache() {
        return LoaderFixture.cache(leaks, root);
    }

    private static byte[] bytes(ByteBuffer b) {
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** A dataset's tokens as the file holds them: the sequences' values in the dtype, little-endian. */
    @SuppressWarnings("unchecked")
    private static byte[] encode(List<Object> values, Map<String, Object> info, List<Object> bitsHex) {
        int size = ((Long) info.get("itemsize")).intValue();
        ByteBuffer out = ByteBuffer.allocate(values.size() * size).order(ByteOrder.LITTLE_ENDIAN);
        String dtype = (String) info.get("dtype");
        for (int i = 0; i < values.size(); i++) {
            if (dtype.startsWith("float")) {
                long bits = Long.parseUnsignedLong((String) bitsHex.get(i), 16);
                if (size == 4) {
                    out.putInt((int) bits);
                } else {
                    out.putLong(bits);
                }
                continue;
            }
            Object v = values.get(i);
            long value = v instanceof BigInteger big ? big.longValue() : (Long) v;
            switch (size) {
                case 1 -> out.put((byte) value);
                case 2 -> out.putShort((short) value);
                case 4 -> out.putInt((int) value);
                default -> out.putLong(value);
            }
        }
        return out.array();
    }

    /** Each document's bytes: its sequences, concatenated. */
    @SuppressWarnings("unchecked")
    private static List<byte[]> documents(Map<String, Object> info) {
        List<Map<String, Object>> sequences = (List<Map<String, Object>>) info.get("sequences");
        List<Object> boundaries = (List<Object>) info.get("document_indices");
        List<byte[]> docs = new ArrayList<>();
        for (int d = 0; d + 1 < boundaries.size(); d++) {
            java.io.ByteArrayOutputStream doc = new java.io.ByteArrayOutputStream();
            for (long s = (Long) boundaries.get(d); s < (Long) boundaries.get(d + 1); s++) {
                Map<String, Object> seq = sequences.get((int) s);
                doc.writeBytes(encode((List<Object>) seq.get("values"), info, (List<Object>) seq.get("bits_hex")));
            }
            docs.add(doc.toByteArray());
        }
        return docs;
    }

    @Test
    void everyDocumentOfEveryDtypeIsWhatMegatronWrote() throws IOException {
        try (TieredCache cache = cache()) {
            for (String name : megatron.keySet()) {
                @SuppressWarnings("unchecked")
                Map<String, Object> info = (Map<String, Object>) megatron.get(name);
                List<byte[]> expected = documents(info);
                ShardedDataset docs = TokenDataset.documents(cache, "megatron/" + name);
                assertEquals(expected.size(), docs.size(), name);
                for (int d = 0; d < expected.size(); d++) {
                    Sample s = docs.read(d);
                    try {
                        assertArrayEquals(expected.get(d), bytes(s.bytes()), name + " document " + d);
                        assertEquals(Set.of(TokenFormat.FIELD), s.fields().keySet());
                    } finally {
                        s.release();
                    }
                }
            }
        }
    }

    @Test
    void gptWindowsAreTheConcatenatedTokensOverlappingByOne() throws IOException {
        int length = 16;
        try (TieredCache cache = cache()) {
            for (String name : List.of("gpt_uint16", "llama_int32", "wide_int64", "multimodal_int32")) {
                @SuppressWarnings("unchecked")
                Map<String, Object> info = (Map<String, Object>) megatron.get(name);
                java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
                documents(info).forEach(all::writeBytes);
                byte[] tokens = all.toByteArray();
                int size = ((Long) info.get("itemsize")).intValue();
                int count = (tokens.length / size - 1) / length;
                ShardedDataset windows = TokenDataset.of(cache, "megatron/" + name, length);
                assertEquals(count, windows.size(), name);
                for (int i = 0; i < count; i++) {
                    Sample s = windows.read(i);
                    try {
                        byte[] want = java.util.Arrays.copyOfRange(
                                tokens, i * length * size, (i * length + length + 1) * size);
                        assertArrayEquals(want, bytes(s.bytes()), name + " window " + i);
                        assertTrue(
                                s.bytes().isDirect() && s.bytes().isReadOnly(),
                                "a view of the memory tier's page, not a copy");
                    } finally {
                        s.release();
                    }
                }
            }
            assertThrows(
                    IllegalArgumentException.class,
                    () -> TokenDataset.of(cache, "megatron/bytes_uint8", 1000),
                    "fewer tokens than one window: no samples");
        }
    }

    @Test
    void aLoaderReadsEveryWindowOnce() throws IOException {
        try (TieredCache cache = cache()) {
            ShardedDataset windows = TokenDataset.of(cache, "megatron/gpt_uint16", 8);
            Set<Integer> seen = new HashSet<>();
            try (DataLoader<LoaderFixture.Item> loader = DataLoader.builder(windows, LoaderFixture::copy)
                            .batchSize(4)
                            .workers(2)
                            .shuffle(3L)
                            .build();
                    Epoch<LoaderFixture.Item> epoch = loader.epoch(0)) {
                for (Batch<LoaderFixture.Item> b : epoch) {
                    for (LoaderFixture.Item item : b.items()) {
                        assertTrue(seen.add(item.index()));
                        assertEquals(18, item.bytes().length, "9 uint16 tokens");
                    }
                }
            }
            assertEquals(windows.size(), seen.size());
        }
    }

    /** Rewrites byte {@code at} of a file. */
    private void patch(String file, int at, byte value) throws IOException {
        Path p = root.resolve(file);
        byte[] b = Files.readAllBytes(p);
        b[at] = value;
        Files.write(p, b);
    }

    @Test
    void anIdxThatDoesNotAddUpIsAClearErrorNamingTheFile() throws IOException {
        try (TieredCache cache = cache()) {
            // The header's dtype changed from uint16 (8) to int32 (4): the pointers no longer match the lengths.
            patch("megatron/gpt_uint16.idx", 17, (byte) 4);
            CorruptShardException dtype = assertThrows(
                    CorruptShardException.class, () -> TokenDataset.documents(cache, "megatron/gpt_uint16"));
            assertTrue(
                    dtype.getMessage()
                                    .contains("index 'megatron/gpt_uint16.idx' of 'megatron/gpt_uint16.bin'"
                                            + " does not add up")
                            && dtype.getMessage().contains("the pointers do not match the lengths"),
                    dtype.getMessage());
            patch("megatron/gpt_uint16.idx", 17, (byte) 9);
            CorruptShardException code = assertThrows(
                    CorruptShardException.class, () -> TokenDataset.documents(cache, "megatron/gpt_uint16"));
            assertTrue(code.getMessage().contains("dtype code 9 (expected: 1 to 8"), code.getMessage());
        }
        try (TieredCache cache = cache()) {
            // A .bin shorter than the .idx claims.
            Path bin = root.resolve("megatron/llama_int32.bin");
            byte[] b = Files.readAllBytes(bin);
            Files.write(bin, java.util.Arrays.copyOf(b, b.length - 4));
            CorruptShardException shorter =
                    assertThrows(CorruptShardException.class, () -> TokenDataset.of(cache, "megatron/llama_int32", 8));
            assertTrue(
                    shorter.getMessage().contains("'megatron/llama_int32.bin' has " + (b.length - 4)),
                    shorter.getMessage());
            // No .idx at all.
            Files.delete(root.resolve("megatron/small_int8.idx"));
            IllegalArgumentException missing = assertThrows(
                    IllegalArgumentException.class, () -> TokenDataset.documents(cache, "megatron/small_int8"));
            assertTrue(
                    missing.getMessage().contains("has no index 'megatron/small_int8.idx' beside it"),
                    missing.getMessage());
            assertThrows(IllegalArgumentException.class, () -> TokenDataset.of(cache, "megatron/wide_int64", 0));
            assertThrows(IllegalArgumentException.class, () -> TokenDataset.of(cache, "megatron/", 8));
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void npyArraysOfIntegersAreReadAndOthersRefusedSayingWhy() throws IOException {
        try (TieredCache cache = cache()) {
            for (String file : List.of(
                    "tokens_uint16.npy",
                    "tokens_uint32.npy",
                    "tokens_int32.npy",
                    "tokens_int64.npy",
                    "tokens_uint16_v2.npy")) {
                Map<String, Object> info = (Map<String, Object>) npy.get(file);
                byte[] data = HexFormat.of().parseHex((String) info.get("data_hex"));
                int size = data.length / ((Long) ((List<Object>) info.get("shape")).getFirst()).intValue();
                int length = 4;
                ShardedDataset windows = TokenDataset.ofNpy(cache, List.of("npy/" + file), length);
                assertEquals((data.length / size - 1) / length, windows.size(), file);
                for (int i = 0; i < windows.size(); i++) {
                    Sample s = windows.read(i);
                    try {
                        assertArrayEquals(
                                java.util.Arrays.copyOfRange(data, i * length * size, (i * length + length + 1) * size),
                                bytes(s.bytes()),
                                file + " window " + i);
                    } finally {
                        s.release();
                    }
                }
            }
            Map<String, String> refused = Map.of(
                    "tokens_uint16_be.npy",
                    "big-endian",
                    "tokens_int32_2d_c.npy",
                    "(expected: a 1-D array of tokens",
                    "tokens_int32_2d_fortran.npy",
                    "(expected: a 1-D array of tokens",
                    "values_float32.npy",
                    "dtype '<f4' (expected: integer tokens");
            for (Map.Entry<String, String> r : refused.entrySet()) {
                IllegalArgumentException e = assertThrows(
                        IllegalArgumentException.class,
                        () -> TokenDataset.ofNpy(cache, List.of("npy/" + r.getKey()), 4),
                        r.getKey());
                assertTrue(
                        e.getMessage().contains("'npy/" + r.getKey() + "'")
                                && e.getMessage().contains(r.getValue()),
                        e.getMessage());
            }
            assertThrows(
                    IllegalArgumentException.class,
                    () -> TokenDataset.ofNpy(cache, List.of("npy/empty_uint16.npy"), 4),
                    "no tokens: no samples");
            CorruptShardException notNpy = assertThrows(
                    CorruptShardException.class,
                    () -> TokenDataset.ofNpy(cache, List.of("megatron/gpt_uint16.bin"), 4));
            assertTrue(notNpy.getMessage().contains("no \\x93NUMPY magic"), notNpy.getMessage());
        }
    }
}
