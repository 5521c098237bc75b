// SPDX-License-Identifier: Apache-2.0
package dev.granary.parquet;

import dev.granary.NoSuchObjectException;
import dev.granary.TieredCache;
import dev.granary.loader.CorruptShardException;
import dev.granary.loader.IndexingProgress;
import dev.granary.loader.ShardedDataset;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The rows of Parquet files, one sample per row, read through a {@link TieredCache} with Hardwood (no Hadoop): the
 * {@link ShardedDataset} of {@link ParquetFormat}, so every loader feature (shard-block orders, files read whole in
 * parts, stable partitions, resume, the dry run, pre-staging) applies, a file being a shard.
 *
 * {@snippet :
 * ShardedDataset rows = ParquetDataset.of(cache, List.of("features/part-0.parquet", "features/part-1.parquet"),
 *         "label", "embedding");                                    // the columns to read; none: all of them
 * DataLoader<Example> loader = DataLoader.builder(rows, sample -> {
 *     long label = sample.fields().get("label").order(ByteOrder.LITTLE_ENDIAN).getLong(0); // INT64
 *     ByteBuffer embedding = sample.fields().get("embedding");                              // BYTE_ARRAY, raw
 *     return new Example(label, embedding);
 * }).shuffle(Shuffle.shardBlocks(42L, 4)).build();
 * }
 *
 * <ul>
 *   <li><b>Indexing</b> reads each file's footer: its last 64 KiB through the cache, and one more range only for a
 *       longer footer. Nothing else of the file.</li>
 *   <li><b>Reads</b>: a row's extent is its row group's projected column chunks (one range), so unprojected columns
 *       are not read unless they lie between projected ones. A row group is decoded once for all its rows
 *       ({@link ParquetFormat} says how, and what a per-sample shuffle costs).</li>
 *   <li><b>Fields</b>: one per projected column, by name: INT32, INT64, FLOAT, DOUBLE little-endian; BOOLEAN one byte;
 *       BYTE_ARRAY (UTF-8 strings) and FIXED_LEN_BYTE_ARRAY raw; a NULL is an absent field. Nested columns and INT96
 *       are refused, naming the file and the column.</li>
 *   <li><b>Codecs</b>: UNCOMPRESSED, SNAPPY, GZIP and ZSTD; pages that do not decompress or decode are a
 *       {@link CorruptShardException} naming the file and the row group, never wrong values.</li>
 * </ul>
 *
 * <p>Stateless: the datasets it makes are immutable and thread-safe.
 */
public final class ParquetDataset {

    private ParquetDataset() {}

    /**
     * Indexes Parquet files (see the class comment).
     *
     * @param cache    the cache to read through
     * @param fileKeys the files' object keys, each once
     * @param columns  the top-level columns to read, each once; none for all of each file's columns
     * @return the dataset: one sample per row, file by file in the order given, then in file order
     * @throws IllegalArgumentException if the cache or list is null or empty, a key is invalid or repeated, a column
     *                                  is null, blank, repeated, missing from a file, nested or of type INT96, or
     *                                  the files hold no row
     * @throws CorruptShardException    if a file is not a valid Parquet file (names the file and what is wrong)
     * @throws NoSuchObjectException    if a file does not exist
     * @throws IOException              if the origin fails, or a file uses a codec that is not read
     */
    public static ShardedDataset of(TieredCache cache, List<String> fileKeys, String... columns) throws IOException {
        return builder(cache, fileKeys).columns(columns).build();
    }

    /**
     * {@return a builder for a dataset over Parquet files}: for a progress listener, or another bound on the decoded
     * row groups held
     *
     * @param cache    the cache to read through
     * @param fileKeys the files' object keys, each once
     */
    public static Builder builder(TieredCache cache, List<String> fileKeys) {
        return new Builder(cache, fileKeys);
    }

    /** Builds a {@link ParquetDataset}; not thread-safe. */
    public static final class Builder {
        private final TieredCache cache;
        private final List<String> fileKeys;
        private List<String> columns = List.of();
        private long decodedBytes = ParquetFormat.DEFAULT_DECODED_BYTES;
        private Consumer<IndexingProgress> listener = progress -> {};

        private Builder(TieredCache cache, List<String> fileKeys) {
            this.cache = cache;
            this.fileKeys = fileKeys;
        }

        /**
         * Reads only these top-level columns (default: all of each file's columns).
         *
         * @param columns the column names, each once; none for all
         * @return this builder
         * @throws IllegalArgumentException if the array or a name is null or blank, or a name is repeated
         */
        public Builder columns(String... columns) {
            if (columns == null) {
                throw new IllegalArgumentException("columns: null (expected: column names, or none for all)");
            }
            List<String> list = new ArrayList<>(columns.length);
            Set<String> seen = new HashSet<>();
            for (String column : columns) {
                if (column == null || column.isBlank()) {
                    throw new IllegalArgumentException(
                            "column: " + (column == null ? "null" : "'" + column + "'") + " (expected: a column name)");
                }
                if (!seen.add(column)) {
                    throw new IllegalArgumentException(
                            "column '" + column + "': given twice (expected: each column once)");
                }
                list.add(column);
            }
            this.columns = List.copyOf(list);
            return this;
        }

        /**
         * Bounds the bytes the format's decoded row groups may take at once (default 256 MiB). An order that moves
         * between more row groups than fit decodes a row group again for rows whose group was dropped.
         *
         * @param bytes {@code >= 0}; 0 keeps only the row group being served
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes < 0}
         */
        public Builder decodedBytes(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("decoded bytes: " + bytes + " (expected: >= 0)");
            }
            this.decodedBytes = bytes;
            return this;
        }

        /**
         * Reports each file as it is indexed.
         *
         * @param listener called once per file, never concurrently
         * @return this builder
         * @throws IllegalArgumentException if {@code listener} is null
         */
        public Builder listener(Consumer<IndexingProgress> listener) {
            if (listener == null) {
                throw new IllegalArgumentException("listener: null (expected: a Consumer of IndexingProgress)");
            }
            this.listener = listener;
            return this;
        }

        /**
         * Indexes the files' footers.
         *
         * @return the dataset
         * @throws IllegalArgumentException as {@link ParquetDataset#of}
         * @throws CorruptShardException    as {@link ParquetDataset#of}
         * @throws NoSuchObjectException    if a file does not exist
         * @throws IOException              as {@link ParquetDataset#of}
         */
        public ShardedDataset build() throws IOException {
            if (cache == null) {
                throw new IllegalArgumentException("cache: null (expected: a TieredCache)");
            }
            return ShardedDataset.of(cache, fileKeys, new ParquetFormat(cache, columns, decodedBytes), listener);
        }
    }
}
