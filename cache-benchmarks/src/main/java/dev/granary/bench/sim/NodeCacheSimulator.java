// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import dev.granary.loader.Partitioning;
import dev.granary.loader.Sampler;
import dev.granary.loader.Shuffle;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.StringJoiner;

/**
 * Per-node cache hit ratios of a data-parallel job: {@code W} nodes, each with a cache of its own of {@code C} items —
 * the shipped code, a {@link GranarySubject} per node (real {@code TieredCache} over a real {@code MemoryTier} of
 * {@code C/3} items' bytes and a real {@code DiskTier} of the rest, driven by an {@code EpochDriver}) — each read in
 * the order the shipped {@link Sampler} gives that node: {@code Sampler.of(N, shuffle)} (one object per sample) or
 * {@code Sampler.ofShards(sizes, shuffle)} (shards of {@code --shard-size} samples), then
 * {@code shard(rank, W·g, partitioning, g, P)} for each of the node's {@code g} ranks, their orders interleaved as
 * the ranks would read them at the same pace.
 *
 * <p>For each {@code W}, each {@code C·W/N} of {@code --fractions}, and each order (samples or shard blocks of
 * {@code --block}, split PER_EPOCH or STABLE), it prints the steady-state hit ratio over all nodes (hits / accesses in
 * epochs {@code 1 … E − 1}), the worst node's, the tiers' measured capacity {@code C'} in items (record and segment
 * headers, whole segments: see {@link GranarySubject}), the ideal {@code min(1, C'·W/N)} — a node's cache holds at most
 * {@code C'} of the {@code N/W} samples it reads — and the ratio of the two. Accesses include the padding that
 * equalises the ranks' steps (a node's repeats of its own samples).
 *
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@simulate-nodes
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@simulate-nodes -Dnodes.args="--items=20000 --nodes=1,2,8,32"
 * </pre>
 * Options ({@code --name=value}): {@code items} (20 000), {@code epochs} (4, at least 2), {@code seed} (1),
 * {@code nodes} ({@code 1,2,8,32}), {@code fractions} ({@code 0.5}: each {@code C·W/N}; {@code 0.5,1} doubles the
 * run, ~10 minutes on a loaded 2-core machine), {@code shard-size} (20),
 * {@code block} (4 shards), {@code ranks-per-node} (1), {@code partitions} (960). Exit status 0, or 2 for bad
 * arguments.
 */
public final class NodeCacheSimulator {

    private NodeCacheSimulator() {}

    /** One order as the table lists it. */
    record Order(String name, Shuffle shuffle, boolean shards, Partitioning partitioning) {}

    /**
     * What one order did on one world.
     *
     * @param hits     steady-state hits over all nodes
     * @param accesses steady-state accesses over all nodes
     * @param worst    the lowest node's steady-state hit ratio
     * @param ceiling  the tiers' measured capacity in items (the same settings on every node: the smallest)
     */
    record Outcome(long hits, long accesses, double worst, int ceiling) {
        double ratio() {
            return (double) hits / accesses;
        }
    }

    /**
     * Runs the simulation.
     *
     * @param args options, see the class comment
     */
    public static void main(String[] args) throws IOException {
        Locale.setDefault(Locale.ROOT);
        Settings s;
        try {
            s = Settings.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("granary simulate-nodes: " + e.getMessage());
            System.exit(2);
            return;
        }
        long t0 = System.nanoTime();
        int[] sizes = new int[(s.items + s.shardSize - 1) / s.shardSize];
        Arrays.fill(sizes, s.shardSize);
        sizes[sizes.length - 1] = s.items - s.shardSize * (sizes.length - 1);
        List<Order> orders = List.of(
                new Order("samples, PER_EPOCH", Shuffle.samples(s.seed), false, Partitioning.PER_EPOCH),
                new Order("samples, STABLE", Shuffle.samples(s.seed), false, Partitioning.STABLE),
                new Order(
                        "shard blocks k=" + s.block + ", PER_EPOCH",
                        Shuffle.shardBlocks(s.seed, s.block),
                        true,
                        Partitioning.PER_EPOCH),
                new Order(
                        "shard blocks k=" + s.block + ", STABLE",
                        Shuffle.shardBlocks(s.seed, s.block),
                        true,
                        Partitioning.STABLE));
        System.out.printf(
                "# Per-node caches: N = %d items (1 KiB), %d epochs (steady state = 1..%d), shards of %d,"
                        + " %d rank(s) per node, %d canonical partitions; cell = steady-state hit ratio over all"
                        + " nodes%n%n",
                s.items, s.epochs, s.epochs - 1, s.shardSize, s.ranksPerNode, s.partitions);
        System.out.println("| W nodes | C·W/N | C per node (measured C') | order | hit ratio | worst node |"
                + " ideal min(1, C'·W/N) | hit ÷ ideal |");
        System.out.println("|---|---|---|---|---|---|---|---|");
        for (int w : s.nodes) {
            for (double f : s.fractions) {
                int capacity = (int) Math.round(f * s.items / w);
                for (Order order : orders) {
                    Sampler base = order.shards()
                            ? Sampler.ofShards(sizes, order.shuffle())
                            : Sampler.of(s.items, order.shuffle());
                    Outcome o = run(base, order.partitioning(), w, s, capacity);
                    double ideal = Math.min(1, (double) o.ceiling() * w / s.items);
                    System.out.printf(
                            "| %d | %.2f | %d (%d) | %s | %.3f | %.3f | %.3f | %.3f |%n",
                            w, f, capacity, o.ceiling(), order.name(), o.ratio(), o.worst(), ideal, o.ratio() / ideal);
                }
            }
        }
        System.out.printf(
                "%ntime: %.1f s; Java %s%ncommand: ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package"
                        + " exec:exec@simulate-nodes -Dnodes.args=\"%s\"%n",
                (System.nanoTime() - t0) / 1e9, Runtime.version(), s.toArgs());
    }

