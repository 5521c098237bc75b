// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's Parquet datasets: {@link dev.granary.parquet.ParquetDataset} reads Parquet files through a
 * {@link dev.granary.TieredCache} as a loader dataset, one sample per row, with Hardwood (no Hadoop) decoding the row
 * groups. Its own module so that {@code cache-loader} needs no third-party reader.
 */
module dev.granary.parquet {
    requires transitive dev.granary.loader;
    requires dev.hardwood.core; // an automatic module (its manifest names it)

    exports dev.granary.parquet;
}
