// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.time.Duration;
import java.util.function.Consumer;

/**
 * The options a {@link DataLoader.Builder} holds, as its setters left them: one component per option, a read-only
 * view for code that builds on the loader's builder — the DJL and DL4J adapters read the batch size from it to size
 * their staging buffers — and for checking what a loader was built with ({@link DataLoader#options()}). Defaults are
 * the builder's; options whose default is derived when the loader is built are {@code 0} until set (see each).
 * Immutable.
 *
 * <p>Every setter of {@link DataLoader.Builder} shows here: a test in {@code cache-loader} sets each to a non-default
 * value and fails if no component changes, and the adapters' tests check that each reaches their loader
 * (docs/decisions/0020-one-home-per-option.md).
 *
 * @param batchSize           samples per batch ({@link DataLoader.Builder#batchSize(int)})
 * @param shuffle             the order of every epoch ({@link DataLoader.Builder#shuffle(Shuffle)})
 * @param rank                this loader's rank ({@link DataLoader.Builder#shard(int, int, Partitioning)})
 * @param worldSize           the number of ranks
 * @param partitioning        how the ranks split the epochs
 * @param ranksPerNode        consecutive ranks sharing a node ({@link DataLoader.Builder#ranksPerNode(int)})
 * @param canonicalPartitions the canonical partitions of {@link Partitioning#STABLE}
 *                            ({@link DataLoader.Builder#canonicalPartitions(int)})
 * @param workers             decode threads ({@link DataLoader.Builder#workers(int)})
 * @param prefetch            batches started ahead of the trainer ({@link DataLoader.Builder#prefetch(int)})
 * @param readAhead           sample reads at once, {@code 0} when not set: then {@code batchSize × prefetch}, at most
 *                            1024 ({@link DataLoader.Builder#readAhead(int)})
 * @param maxBytesInFlight    the bound on bytes read and not yet decoded, {@code 0} when not set: then 256 MiB, and
 *                            the shard parts held are bounded by the cache's size
 *                            ({@link DataLoader.Builder#maxBytesInFlight(long)})
 * @param streamShards        whether shards may be read in parts ({@link DataLoader.Builder#streamShards(boolean)})
 * @param shardPartSize       the size of those parts ({@link DataLoader.Builder#shardPartSize(int)})
 * @param dropLast            whether the last partial batch is dropped ({@link DataLoader.Builder#dropLast(boolean)})
 * @param skipFailedSamples   whether failed samples are skipped and counted
 *                            ({@link DataLoader.Builder#skipFailedSamples(boolean)})
 * @param stagingBytes        the size of one staging buffer, {@code 0} for no staging
 *                            ({@link DataLoader.Builder#staging(long, Collator)})
 * @param pinnedStaging       whether the staging buffers are page-locked
 *                            ({@link DataLoader.Builder#pinnedStaging(boolean)})
 * @param driveCache          whether the loader drives its cache ({@link DataLoader.Builder#driveCache(boolean)})
 * @param starvationThreshold the data-wait share that raises the starvation alarm
 *                            ({@link DataLoader.Builder#starvationThreshold(double)})
 * @param starvationWindow    the window the data-wait share is measured over
 *                            ({@link DataLoader.Builder#starvationWindow(Duration)})
 * @param starvationListener  the listener of the starvation alarm, or {@code null} for none
 *                            ({@link DataLoader.Builder#starvationListener(Consumer)})
 */
public record LoaderOptions(
        int batchSize,
        Shuffle shuffle,
        int rank,
        int worldSize,
        Partitioning partitioning,
        int ranksPerNode,
        int canonicalPartitions,
        int workers,
        int prefetch,
        int readAhead,
        long maxBytesInFlight,
        boolean streamShards,
        int shardPartSize,
        boolean dropLast,
        boolean skipFailedSamples,
        long stagingBytes,
        boolean pinnedStaging,
        boolean driveCache,
        double starvationThreshold,
        Duration starvationWindow,
        Consumer<Starvation> starvationListener) {}
