// SPDX-License-Identifier: Apache-2.0
package dev.granary.parquet;

import static dev.granary.parquet.ParquetFixtures.ROWS;
import static dev.granary.parquet.ParquetFixtures.key;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.CorruptShardException;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.SampleException;
import dev.granary.loader.ShardedDataset;
import dev.granary.parquet.ParquetFixtures.Row;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
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
 * Damaged Parquet files: not Parquet, truncated, a footer length past the file, a corrupt page, and seeded random
 * damage to the footer and to the pages. Each is a clear error naming the file, never wrong values — but for
 * damage inside page data of files without page checksums, which no reader can detect (see the last test).
 */
@Timeout(120)
class ParquetDamageTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private List<Map<String, Object>> expected;

    @BeforeEach
    void copyFixtures() throws IOException {
        ParquetFixtures.copy(root);
        expected = ParquetFixtures.expectedRows("expected-rows.json");
    }

    private TieredCache cache() {
        return ParquetFixtures.cache(leaks, root, 16L << 20);
    }

    private Path file(String name) {
        return root.resolve("pq").resolve(name);
    }

    private CorruptShardException indexingFails(String name) throws IOException {
        try (TieredCache cache = cache()) {
            CorruptShardException e =
                    assertThrows(CorruptShardException.class, () -> ParquetDataset.of(cache, List.of(key(name))));
            assertEquals(key(name), e.shard(), e.getMessage());
            return e;
        }
    }

    @Test
    void aFileThatIsNotParquetIsRefusedSayingWhy() throws IOException {
        Files.writeString(file("text.parquet"), "id,name\n1,one\n2,two\n");
        CorruptShardException e = indexingFails("text.parquet");
        assertTrue(e.getMessage().contains("not a Parquet file: it ends with"), e.getMessage());
        assertTrue(e.getMessage().contains("(expected: 50 41 52 31, 'PAR1')"), e.getMessage());

        Files.write(file("tiny.parquet"), new byte[] {'P', 'A', 'R', '1', 0});
        e = indexingFails("tiny.parquet");
        assertTrue(e.getMessage().contains("5 bytes (expected: a Parquet file, at least 12 bytes"), e.getMessage());
    }

    @Test
    void aTruncatedFileIsRefused() throws IOException {
        byte[] bytes = Files.readAllBytes(file("flat_zstd.parquet"));
        for (int cut : new int[] {1, 8, bytes.length / 2}) {
            Files.write(file("flat_zstd.parquet"), Arrays.copyOf(bytes, bytes.length - cut));
            CorruptShardException e = indexingFails("flat_zstd.parquet");
            assertTrue(e.getMessage().contains("not a Parquet file"), "cut " + cut + ": " + e.getMessage());
        }
    }

    @Test
    void aFooterLengthPastTheFileIsRefused() throws IOException {
        byte[] bytes = Files.readAllBytes(file("flat_snappy.parquet"));
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putInt(bytes.length - 8, bytes.length);
        Files.write(file("flat_snappy.parquet"), bytes);
        CorruptShardException e = indexingFails("flat_snappy.parquet");
        assertEquals(bytes.length - 8, e.offset());
        assertTrue(
                e.getMessage().contains("footer length " + bytes.length + " (expected: 1 to " + (bytes.length - 12)),
                e.getMessage());
    }

    @Test
    void aCorruptPageFailsItsRowGroupNamingTheFileNeverWrongValues() throws IOException {
        // Row group 2's "s" chunk in the ZSTD file: its compressed page bytes overwritten past the page header.
        Map<Integer, Map<String, Long>> chunks = ParquetFixtures.chunkSizes().get("flat_zstd.parquet");
        long offset = chunkStart("flat_zstd.parquet", 2, "s");
        long size = chunks.get(2).get("s");
        byte[] bytes = Files.readAllBytes(file("flat_zstd.parquet"));
        for (long i = offset + size / 2; i < offset + size; i++) {
            bytes[(int) i] = (byte) 0xA5;
        }
        Files.write(file("flat_zstd.parquet"), bytes);
        Outcome outcome = readAll("flat_zstd.parquet", null);
        assertEquals(0, outcome.wrong, outcome.toString());
        assertTrue(outcome.failures.size() >= 1, outcome.toString());
        for (Throwable t : outcome.failures) {
            CorruptShardException e = assertInstanceOf(CorruptShardException.class, t.getCause(), t.toString());
            assertEquals(key("flat_zstd.parquet"), e.shard());
            assertTrue(e.getMessage().contains("row group 2 (rows 128 to 191) does not decode"), e.getMessage());
        }
        assertEquals(ROWS - 64, outcome.good, "the other row groups read: " + outcome);
    }

    /** The first byte of a column chunk, from DuckDB's {@code parquet_metadata()}. */
    private static long chunkStart(String file, int group, String column) throws IOException {
        List<String> lines = Files.readAllLines(ParquetFixtures.directory().resolve("expected-metadata.tsv"));
        List<String> header = List.of(lines.getFirst().split("\t"));
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split("\t");
            if (f[header.indexOf("file")].endsWith(file)
                    && Integer.parseInt(f[header.indexOf("row_group_id")]) == group
                    && f[header.indexOf("path_in_schema")].equals(column)) {
                String dictionary = f[header.indexOf("dictionary_page_offset")];
                long data = Long.parseLong(f[header.indexOf("data_page_offset")]);
                return dictionary.equals("NULL") ? data : Math.min(data, Long.parseLong(dictionary));
            }
        }
        throw new AssertionError(file + " " + group + " " + column);
    }

    /** What reading every row of a file through the loader gave: rows equal to DuckDB's, rows not, failures. */
    static final class Outcome {
        int good;
        int wrong;
        final List<Throwable> failures = new ArrayList<>();
        String firstWrong;

        @Override
        public String toString() {
            return good + " rows right, " + wrong + " wrong" + (firstWrong == null ? "" : " (" + firstWrong + ")")
                    + ", " + failures.size() + " batches failed"
                    + (failures.isEmpty() ? "" : ": " + failures.getFirst());
        }
    }

    private Outcome readAll(String name, String[] columns) throws IOException {
        Outcome outcome = new Outcome();
        try (TieredCache cache = cache()) {
            ShardedDataset dataset =
                    ParquetDataset.of(cache, List.of(key(name)), columns == null ? new String[0] : columns);
            try (DataLoader<Row> loader = DataLoader.builder(dataset, ParquetFixtures::copy)
                            .batchSize(16)
                            .workers(2)
                            .build();
                    Epoch<Row> epoch = loader.epoch(0)) {
                Iterator<Batch<Row>> batches = epoch.iterator();
                while (batches.hasNext()) {
                    try {
                        for (Row row : batches.next().items()) {
                            try {
                                ParquetFixtures.assertFlatRow(
                                        expected.get(row.index()), row.fields(), name + " row " + row.index());
                                outcome.good++;
                            } catch (AssertionError e) {
                                outcome.wrong++;
                                outcome.firstWrong = outcome.firstWrong == null ? e.getMessage() : outcome.firstWrong;
                            }
                        }
                    } catch (SampleException e) {
                        outcome.failures.add(e);
                    }
                }
            }
        }
        return outcome;
    }

    /** Seeded bit flips in a file's footer ({@code footer}) or its pages; the outcomes, per round. */
    private List<String> fuzz(boolean footer, int[] caught) throws IOException {
        return fuzz(footer, List.of("flat_zstd.parquet", "flat_snappy.parquet", "flat_gzip.parquet"), caught);
    }

    private List<String> fuzz(boolean footer, List<String> files, int[] caught) throws IOException {
        SplittableRandom random = new SplittableRandom(footer ? 28 : 29);
        List<String> wrong = new ArrayList<>();
        for (String name : files) {
            byte[] original = Files.readAllBytes(file(name));
            int footerLength =
                    ByteBuffer.wrap(original).order(ByteOrder.LITTLE_ENDIAN).getInt(original.length - 8);
            int footerStart = original.length - 8 - footerLength;
            for (int round = 0; round < 20; round++) {
                byte[] damaged = original.clone();
                int flips = 1 + random.nextInt(3);
                for (int k = 0; k < flips; k++) {
                    int at = footer ? footerStart + random.nextInt(footerLength) : 4 + random.nextInt(footerStart - 4);
                    damaged[at] ^= (byte) (1 << random.nextInt(8));
                }
                Files.write(file(name), damaged);
                Outcome outcome;
                try {
                    outcome = readAll(name, null);
                } catch (CorruptShardException | IllegalArgumentException e) {
                    caught[0]++;
                    continue;
                }
                for (Throwable t : outcome.failures) {
                    CorruptShardException e = assertInstanceOf(CorruptShardException.class, t.getCause(), t.toString());
                    assertEquals(key(name), e.shard());
                }
                caught[0] += outcome.failures.isEmpty() ? 0 : 1;
                if (outcome.wrong > 0) {
                    wrong.add(name + " round " + round + ": " + outcome);
                }
            }
            Files.write(file(name), original);
        }
        return wrong;
    }

    @Test
    void randomDamageToFootersNeverGivesWrongValues() throws IOException {
        int[] caught = {0};
        List<String> wrong = fuzz(true, caught);
        assertEquals(List.of(), wrong, "footer damage read as values; caught " + caught[0] + " of 60");
        assertTrue(caught[0] >= 30, "most footer damage is caught: " + caught[0] + " of 60");
    }

    /**
     * Damage to page bytes is caught where it breaks decompression or decoding (a {@link CorruptShardException}
     * naming the file and the row group), but DuckDB writes no page CRCs, and ZSTD frames in Parquet carry no content
     * checksum, SNAPPY none at all: a flipped bit inside a value can decode to another value, and no reader can tell.
     * This measures it (docs/decisions/0025-parquet-on-hardwood.md): files written with page checksums are the remedy.
     */
    @Test
    void randomDamageToPagesIsCaughtWhereTheFormatCanTell() throws IOException {
        int[] caught = {0};
        List<String> wrong = fuzz(false, caught);
        System.out.println("page damage: " + caught[0] + " of 60 rounds caught, " + wrong.size()
                + " read as other values (no page CRCs in these files)");
        assertTrue(caught[0] >= 10, "page damage that breaks decoding is caught: " + caught[0] + " of 60");
    }

    /**
     * The remedy, proved: the same rows written with a CRC32 in every page header (pyarrow's
     * {@code write_page_checksum=True}; fixtures/parquet/make_crc.py). Every flip in page bytes is then caught — as a
     * clear error naming the file — and no round reads a value that differs from the original. Without CRCs, 28 of 60
     * rounds read some value wrong (the test above).
     */
    @Test
    void withPageChecksumsPageDamageIsAlwaysCaughtNeverWrongValues() throws IOException {
        for (String name : ParquetFixtures.WITH_PAGE_CRCS) {
            Outcome clean = readAll(name, null);
            assertEquals(ROWS, clean.good, name + " undamaged: " + clean);
        }
        int[] caught = {0};
        List<String> wrong = fuzz(false, ParquetFixtures.WITH_PAGE_CRCS, caught);
        assertEquals(List.of(), wrong, "page damage read as values in files with page CRCs");
        // A flip can land in bytes no value depends on (a page header's statistics, say): that round reads every row
        // right, which the empty list above already proves. Seeded: 38 of the 40 rounds are caught.
        assertTrue(caught[0] >= 36, "page damage is caught when pages carry CRCs: " + caught[0] + " of 40");
    }
}
