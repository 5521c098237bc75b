// SPDX-License-Identifier: Apache-2.0
package dev.granary.parquet;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.granary.LeakDetection;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.Sample;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The DuckDB fixtures ({@code fixtures/parquet}, README there), what DuckDB says they hold, and a cache over them. */
final class ParquetFixtures {

    static final List<String> FLAT = List.of(
            "flat_uncompressed.parquet",
            "flat_snappy.parquet",
            "flat_gzip.parquet",
            "flat_zstd.parquet",
            "flat_zstd_v2.parquet");
    static final String NESTED = "nested_zstd.parquet";
    /** The rows of {@code flat_zstd.parquet} rewritten by pyarrow with a CRC32 in every page header (make_crc.py). */
    static final List<String> WITH_PAGE_CRCS = List.of("flat_zstd_crc.parquet", "flat_snappy_crc.parquet");

    static final int ROWS = 300;
    static final int ROW_GROUPS = 5;

    private ParquetFixtures() {}

    static Path directory() {
        try {
            return Path.of(ParquetFixtures.class
                            .getResource("/fixtures/parquet/expected-rows.json")
                            .toURI())
                    .getParent();
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Copies the Parquet files to {@code root/pq/}. */
    static void copy(Path root) throws IOException {
        Path to = Files.createDirectories(root.resolve("pq"));
        for (String f : FLAT) {
            Files.copy(directory().resolve(f), to.resolve(f));
        }
        for (String f : WITH_PAGE_CRCS) {
            Files.copy(directory().resolve(f), to.resolve(f));
        }
        Files.copy(directory().resolve(NESTED), to.resolve(NESTED));
    }

    static String key(String file) {
        return "pq/" + file;
    }

    static TieredCache cache(LeakCheck leaks, Path root, long memoryBytes) {
        MemoryTier memory =
                MemoryTier.builder().capacity(memoryBytes).slabSize(1 << 20).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        return leaks.watch(TieredCache.builder(PosixOrigin.of(root))
                .tier(memory)
                .pageSize(64 << 10)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }

    /** A row as the decoder copied it: every field's bytes by name, and the sample's key and index. */
    record Row(String key, int index, Map<String, byte[]> fields) {}

    static Row copy(Sample sample) {
        Map<String, byte[]> fields = new LinkedHashMap<>();
        for (Map.Entry<String, ByteBuffer> f : sample.fields().entrySet()) {
            ByteBuffer b = f.getValue().duplicate();
            byte[] bytes = new byte[b.remaining()];
            b.get(bytes);
            fields.put(f.getKey(), bytes);
        }
        return new Row(sample.key(), sample.index(), fields);
    }

    /** Runs one epoch of the loader, giving every row it yields, in order. */
    static List<Row> epoch(DataLoader<Row> loader, long epoch) {
        List<Row> rows = new ArrayList<>();
        try (Epoch<Row> batches = loader.epoch(epoch)) {
            for (Batch<Row> batch : batches) {
                rows.addAll(batch.items());
            }
        }
        return rows;
    }

    /** {@return the rows DuckDB exported, by id order} */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> expectedRows(String file) {
        try {
            return (List<Map<String, Object>>)
                    new MiniJson(Files.readString(directory().resolve(file), StandardCharsets.UTF_8)).value();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Asserts that a flat row holds exactly what DuckDB wrote (a NULL is an absent field). */
    static void assertFlatRow(Map<String, Object> want, Map<String, byte[]> got, String where) {
        assertInt(want.get("id"), got.get("id"), where + " id");
        assertEquals(
                Long.parseLong(((MiniJson.Num) want.get("big")).text()),
                le(got.get("big")).getLong(),
                where + " big");
        assertEquals(
                Float.floatToIntBits((float) Double.parseDouble(((MiniJson.Num) want.get("f")).text())),
                Float.floatToIntBits(le(got.get("f")).getFloat()),
                where + " f");
        assertEquals(
                Double.doubleToLongBits(Double.parseDouble(((MiniJson.Num) want.get("d")).text())),
                Double.doubleToLongBits(le(got.get("d")).getDouble()),
                where + " d");
        assertArrayEquals(((String) want.get("s")).getBytes(StandardCharsets.UTF_8), got.get("s"), where + " s");
        assertArrayEquals(HexFormat.of().parseHex((String) want.get("b_hex")), got.get("b"), where + " b");
        assertArrayEquals(new byte[] {(byte) (want.get("flag").equals(true) ? 1 : 0)}, got.get("flag"));
        assertInt(want.get("maybe_null"), got.get("maybe_null"), where + " maybe_null");
        if (want.get("note") == null) {
            assertNull(got.get("note"), where + " note is NULL: an absent field");
        } else {
            assertArrayEquals(((String) want.get("note")).getBytes(StandardCharsets.UTF_8), got.get("note"));
        }
        assertArrayEquals(((String) want.get("category")).getBytes(StandardCharsets.UTF_8), got.get("category"));
        assertEquals(10, got.size() + (want.get("note") == null ? 1 : 0) + (want.get("maybe_null") == null ? 1 : 0));
    }

    static void assertInt(Object want, byte[] got, String where) {
        if (want == null) {
            assertNull(got, where + " is NULL: an absent field");
            return;
        }
        assertNotNull(got, where);
        assertEquals(4, got.length, where);
        assertEquals(Integer.parseInt(((MiniJson.Num) want).text()), le(got).getInt(), where);
    }

    static ByteBuffer le(byte[] bytes) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    /**
     * DuckDB's {@code parquet_metadata()} of the fixtures: per file and row group, each column's compressed chunk
     * size.
     */
    static Map<String, Map<Integer, Map<String, Long>>> chunkSizes() throws IOException {
        List<String> lines = Files.readAllLines(directory().resolve("expected-metadata.tsv"), StandardCharsets.UTF_8);
        List<String> header = List.of(lines.getFirst().split("\t"));
        int file = header.indexOf("file");
        int group = header.indexOf("row_group_id");
        int path = header.indexOf("path_in_schema");
        int size = header.indexOf("total_compressed_size");
        Map<String, Map<Integer, Map<String, Long>>> out = new TreeMap<>();
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split("\t");
            out.computeIfAbsent(Path.of(f[file]).getFileName().toString(), k -> new TreeMap<>())
                    .computeIfAbsent(Integer.parseInt(f[group]), k -> new TreeMap<>())
                    .put(f[path], Long.parseLong(f[size]));
        }
        return out;
    }

    /** Just enough JSON for the expected rows: numbers are kept as their text, to be read at the column's type. */
    static final class MiniJson {
        record Num(String text) {}

        private final String s;
        private int i;

        MiniJson(String s) {
            this.s = s;
        }

        Object value() {
            skip();
            char c = s.charAt(i);
            switch (c) {
                case '{' -> {
                    Map<String, Object> m = new LinkedHashMap<>();
                    i++;
                    skip();
                    if (s.charAt(i) == '}') {
                        i++;
                        return m;
                    }
                    while (true) {
                        skip();
                        String k = string();
                        skip();
                        i++; // ':'
                        m.put(k, value());
                        skip();
                        if (s.charAt(i++) == '}') {
                            return m;
                        }
                    }
                }
                case '[' -> {
                    List<Object> l = new ArrayList<>();
                    i++;
                    skip();
                    if (s.charAt(i) == ']') {
                        i++;
                        return l;
                    }
                    while (true) {
                        l.add(value());
                        skip();
                        if (s.charAt(i++) == ']') {
                            return l;
                        }
                    }
                }
                case '"' -> {
                    return string();
                }
                default -> {
                    if (s.startsWith("null", i)) {
                        i += 4;
                        return null;
                    }
                    if (s.startsWith("true", i)) {
                        i += 4;
                        return true;
                    }
                    if (s.startsWith("false", i)) {
                        i += 5;
                        return false;
                    }
                    int start = i;
                    while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                        i++;
                    }
                    return new Num(s.substring(start, i));
                }
            }
        }

        private String string() {
            StringBuilder b = new StringBuilder();
            i++; // '"'
            while (true) {
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c == '\\') {
                    char e = s.charAt(i++);
                    switch (e) {
                        case 'n' -> b.append('\n');
                        case 't' -> b.append('\t');
                        case 'r' -> b.append('\r');
                        case 'b' -> b.append('\b');
                        case 'f' -> b.append('\f');
                        case 'u' -> {
                            b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                            i += 4;
                        }
                        default -> b.append(e);
                    }
                } else {
                    b.append(c);
                }
            }
        }

        private void skip() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }
    }
}