    /** Replays every node of a world of {@code w} nodes against a cache of its own. */
    static Outcome run(Sampler base, Partitioning partitioning, int w, Settings s, int capacity) throws IOException {
        long hits = 0;
        long accesses = 0;
        double worst = 1;
        int ceiling = Integer.MAX_VALUE;
        int g = s.ranksPerNode;
        for (int node = 0; node < w; node++) {
            int[][] trace = new int[s.epochs][];
            for (int e = 0; e < s.epochs; e++) {
                trace[e] = nodeOrder(base, partitioning, w, g, s.partitions, node, e);
            }
            try (GranarySubject subject = GranarySubject.splitThirds(capacity, trace, false)) {
                ceiling = Math.min(ceiling, subject.ceilingItems());
                long[] perEpoch = Trace.replay(subject, trace);
                long nodeHits = 0;
                long nodeAccesses = 0;
                for (int e = 1; e < s.epochs; e++) {
                    nodeHits += perEpoch[e];
                    nodeAccesses += trace[e].length;
                }
                hits += nodeHits;
                accesses += nodeAccesses;
                worst = Math.min(worst, (double) nodeHits / nodeAccesses);
            }
        }
        return new Outcome(hits, accesses, worst, ceiling);
    }

    /** {@return node {@code node}'s reads of epoch {@code e}: its ranks' orders, interleaved step by step} */
    static int[] nodeOrder(Sampler base, Partitioning partitioning, int w, int g, int partitions, int node, int e) {
        int[][] ranks = new int[g][];
        for (int l = 0; l < g; l++) {
            Sampler rank = w * g == 1 && partitioning == Partitioning.PER_EPOCH
                    ? base
                    : base.shard(node * g + l, w * g, partitioning, g, partitions);
            ranks[l] = rank.epoch(e);
        }
        int length = ranks[0].length;
        int[] order = new int[length * g];
        for (int j = 0; j < length; j++) {
            for (int l = 0; l < g; l++) {
                order[j * g + l] = ranks[l][j];
            }
        }
        return order;
    }

    /** The options, validated. */
    record Settings(
            int items,
            int epochs,
            long seed,
            int[] nodes,
            double[] fractions,
            int shardSize,
            int block,
            int ranksPerNode,
            int partitions) {

        static Settings parse(String[] args) {
            String items = "20000";
            String epochs = "4";
            String seed = "1";
            String nodes = "1,2,8,32";
            String fractions = "0.5";
            String shardSize = "20";
            String block = "4";
            String ranksPerNode = "1";
            String partitions = "960";
            for (String arg : args) {
                if (arg.isBlank()) {
                    continue;
                }
                int eq = arg.indexOf('=');
                String name = arg.startsWith("--") && eq > 2 ? arg.substring(2, eq) : "";
                String value = arg.substring(eq + 1);
                switch (name) {
                    case "items" -> items = value;
                    case "epochs" -> epochs = value;
                    case "seed" -> seed = value;
                    case "nodes" -> nodes = value;
                    case "fractions" -> fractions = value;
                    case "shard-size" -> shardSize = value;
                    case "block" -> block = value;
                    case "ranks-per-node" -> ranksPerNode = value;
                    case "partitions" -> partitions = value;
                    default ->
                        throw new IllegalArgumentException("argument: '" + arg + "' (expected: --items=N,"
                                + " --epochs=E, --seed=S, --nodes=W,W,..., --fractions=F,F,..., --shard-size=S,"
                                + " --block=K, --ranks-per-node=G or --partitions=P)");
                }
            }
            List<Integer> w = new ArrayList<>();
            for (String x : nodes.split(",")) {
                w.add(positive(x, "nodes"));
            }
            List<Double> f = new ArrayList<>();
            for (String x : fractions.split(",")) {
                try {
                    double v = Double.parseDouble(x.strip());
                    Config.require(v > 0 && v <= 1, "fraction: " + x + " (expected: 0 < C·W/N <= 1)");
                    f.add(v);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("fraction: '" + x + "' (expected: a number in (0, 1])", e);
                }
            }
            Settings s = new Settings(
                    positive(items, "items"),
                    positive(epochs, "epochs"),
                    Long.parseLong(seed.strip()),
                    w.stream().mapToInt(Integer::intValue).toArray(),
                    f.stream().mapToDouble(Double::doubleValue).toArray(),
                    positive(shardSize, "shard-size"),
                    positive(block, "block"),
                    positive(ranksPerNode, "ranks-per-node"),
                    positive(partitions, "partitions"));
            Config.require(s.epochs >= 2, "epochs: " + s.epochs + " (expected: >= 2; epoch 0 is cold)");
            return s;
        }

        String toArgs() {
            StringJoiner w = new StringJoiner(",");
            Arrays.stream(nodes).forEach(x -> w.add(Integer.toString(x)));
            StringJoiner f = new StringJoiner(",");
            Arrays.stream(fractions).forEach(x -> f.add(Double.toString(x)));
            return "--items=" + items + " --epochs=" + epochs + " --seed=" + seed + " --nodes=" + w + " --fractions="
                    + f + " --shard-size=" + shardSize + " --block=" + block + " --ranks-per-node=" + ranksPerNode
                    + " --partitions=" + partitions;
        }

        private static int positive(String value, String name) {
            try {
                int v = Integer.parseInt(value.strip().replace("_", ""));
                Config.require(v >= 1, name + ": " + value + " (expected: an integer >= 1)");
                return v;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(name + ": '" + value + "' (expected: an integer >= 1)", e);
            }
        }
    }
}
