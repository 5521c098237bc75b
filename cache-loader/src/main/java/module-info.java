// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's loader: turns a dataset ({@link dev.granary.loader.Dataset}, {@link dev.granary.loader.WebDataset}) and
 * a seeded {@link dev.granary.loader.Sampler} into batches ({@link dev.granary.loader.DataLoader}), driving the cache
 * so that its tiers keep a stable resident set across epochs.
 */
module dev.granary.loader {
    requires transitive dev.granary.core;
    // zstd shards (MDS .mds.zstd) only; optional: on the module path, add it with --add-modules (decision 0024)
    requires static com.github.luben.zstd_jni;

    exports dev.granary.loader;
}
