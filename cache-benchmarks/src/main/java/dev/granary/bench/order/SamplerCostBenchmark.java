// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.order;

import com.sun.management.ThreadMXBean;
import dev.granary.bench.Options;
import dev.granary.loader.Partitioning;
import dev.granary.loader.Sampler;
import dev.granary.loader.Shuffle;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;

/**
 * What one rank pays per epoch to compute its order: wall time and bytes allocated on the calling thread, for the
 * previous sampler (a Fisher–Yates shuffle of all {@code N} indices on every rank, then the rank's strided part;
 * copied here, since the loader no longer has it) against the shipped {@link Sampler} for each shuffle and
 * partitioning. Every rank of the world is computed (so the figure is a per-rank median over all ranks and repeats)
 * and the parts are checked to cover the dataset.
 *
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@order-cost -Dorder.args="--samples=5000000 --ranks=8"
 * </pre>
 * Options: {@code samples} (5 000 000), {@code ranks} (8), {@code shard-size} (1 000 samples per shard for the shard
 * layouts), {@code block} (8 shards per block), {@code repeats} (3). Prints a Markdown table.
 */
public final class SamplerCostBenchmark {

    private static final long GAMMA = 0x9E3779B97F4A7C15L;

    private SamplerCostBenchmark() {}

    /**
     * Runs the measurement.
     *
     * @param args {@code --name=value} options, see the class comment
     */
    public static void main(String[] args) {
        Locale.setDefault(Locale.ROOT);
        Map<String, Long> o = Options.parse(
                args, Map.of("samples", "5000000", "ranks", "8", "shard-size", "1000", "block", "8", "repeats", "3"));
        int n = Math.toIntExact(o.get("samples"));
        int world = Math.toIntExact(o.get("ranks"));
        int shardSize = Math.toIntExact(o.get("shard-size"));
        int block = Math.toIntExact(o.get("block"));
        int repeats = Math.toIntExact(o.get("repeats"));
        int[] sizes = new int[(n + shardSize - 1) / shardSize];
        Arrays.fill(sizes, shardSize);
        sizes[sizes.length - 1] = n - shardSize * (sizes.length - 1);

        System.out.printf(
                "# Per-rank cost of one epoch's order: N = %,d samples, W = %d ranks (%d shards of %d for"
                        + " the shard layouts), median over %d repeats x %d ranks; Java %s%n%n",
                n, world, sizes.length, shardSize, repeats, world, Runtime.version());
        System.out.println("| order | per-rank time (ms) | per-rank bytes allocated | of which the rank's int[] |"
                + " ns per own index |");
        System.out.println("|---|---|---|---|---|");
        row(
                "previous: Fisher-Yates over N on every rank, strided part",
                n,
                world,
                repeats,
                rank -> previous(n, 42, 1, rank, world));
        Sampler samples = Sampler.shuffled(n, 42);
        row(
                "Shuffle.samples, PER_EPOCH",
                n,
                world,
                repeats,
                rank -> samples.shard(rank, world).epoch(1));
        row(
                "Shuffle.samples, STABLE",
                n,
                world,
                repeats,
                rank -> samples.shard(rank, world, Partitioning.STABLE).epoch(1));
        Sampler blocks = Sampler.ofShards(sizes, Shuffle.shardBlocks(42, block));
        row(
                "Shuffle.shardBlocks(k=" + block + "), PER_EPOCH",
                n,
                world,
                repeats,
                rank -> blocks.shard(rank, world).epoch(1));
        row(
                "Shuffle.shardBlocks(k=" + block + "), STABLE",
                n,
                world,
                repeats,
                rank -> blocks.shard(rank, world, Partitioning.STABLE).epoch(1));
        Sampler shardSamples = Sampler.ofShards(sizes, Shuffle.samples(42));
        row(
                "Shuffle.samples over shards, STABLE (one block per node)",
                n,
                world,
                repeats,
                rank -> shardSamples.shard(rank, world, Partitioning.STABLE).epoch(1));
    }

    @FunctionalInterface
    private interface RankOrder {
        int[] compute(int rank);
    }

    private static void row(String name, int n, int world, int repeats, RankOrder order) {
        ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().threadId();
        order.compute(0); // warm up: class loading and the first JIT tiers
        long[] nanos = new long[repeats * world];
        long[] bytes = new long[repeats * world];
        long own = 0;
        for (int r = 0; r < repeats; r++) {
            boolean[] seen = new boolean[n];
            for (int rank = 0; rank < world; rank++) {
                long b0 = threads.getThreadAllocatedBytes(tid);
                long t0 = System.nanoTime();
                int[] part = order.compute(rank);
                nanos[r * world + rank] = System.nanoTime() - t0;
                bytes[r * world + rank] = threads.getThreadAllocatedBytes(tid) - b0;
                own = 16 + 4L * part.length;
                for (int i : part) {
                    seen[i] = true;
                }
            }
            for (int i = 0; i < n; i++) {
                if (!seen[i]) {
                    throw new IllegalStateException(name + ": sample " + i + " not covered");
                }
            }
        }
        Arrays.sort(nanos);
        Arrays.sort(bytes);
        long medianNanos = nanos[nanos.length / 2];
        long perRank = ((long) n + world - 1) / world;
        System.out.printf(
                "| %s | %.1f | %,d | %,d | %.1f |%n",
                name, medianNanos / 1e6, bytes[bytes.length / 2], own, (double) medianNanos / perRank);
    }

    /** The sampler Granary shipped before decision 0006: Fisher–Yates over all N, then rank's strided part. */
    static int[] previous(int n, long seed, long epoch, int rank, int world) {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        long state = mix(seed + GAMMA * (epoch + 1));
        for (int i = n - 1; i > 0; i--) {
            long bound = i + 1L;
            long product;
            long threshold = (-bound & 0xFFFFFFFFL) % bound;
            do {
                state += GAMMA;
                long r = mix(state) >>> 32;
                product = r * bound;
            } while ((product & 0xFFFFFFFFL) < threshold);
            int j = (int) (product >>> 32);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        int perRank = (n + world - 1) / world;
        int[] part = new int[perRank];
        for (int k = 0; k < perRank; k++) {
            long p = rank + (long) k * world;
            part[k] = order[(int) (p < n ? p : p - n)];
        }
        return part;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
