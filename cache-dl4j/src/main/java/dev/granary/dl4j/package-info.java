// SPDX-License-Identifier: Apache-2.0
/**
 * Granary for DL4J.
 *
 * <ul>
 *   <li>{@link dev.granary.dl4j.GranaryDataSetIterator}: an ND4J {@code DataSetIterator} over a Granary
 *       {@code Dataset} — what {@code MultiLayerNetwork.fit} and {@code evaluate} iterate. A Granary
 *       {@code DataLoader} underneath reads ahead through the tiered cache, shuffles each epoch from a seed, shards
 *       over ranks, and resumes from a {@code LoaderState}; {@code reset()} moves to the next epoch.</li>
 *   <li>{@link dev.granary.dl4j.SampleEncoder}: the user's part — one sample's bytes to a row of features and a row
 *       of labels.</li>
 * </ul>
 *
 * <p>Batches are collated off-heap by the loader's worker threads and copied once into ND4J memory on the trainer's
 * thread; the iterator's class comment lists every copy. docs/guide-dl4j.md walks through a complete example.
 */
package dev.granary.dl4j;
