// SPDX-License-Identifier: Apache-2.0
/**
 * The loader: what a training loop calls.
 *
 * <ul>
 *   <li>{@link dev.granary.loader.Dataset}: a fixed, ordered set of samples read through a {@code TieredCache} —
 *       one per object ({@code Dataset.ofObjects}, {@code Dataset.ofKeys}) or the samples inside WebDataset tar
 *       shards ({@link dev.granary.loader.WebDataset}).</li>
 *   <li>{@link dev.granary.loader.Sampler}: which samples a rank visits in each epoch, in what order, reproducibly
 *       from a seed.</li>
 *   <li>{@link dev.granary.loader.DataLoader}: reads ahead in that order, decodes on worker threads and hands
 *       {@link dev.granary.loader.Batch}es over through a bounded queue, epoch by
 *       {@link dev.granary.loader.Epoch}; {@link dev.granary.loader.LoaderStats} and a resumable
 *       {@link dev.granary.loader.LoaderState}.</li>
 * </ul>
 */
package dev.granary.loader;
