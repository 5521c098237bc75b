// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j;

import dev.granary.loader.Sample;

/**
 * Turns one sample into a row of features and a row of labels for a {@link GranaryDataSetIterator}: the only code a
 * user writes to train DL4J from a Granary dataset. For Fashion-MNIST packed as WebDataset (field {@code raw}: 784
 * grey bytes; field {@code cls}: the class as ASCII digits):
 *
 * {@snippet :
 * SampleEncoder encoder = (sample, features, labels) -> {
 *     ByteBuffer raw = sample.fields().get("raw");
 *     for (int i = 0; i < features.length; i++) {
 *         features[i] = raw.get(i) & 0xFF;                    // 0..255; a pre-processor scales it
 *     }
 *     labels[Integer.parseInt(StandardCharsets.US_ASCII.decode(sample.fields().get("cls")).toString())] = 1f;
 * };
 * }
 *
 * <p>Runs on the loader's worker threads, several samples at once: it must be thread-safe. The sample's buffers are
 * read-only views of cached memory, valid only during the call; the arrays are the sample's own, freshly allocated
 * and zero-filled, and the encoder keeps no reference to them after it returns.
 */
@FunctionalInterface
public interface SampleEncoder {

    /**
     * Writes one sample's features and label.
     *
     * @param sample   the sample: its key, dataset index and bytes ({@link Sample#bytes()} for a sample that is one
     *                 object, {@link Sample#fields()} for a WebDataset sample)
     * @param features {@link GranaryDataSetIterator#inputColumns()} zeros to fill, in the row-major order of the
     *                 iterator's feature shape
     * @param labels   {@link GranaryDataSetIterator#totalOutcomes()} zeros to fill: a one-hot class, or regression
     *                 targets
     * @throws Exception if the sample cannot be encoded: its batch fails with a
     *                   {@link dev.granary.loader.SampleException} naming the sample's key and this cause
     */
    void encode(Sample sample, float[] features, float[] labels) throws Exception;
}
