// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.ShardedDataset;
import dev.granary.loader.Shuffle;
import dev.granary.parquet.ParquetDataset;
import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Parquet files as a loader dataset: one sample per row, the projected columns as fields, row groups decoded once
 * per epoch under the shard-block shuffle.
 */
public final class ParquetFiles {

    private ParquetFiles() {}

    /** One row's label and text. */
    public record Row(int id, String category) {}

    /** Reads one epoch of the files' {@code id} and {@code category} columns; returns the rows read. */
    public static long epoch(TieredCache cache, List<String> files) throws IOException {
        ShardedDataset rows = ParquetDataset.of(cache, files, "id", "category"); // reads each file's footer
        long n = 0;
        try (DataLoader<Row> loader = DataLoader.builder(
                                rows,
                                sample -> new Row(
                                        sample.fields()
                                                .get("id")
                                                .order(ByteOrder.LITTLE_ENDIAN)
                                                .getInt(0), // INT32
                                        StandardCharsets.UTF_8
                                                .decode(sample.fields().get("category")) // a string: UTF-8 bytes
                                                .toString()))
                        .batchSize(32)
                        .shuffle(Shuffle.shardBlocks(42L, 2)) // 2 files at a time: each row group decoded once
                        .build();
                Epoch<Row> epoch = loader.epoch(0)) {
            for (Batch<Row> batch : epoch) {
                n += batch.size();
            }
        }
        return n;
    }
}
