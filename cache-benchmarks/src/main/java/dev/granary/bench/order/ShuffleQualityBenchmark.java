// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.order;

import dev.granary.bench.Options;
import dev.granary.loader.Sampler;
import dev.granary.loader.Shuffle;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * How well an epoch order mixes, for the global per-sample shuffle against shard blocks of several {@code k}, on a
 * dataset of {@code N} samples in shards of {@code S} consecutive samples (a {@code WebDataset} numbers samples shard
 * by shard). The metrics, averaged over {@code epochs} epochs of one rank ({@code W = 1}):
 * <ul>
 *   <li><b>distinct shards per batch</b> of {@code B} consecutive samples, and the same as a fraction of
 *       {@code min(B, shards)}: if each shard holds one class or source (the worst case: shards written in order),
 *       this bounds the classes in a batch; a global shuffle gives about {@code B} when shards are many.</li>
 *   <li><b>mean |i − j| of consecutive samples</b> (their distance in the dataset), over {@code N / 3} (the expected
 *       distance of two uniform random samples): 1.0 for a global shuffle; about {@code 1 − 1/k} for blocks of
 *       {@code k} randomly placed shards (two consecutive samples share a shard with probability about {@code 1/k},
 *       and are then less than {@code S} apart), so near 0 for {@code k = 1}.</li>
 *   <li><b>shard spread</b>: over all shards, the mean of (last position − first position of its samples in the
 *       epoch) / {@code N}; a global shuffle spreads a shard of {@code S} samples over about {@code (S − 1) / (S + 1)}
 *       of the epoch, shard blocks over about {@code k S / N}.</li>
 *   <li><b>epoch-to-epoch rank correlation</b> (Spearman) of the samples' positions in two consecutive epochs: near 0
 *       when every epoch is an independent order.</li>
 * </ul>
 *
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@shuffle-quality -Dquality.args="--samples=1000000"
 * </pre>
 * Options: {@code samples} (1 000 000), {@code shard-size} (1 000), {@code batch} (256), {@code epochs} (2). Prints a
 * Markdown table.
 */
public final class ShuffleQualityBenchmark {

    private ShuffleQualityBenchmark() {}

    /**
     * Runs the measurement.
     *
     * @param args {@code --name=value} options, see the class comment
     */
    public static void main(String[] args) {
        Locale.setDefault(Locale.ROOT);
        Map<String, Long> o =
                Options.parse(args, Map.of("samples", "1000000", "shard-size", "1000", "batch", "256", "epochs", "2"));
        int n = Math.toIntExact(o.get("samples"));
        int shardSize = Math.toIntExact(o.get("shard-size"));
        int batch = Math.toIntExact(o.get("batch"));
        int epochs = Math.toIntExact(o.get("epochs"));
        int shards = (n + shardSize - 1) / shardSize;
        int[] sizes = new int[shards];
        Arrays.fill(sizes, shardSize);
        sizes[shards - 1] = n - shardSize * (shards - 1);

        System.out.printf(
                "# Shuffle quality: N = %,d samples in %,d shards of %,d, batch %d, %d epochs, one rank;"
                        + " Java %s%n%n",
                n, shards, shardSize, batch, epochs + 1, Runtime.version());
        System.out.println("| order | distinct shards per batch (of min(B, shards)) | mean consecutive distance / (N/3)"
                + " | shard spread | rank correlation of consecutive epochs |");
        System.out.println("|---|---|---|---|---|");
        List<Shuffle> orders = new ArrayList<>();
        orders.add(Shuffle.samples(7));
        for (int k : new int[] {1, 2, 4, 8, 16, 64}) {
            if (k <= shards) {
                orders.add(Shuffle.shardBlocks(7, k));
            }
        }
        orders.add(Shuffle.none());
        for (Shuffle shuffle : orders) {
            Sampler sampler = Sampler.ofShards(sizes, shuffle);
            double distinct = 0;
            double distance = 0;
            double spread = 0;
            double correlation = 0;
            int[] previous = sampler.epoch(0);
            for (int e = 1; e <= epochs; e++) {
                int[] order = sampler.epoch(e);
                distinct += distinctShardsPerBatch(order, shardSize, batch);
                distance += meanConsecutiveDistance(order) / (n / 3.0);
                spread += shardSpread(order, shardSize, shards);
                correlation += spearman(previous, order);
                previous = order;
            }
            System.out.printf(
                    "| %s | %.1f (%.2f) | %.4f | %.4f | %.4f |%n",
                    shuffle,
                    distinct / epochs,
                    distinct / epochs / Math.min(batch, shards),
                    distance / epochs,
                    spread / epochs,
                    correlation / epochs);
        }
    }

    static double distinctShardsPerBatch(int[] order, int shardSize, int batch) {
        long total = 0;
        int batches = 0;
        int[] stamp = new int[order.length / shardSize + 2];
        for (int b = 0; b + batch <= order.length; b += batch) {
            batches++;
            for (int i = b; i < b + batch; i++) {
                int s = order[i] / shardSize;
                if (stamp[s] != batches) {
                    stamp[s] = batches;
                    total++;
                }
            }
        }
        return (double) total / batches;
    }

    static double meanConsecutiveDistance(int[] order) {
        double sum = 0;
        for (int i = 1; i < order.length; i++) {
            sum += Math.abs(order[i] - order[i - 1]);
        }
        return sum / (order.length - 1);
    }

    static double shardSpread(int[] order, int shardSize, int shards) {
        int[] first = new int[shards];
        int[] last = new int[shards];
        Arrays.fill(first, -1);
        for (int p = 0; p < order.length; p++) {
            int s = order[p] / shardSize;
            if (first[s] < 0) {
                first[s] = p;
            }
            last[s] = p;
        }
        double sum = 0;
        for (int s = 0; s < shards; s++) {
            sum += (double) (last[s] - first[s]) / order.length;
        }
        return sum / shards;
    }

    /** Spearman's rank correlation of each sample's position in two epochs (positions are ranks: no ties). */
    static double spearman(int[] a, int[] b) {
        int n = a.length;
        int[] posA = new int[n];
        int[] posB = new int[n];
        for (int p = 0; p < n; p++) {
            posA[a[p]] = p;
            posB[b[p]] = p;
        }
        double d2 = 0;
        for (int i = 0; i < n; i++) {
            double d = posA[i] - posB[i];
            d2 += d * d;
        }
        return 1 - 6 * d2 / ((double) n * ((double) n * n - 1));
    }
}
