// SPDX-License-Identifier: Apache-2.0
package dev.granary.parquet;

import static dev.granary.parquet.ParquetFixtures.FLAT;
import static dev.granary.parquet.ParquetFixtures.ROW_GROUPS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.DataLoader;
import dev.granary.loader.ShardedDataset;
import dev.granary.loader.Shuffle;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an order costs in row-group decodes (docs/decisions/0025-parquet-on-hardwood.md prints these figures): a
 * shard-block order decodes each row group once per epoch; a per-sample order does too while the decoded groups fit
 * the bound, and up to once per row when they do not. Counts are asserted; CPU time is printed, not asserted.
 */
@Timeout(120)
class ParquetDecodeCostTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    @BeforeEach
    void copyFixtures() throws IOException {
        ParquetFixtures.copy(root);
    }

    private long[] run(Shuffle shuffle, long bound) throws IOException {
        try (TieredCache cache = ParquetFixtures.cache(leaks, root, 16L << 20)) {
            ShardedDataset dataset = ParquetDataset.builder(
                            cache, FLAT.stream().map(ParquetFixtures::key).toList())
                    .decodedBytes(bound)
                    .build();
            ParquetFormat format = (ParquetFormat) dataset.format();
            try (DataLoader<ParquetFixtures.Row> loader = DataLoader.builder(dataset, ParquetFixtures::copy)
                    .batchSize(16)
                    .workers(2)
                    .shuffle(shuffle)
                    .build()) {
                for (long e = 0; e < 3; e++) {
                    assertEquals(
                            dataset.size(), ParquetFixtures.epoch(loader, e).size());
                }
            }
            long[] out = {format.rowGroupsDecoded(), format.decodeNanos()};
            System.out.printf(
                    "decode cost: %-40s bound %11d B: %5d row-group decodes in 3 epochs of %d rows, %.1f ms decoding%n",
                    shuffle, bound, out[0], dataset.size(), out[1] / 1e6);
            return out;
        }
    }

    @Test
    void shardBlocksDecodeEachRowGroupOncePerEpochAPerSampleOrderUpToOncePerRow() throws IOException {
        long groups = 3L * FLAT.size() * ROW_GROUPS;
        assertEquals(groups, run(Shuffle.none(), ParquetFormat.DEFAULT_DECODED_BYTES)[0]);
        assertEquals(groups, run(Shuffle.shardBlocks(1L, 1), ParquetFormat.DEFAULT_DECODED_BYTES)[0]);
        assertEquals(groups, run(Shuffle.shardBlocks(1L, 2), ParquetFormat.DEFAULT_DECODED_BYTES)[0]);
        assertEquals(groups, run(Shuffle.samples(1L), ParquetFormat.DEFAULT_DECODED_BYTES)[0]);
        long oneFile = run(Shuffle.samples(1L), 40_000)[0];
        long none = run(Shuffle.samples(1L), 0)[0];
        assertTrue(groups < oneFile && oneFile < none, groups + " < " + oneFile + " < " + none);
    }
}
