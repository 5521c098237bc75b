// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/**
 * What an epoch of a {@link DataLoader} needs to know of its configuration, fixed when the loader is built: an
 * {@link EpochRun} reads these and nothing else of the loader.
 *
 * @param dataset          the samples
 * @param decoder          turns a sample into the trainer's item; runs on worker threads
 * @param batchSize        samples per batch, {@code >= 1}
 * @param prefetch         batches started ahead of the trainer, {@code >= 1}
 * @param readAhead        sample reads in flight at once, {@code >= 1}
 * @param maxBytesInFlight bytes read and not yet decoded, {@code >= 1}
 * @param streamBudget     bytes of shard parts an epoch may hold when it reads its shards in parts, {@code >= 1}: it
 *                         decides which orders stream ({@link StreamPlan}) and bounds the parts held
 * @param skipFailed       whether failed samples are skipped (and counted) instead of failing their batch
 * @param collator         packs a batch into a staging buffer, or {@code null} for no staging
 * @param streamShards     whether an epoch over a {@link WebDataset} may read its shards in parts when its order
 *                         allows ({@link StreamPlan}); the parts held count against {@code streamBudget}
 * @param partSize         the size of those parts, {@code >= ShardParts.MIN_PART_SIZE}
 * @param <T>              the decoded type
 */
record LoaderSettings<T>(
        Dataset dataset,
        Decoder<T> decoder,
        int batchSize,
        int prefetch,
        int readAhead,
        long maxBytesInFlight,
        long streamBudget,
        boolean skipFailed,
        Collator<T> collator,
        boolean streamShards,
        int partSize) {

    /** Checks the invariants the builder already enforced (a bug here is Granary's, not the user's). */
    LoaderSettings {
        if (dataset == null
                || decoder == null
                || batchSize < 1
                || prefetch < 1
                || readAhead < 1
                || maxBytesInFlight < 1
                || streamBudget < 1
                || partSize < ShardParts.MIN_PART_SIZE) {
            throw new IllegalStateException("loader settings: dataset=" + dataset + ", batchSize=" + batchSize
                    + ", prefetch=" + prefetch + ", readAhead=" + readAhead + ", maxBytesInFlight=" + maxBytesInFlight
                    + ", streamBudget=" + streamBudget
                    + ", partSize=" + partSize + " (expected: a dataset and a decoder, every count >= 1, parts of"
                    + " at least " + ShardParts.MIN_PART_SIZE + " bytes)");
        }
    }
}
