// SPDX-License-Identifier: Apache-2.0
package dev.granary.parquet;

import static dev.granary.parquet.ParquetFixtures.FLAT;
import static dev.granary.parquet.ParquetFixtures.NESTED;
import static dev.granary.parquet.ParquetFixtures.ROWS;
import static dev.granary.parquet.ParquetFixtures.ROW_GROUPS;
import static dev.granary.parquet.ParquetFixtures.key;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheStats;
import dev.granary.TieredCache;
import dev.granary.loader.DataLoader;
import dev.granary.loader.EpochPlan;
import dev.granary.loader.IndexingProgress;
import dev.granary.loader.LoaderState;
import dev.granary.loader.Partitioning;
import dev.granary.loader.ShardedDataset;
import dev.granary.loader.Shuffle;
import dev.granary.parquet.ParquetFixtures.Row;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ParquetDataset} over the files DuckDB wrote ({@code fixtures/parquet}): every row of every codec and page
 * version equals what DuckDB exported; indexing costs one request per file; a projection reads only its columns'
 * chunks; nested columns are refused naming them; and the loader's features — shard-block epochs, stable partitions,
 * resume, the dry run — hold, with each row group decoded once per epoch.
 */
@Timeout(120)
class ParquetDatasetTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    @BeforeEach
    void copyFixtures() throws IOException {
        ParquetFixtures.copy(root);
    }

    private TieredCache cache() {
        return ParquetFixtures.cache(leaks, root, 16L << 20);
    }

    private static List<String> flatKeys() {
        return FLAT.stream().map(ParquetFixtures::key).toList();
    }

    private static DataLoader.Builder<Row> loader(ShardedDataset dataset) {
        return DataLoader.builder(dataset, ParquetFixtures::copy).batchSize(16).workers(2);
    }

    @Test
    void everyRowOfEveryCodecIsWhatDuckDbWrote() throws IOException {
        List<Map<String, Object>> expected = ParquetFixtures.expectedRows("expected-rows.json");
        List<IndexingProgress> progress = new CopyOnWriteArrayList<>();
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = ParquetDataset.builder(cache, flatKeys())
                    .listener(progress::add)
                    .build();
            ParquetFormat format = (ParquetFormat) dataset.format();
            assertEquals(FLAT.size() * ROWS, dataset.size());
            assertEquals(FLAT.size(), progress.size());
            // The footer: each file is under 64 KiB, so one ranged read of its tail through the cache, nothing else.
            assertEquals(FLAT.size(), format.footerReads());
            assertEquals(
                    FLAT.size(), cache.stats().origin().reads(), cache.stats().toString());
            try (DataLoader<Row> loader = loader(dataset).build()) {
                List<Row> rows = ParquetFixtures.epoch(loader, 0);
                assertEquals(dataset.size(), rows.size());
                for (Row row : rows) {
                    String file = FLAT.get(row.index() / ROWS);
                    int r = row.index() % ROWS;
                    assertEquals(key(file) + "#" + r, row.key());
                    ParquetFixtures.assertFlatRow(expected.get(r), row.fields(), file + " row " + r);
                }
            }
            assertEquals((long) FLAT.size() * ROW_GROUPS, format.rowGroupsDecoded(), "each row group decoded once");
            assertEquals(0, format.decodedBytesHeld(), "every row group dropped once all its rows were served");
        }
    }

    @Test
    void aProjectionReadsOnlyItsColumnsChunks() throws IOException {
        Map<String, Map<Integer, Map<String, Long>>> chunks = ParquetFixtures.chunkSizes();
        List<Map<String, Object>> expected = ParquetFixtures.expectedRows("expected-rows.json");
        try (TieredCache cache = cache()) {
            // A format that reads only 1 KiB of the tail first, as a file much larger than 64 KiB would be read: the
            // footer then costs a second ranged read, and the file's data is not read by indexing.
            ShardedDataset dataset = ShardedDataset.of(
                    cache,
                    List.of(key("flat_zstd.parquet")),
                    new ParquetFormat(cache, List.of("id"), ParquetFormat.DEFAULT_DECODED_BYTES, 1024));
            for (int r = 0; r < ROWS; r++) {
                // A row's extent is its row group's "id" chunk: what Hardwood reads, and all the loader fetches.
                assertEquals(chunks.get("flat_zstd.parquet").get(r / 64).get("id"), dataset.byteSize(r), "row " + r);
            }
            try (DataLoader<Row> loader = loader(dataset).streamShards(false).build()) {
                for (Row row : ParquetFixtures.epoch(loader, 0)) {
                    assertEquals(Set.of("id"), row.fields().keySet());
                    ParquetFixtures.assertInt(
                            expected.get(row.index()).get("id"), row.fields().get("id"), "id");
                }
            }
            long idBytes = chunks.get("flat_zstd.parquet").values().stream()
                    .mapToLong(c -> c.get("id"))
                    .sum();
            long footer = ((ParquetFormat) dataset.format()).footerBytes();
            CacheStats stats = cache.stats();
            // The footer with its 8-byte tail, in two reads, and the five "id" chunks: nothing else of the file.
            assertEquals(footer + 8 + idBytes, stats.origin().bytes(), stats.toString());
            assertEquals(2 + ROW_GROUPS, stats.origin().reads(), stats.toString());
        }
    }

    @Test
    void nestedColumnsAreRefusedNamingThemAndTheFlatOnesRead() throws IOException {
        List<Map<String, Object>> expected = ParquetFixtures.expectedRows("expected-nested-rows.json");
        try (TieredCache cache = cache()) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> ParquetDataset.of(cache, List.of(key(NESTED)), "id", "tags"));
            assertTrue(
                    e.getMessage()
                            .contains("column 'tags' of Parquet file 'pq/nested_zstd.parquet': a nested column"
                                    + " (a list)"),
                    e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> ParquetDataset.of(cache, List.of(key(NESTED))));
            assertTrue(e.getMessage().contains("a nested column"), e.getMessage());
            e = assertThrows(
                    IllegalArgumentException.class, () -> ParquetDataset.of(cache, List.of(key(NESTED)), "point"));
            assertTrue(
                    e.getMessage().contains("column 'point'") && e.getMessage().contains("(a struct)"));

            ShardedDataset dataset = ParquetDataset.of(cache, List.of(key(NESTED)), "id", "s");
            try (DataLoader<Row> loader = loader(dataset).build()) {
                List<Row> rows = ParquetFixtures.epoch(loader, 0);
                assertEquals(expected.size(), rows.size());
                for (Row row : rows) {
                    ParquetFixtures.assertInt(
                            expected.get(row.index()).get("id"), row.fields().get("id"), "id");
                }
            }
        }
    }

    @Test
    void anUnknownColumnNamesItAndTheColumnsThatExist() throws IOException {
        try (TieredCache cache = cache()) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> ParquetDataset.of(cache, flatKeys(), "id", "label"));
            assertTrue(e.getMessage().contains("column 'label' of Parquet file 'pq/flat_"), e.getMessage());
            assertTrue(
                    e.getMessage()
                            .contains("(expected one of [id, big, f, d, s, b, flag, maybe_null, note, category])"),
                    e.getMessage());
        }
    }

    @Test
    void shardBlockEpochsDecodeEachRowGroupOncePerEpoch() throws IOException {
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = ParquetDataset.of(cache, flatKeys());
            ParquetFormat format = (ParquetFormat) dataset.format();
            try (DataLoader<Row> loader =
                    loader(dataset).shuffle(Shuffle.shardBlocks(7L, 2)).build()) {
                for (long epoch = 0; epoch < 2; epoch++) {
                    Set<String> seen = new HashSet<>();
                    for (Row row : ParquetFixtures.epoch(loader, epoch)) {
                        assertTrue(seen.add(row.key()), row.key());
                    }
                    assertEquals(dataset.size(), seen.size());
                    assertEquals((epoch + 1) * FLAT.size() * ROW_GROUPS, format.rowGroupsDecoded(), "epoch " + epoch);
                }
            }
        }
    }

    @Test
    void aPerSampleShuffleIsCorrectAndCostsADecodePerEvictedGroup() throws IOException {
        List<Map<String, Object>> expected = ParquetFixtures.expectedRows("expected-rows.json");
        try (TieredCache cache = cache()) {
            // Bound 0: only the row group being served is held, the worst case for a per-sample order.
            ShardedDataset dataset =
                    ParquetDataset.builder(cache, flatKeys()).decodedBytes(0).build();
            ParquetFormat format = (ParquetFormat) dataset.format();
            try (DataLoader<Row> loader =
                    loader(dataset).shuffle(Shuffle.samples(3L)).build()) {
                List<Row> rows = ParquetFixtures.epoch(loader, 0);
                assertEquals(dataset.size(), rows.size());
                for (Row row : rows) {
                    ParquetFixtures.assertFlatRow(expected.get(row.index() % ROWS), row.fields(), row.key());
                }
            }
            long decodes = format.rowGroupsDecoded();
            assertTrue(
                    decodes > 10L * FLAT.size() * ROW_GROUPS,
                    "a per-sample order over 25 row groups with none held decodes nearly once per row: " + decodes);
            assertTrue(decodes <= dataset.size(), decodes + " decodes for " + dataset.size() + " rows");
        }
    }

    @Test
    void stablePartitionsOverTwoRanksAreDisjointAndComplete() throws IOException {
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = ParquetDataset.of(cache, flatKeys(), "id", "s");
            Set<String> all = new HashSet<>();
            for (int rank = 0; rank < 2; rank++) {
                try (DataLoader<Row> loader = loader(dataset)
                        .shuffle(Shuffle.shardBlocks(11L, 2))
                        .shard(rank, 2, Partitioning.STABLE)
                        .build()) {
                    // A rank's part is whole files; the shorter part is padded by repeating its start (Sampler).
                    Set<String> mine = new HashSet<>();
                    for (Row row : ParquetFixtures.epoch(loader, 0)) {
                        mine.add(row.key());
                    }
                    for (String key : mine) {
                        assertTrue(all.add(key), "rank " + rank + " also reads " + key);
                    }
                    assertEquals(
                            mine,
                            new HashSet<>(ParquetFixtures.epoch(loader, 1).stream()
                                    .map(Row::key)
                                    .toList()),
                            "rank " + rank + " keeps its part in epoch 1");
                }
            }
            assertEquals(dataset.size(), all.size());
        }
    }

    @Test
    void anEpochResumedMidwayYieldsExactlyTheRest() throws IOException {
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = ParquetDataset.of(cache, flatKeys(), "id", "note");
            List<String> whole;
            try (DataLoader<Row> loader =
                    loader(dataset).shuffle(Shuffle.shardBlocks(5L, 2)).build()) {
                whole = ParquetFixtures.epoch(loader, 0).stream().map(Row::key).toList();
            }
            LoaderState state;
            List<String> first = new ArrayList<>();
            try (DataLoader<Row> loader =
                            loader(dataset).shuffle(Shuffle.shardBlocks(5L, 2)).build();
                    var epoch = loader.epoch(0)) {
                var batches = epoch.iterator();
                for (int b = 0; b < 40; b++) {
                    batches.next().items().forEach(r -> first.add(r.key()));
                }
                state = loader.state();
            }
            assertEquals(40, state.nextBatch());
            List<String> rest;
            try (DataLoader<Row> loader =
                    loader(dataset).shuffle(Shuffle.shardBlocks(5L, 2)).build()) {
                loader.resume(LoaderState.decode(state.encode()));
                rest = ParquetFixtures.epoch(loader, 0).stream().map(Row::key).toList();
            }
            List<String> joined = new ArrayList<>(first);
            joined.addAll(rest);
            assertEquals(whole, joined);
        }
    }

    @Test
    void theDryRunPredictsTheColdEpochsOriginRequests() throws IOException {
        try (TieredCache cache = cache()) {
            ShardedDataset dataset = ParquetDataset.of(cache, flatKeys(), "id", "d", "category");
            for (boolean stream : new boolean[] {true, false}) {
                try (TieredCache fresh = cache()) {
                    ShardedDataset cold = ParquetDataset.of(fresh, flatKeys(), "id", "d", "category");
                    try (DataLoader<Row> loader = loader(cold)
                            .shuffle(Shuffle.shardBlocks(9L, 2))
                            .streamShards(stream)
                            .build()) {
                        EpochPlan plan = loader.plan(1).epochs().getFirst();
                        CacheStats before = fresh.stats();
                        assertEquals(
                                cold.size(), ParquetFixtures.epoch(loader, 0).size());
                        CacheStats d = fresh.stats().minus(before);
                        assertEquals(plan.originReads(), d.origin().reads(), "stream " + stream + ": " + plan);
                        assertEquals(plan.originBytes(), d.origin().bytes(), "stream " + stream + ": " + plan);
                    }
                }
            }
            assertEquals(FLAT.size() * ROWS, dataset.size());
        }
    }

    @Test
    void theCookbookRecipeReadsEveryRow() throws IOException {
        try (TieredCache cache = cache()) {
            assertEquals((long) FLAT.size() * ROWS, dev.granary.examples.ParquetFiles.epoch(cache, flatKeys()));
        }
    }

    @Test
    void badArgumentsAreRefusedNamingThem() throws IOException {
        try (TieredCache cache = cache()) {
            assertThrows(IllegalArgumentException.class, () -> ParquetDataset.of(null, flatKeys()));
            assertThrows(IllegalArgumentException.class, () -> ParquetDataset.of(cache, List.of()));
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> ParquetDataset.of(cache, flatKeys(), "id", "id"));
            assertTrue(e.getMessage().contains("column 'id': given twice"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> ParquetDataset.of(cache, flatKeys(), " "));
            assertTrue(e.getMessage().contains("(expected: a column name)"), e.getMessage());
            e = assertThrows(
                    IllegalArgumentException.class,
                    () -> ParquetDataset.builder(cache, flatKeys()).decodedBytes(-1));
            assertTrue(e.getMessage().contains("decoded bytes: -1 (expected: >= 0)"), e.getMessage());
            assertThrows(
                    dev.granary.NoSuchObjectException.class,
                    () -> ParquetDataset.of(cache, List.of("pq/missing.parquet")));
        }
    }
}
