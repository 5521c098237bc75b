// SPDX-License-Identifier: Apache-2.0
/**
 * Granary for DJL: {@link dev.granary.djl.GranaryDataset} is an {@code ai.djl.training.dataset.Dataset} backed by a
 * Granary {@link dev.granary.loader.DataLoader}, so DJL's trainer ({@code EasyTrain.fit},
 * {@code trainer.iterateDataset}) gets Granary's caching, read-ahead, seeded per-epoch shuffle,
 * {@code shard(rank, worldSize)} and exact resume.
 *
 * <h2>A tour</h2>
 * <ul>
 *   <li>{@link dev.granary.djl.GranaryDataset#builder(dev.granary.loader.Dataset, dev.granary.loader.Decoder)} takes
 *       the samples (a {@link dev.granary.loader.WebDataset} of tar shards, or one object per sample) and a decoder,
 *       and declares the batch's arrays: {@code data(shape, type, writer)} and {@code label(shape, type, writer)}.</li>
 *   <li>{@link dev.granary.djl.ArrayWriter} writes one item's values of one array into its slot of the batch, off the
 *       heap, on the loader's worker threads.</li>
 *   <li>{@code getData(manager)} is one Granary epoch; each call is the next one. {@code state()} and
 *       {@code resume(state)} put the position into the training checkpoint.</li>
 * </ul>
 *
 * <p>The copies a batch takes are listed in {@link dev.granary.djl.GranaryDataset}'s class documentation.
 */
package dev.granary.djl;
