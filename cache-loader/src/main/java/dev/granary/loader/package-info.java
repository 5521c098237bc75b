/**
 * The loader. Today: {@link dev.granary.loader.Sampler} — which samples a rank visits in each epoch, and in what
 * order, reproducibly from a seed. The datasets ({@code Dataset.ofObjects}, {@code WebDataset}) and the prefetching
 * {@code DataLoader} that drive a {@code TieredCache} with that order are being built on it.
 */
package dev.granary.loader;
