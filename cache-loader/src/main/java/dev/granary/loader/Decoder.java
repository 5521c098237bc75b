// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/**
 * Turns a {@link Sample}'s bytes into what the trainer consumes (a decoded image and label, a tensor, a record). Runs
 * on the loader's worker threads, several samples at once: it must be thread-safe, and it must copy whatever it keeps
 * of the sample's buffers, which are released when it returns.
 *
 * @param <T> the decoded type
 */
@FunctionalInterface
public interface Decoder<T> {

    /**
     * Decodes one sample.
     *
     * @param sample the sample; its buffers are valid only during this call
     * @return the decoded item, not null
     * @throws Exception if the sample cannot be decoded: its batch fails with the sample's key and this cause (or the
     *                   sample is skipped and counted, with {@link DataLoader.Builder#skipFailedSamples(boolean)})
     */
    T decode(Sample sample) throws Exception;
}
