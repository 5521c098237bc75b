/**
 * Granary's loader: turns a dataset and a seeded sampler into batches. So far the samplers
 * ({@link dev.granary.loader.Sampler}); the datasets and the {@code DataLoader} follow.
 */
module dev.granary.loader {
    requires transitive dev.granary.core;

    exports dev.granary.loader;
}
