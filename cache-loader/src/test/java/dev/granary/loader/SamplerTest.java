// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;

/**
 * The epoch orders: pinned vectors, a model of the documented rule, exactly-once coverage over every combination,
 * stable and elastic partitions, and bad arguments.
 */
@Timeout(120)
class SamplerTest {

    private static final int[] SHARDS = {5, 0, 9, 3, 12, 7, 1, 8, 8, 4, 11, 2, 6}; // 76 samples, an empty shard

    private static void assertPermutation(int[] order, int n, String what) {
        assertEquals(n, order.length, what);
        boolean[] seen = new boolean[n];
        for (int i : order) {
            assertTrue(i >= 0 && i < n, what + ": index " + i);
            assertFalse(seen[i], what + ": index " + i + " twice");
            seen[i] = true;
        }
    }

    // ------------------------------------------------------------------------------------------- pinned vectors

    @Test
    void theMixerIsSplitMix64() {
        // splitmix64 seeded with 0: its first three outputs, as published with the algorithm.
        long gamma = 0x9E3779B97F4A7C15L;
        assertEquals(0xE220A8397B1DCDAFL, KeyedPermutation.mix(gamma));
        assertEquals(0x6E789E6AA1B965F4L, KeyedPermutation.mix(2 * gamma));
        assertEquals(0x06C45D188009454FL, KeyedPermutation.mix(3 * gamma));
    }

    @Test
    void theAlgorithmIsPinned() {
        // Vectors from an independent Python implementation of the Javadoc (Sampler, KeyedPermutation), written
        // when the algorithm was pinned (decision 0006); a change here breaks every user's reproducibility and resume.
        assertArrayEquals(
                new int[] {3, 9, 1, 2, 8, 6, 5, 4, 7, 0},
                Sampler.shuffled(10, 42).epoch(0));
        assertArrayEquals(
                new int[] {1, 3, 6, 5, 8, 0, 4, 7, 2, 9},
                Sampler.shuffled(10, 42).epoch(1));
        assertArrayEquals(
                new int[] {9, 17, 6, 0, 19, 3, 14},
                Sampler.shuffled(20, 5).shard(1, 3).epoch(2));
        assertArrayEquals(
                new int[] {0, 1, 2, 6, 4, 5, 8, 7, 3, 11, 10, 9, 12, 13},
                Sampler.ofShards(new int[] {3, 0, 4, 2, 5}, Shuffle.shardBlocks(7, 2))
                        .epoch(0));
        Sampler stable = Sampler.shuffled(20, 3);
        assertArrayEquals(
                new int[] {0, 19, 15, 6, 1, 5, 16, 14, 10, 8},
                stable.shard(0, 2, Partitioning.STABLE, 1, 4).epoch(1));
        assertArrayEquals(
                new int[] {7, 2, 11, 13, 12, 9, 18, 17, 4, 3},
                stable.shard(1, 2, Partitioning.STABLE, 1, 4).epoch(1));
        // At 2^16 and above the Feistel network takes over from the table.
        int[] big = Sampler.shuffled(100_000, 42).epoch(0);
        assertArrayEquals(
                new int[] {24795, 73732, 35954, 1177, 10002, 11894, 86681, 51162}, Arrays.copyOfRange(big, 0, 8));
        assertArrayEquals(new int[] {13847, 82754, 24050, 40251}, Arrays.copyOfRange(big, 99_996, 100_000));
    }

    @Test
    void theOrderIsTheSameInAnotherJvm() throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process child = new ProcessBuilder(
                        java,
                        "-cp",
                        System.getProperty("java.class.path"),
                        SamplerOrderMain.class.getName(),
                        "1000",
                        "99",
                        "2",
                        "1",
                        "3")
                .redirectErrorStream(true)
                .start();
        String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(child.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, child.exitValue(), out);
        assertEquals(
                Arrays.toString(Sampler.shuffled(1000, 99).shard(1, 3).epoch(2)) + "\n"
                        + Arrays.toString(Sampler.ofShards(SamplerOrderMain.SHARDS, Shuffle.shardBlocks(99, 3))
                                .shard(1, 3, Partitioning.STABLE, 1, 960)
                                .epoch(2)),
                out.replace("\r", ""));
    }

    // ------------------------------------------------------------------------------------ the Feistel bijection

    @Test
    void feistelIsABijectionOnEveryDomain() {
        for (long n : new long[] {1, 2, 3, 255, 256, 257, 1000, 65_535, 65_536, 65_537, 100_003}) {
            KeyedPermutation p = new KeyedPermutation(n, n * 31);
            boolean[] seen = new boolean[(int) n];
            for (long x = 0; x < n; x++) {
                long y = p.apply(x);
                assertTrue(y >= 0 && y < n && !seen[(int) y], "n " + n + ": " + x + " -> " + y);
                seen[(int) y] = true;
            }
        }
        KeyedPermutation big = new KeyedPermutation(1L << 40, 5); // past int: the design's domain is long
        long y = big.apply((1L << 40) - 1);
        assertTrue(y >= 0 && y < 1L << 40);
        assertThrows(IndexOutOfBoundsException.class, () -> big.apply(1L << 40));
    }

    @Test
    void permutationsAreUniform() {
        Map<String, Integer> counts = new HashMap<>();
        int trials = 60_000;
        for (int seed = 0; seed < trials; seed++) {
            counts.merge(Arrays.toString(Sampler.shuffled(3, seed).epoch(0)), 1, Integer::sum);
        }
        assertEquals(6, counts.size(), counts.toString());
        double expected = trials / 6.0;
        double chiSquare = 0;
        for (int c : counts.values()) {
            chiSquare += (c - expected) * (c - expected) / expected;
        }
        assertTrue(chiSquare < 25, "chi-square " + chiSquare + " over 5 degrees of freedom: " + counts); // p < 1e-4
    }

    @Test
    void positionsAreUniformOnALargerDomain() {
        // Where sample 0 lands, over many seeds: uniform over 10 buckets of a 1000-sample epoch.
        int[] buckets = new int[10];
        int trials = 20_000;
        for (int seed = 0; seed < trials; seed++) {
            int[] order = Sampler.shuffled(1000, seed).epoch(0);
            for (int p = 0; p < order.length; p++) {
                if (order[p] == 0) {
                    buckets[p / 100]++;
                }
            }
        }
        double expected = trials / 10.0;
        double chi = Arrays.stream(buckets)
                .mapToDouble(c -> (c - expected) * (c - expected) / expected)
                .sum();
        assertTrue(chi < 33, "chi-square " + chi + " over 9 degrees of freedom: " + Arrays.toString(buckets));
    }

    @Test
    void theFeistelRegimeIsUniformToo() {
        // Above 2^16: where index 0, and index n - 1, land over 40 000 keys, in 16 buckets; and pairs of neighbours
        // (x, x + 1) land in independent buckets (a 4 x 4 contingency table).
        int n = 100_003;
        int keys = 40_000;
        int[] first = new int[16];
        int[] last = new int[16];
        int[][] pairs = new int[4][4];
        for (int k = 0; k < keys; k++) {
            KeyedPermutation p = new KeyedPermutation(n, KeyedPermutation.combine(k, 99));
            first[(int) (p.apply(0) * 16 / n)]++;
            last[(int) (p.apply(n - 1) * 16 / n)]++;
            pairs[(int) (p.apply(500) * 4 / n)][(int) (p.apply(501) * 4 / n)]++;
        }
        double expected = keys / 16.0;
        for (int[] buckets : new int[][] {
            first, last, Arrays.stream(pairs).flatMapToInt(Arrays::stream).toArray()
        }) {
            double chi = Arrays.stream(buckets)
                    .mapToDouble(c -> (c - expected) * (c - expected) / expected)
                    .sum();
            assertTrue(chi < 45, "chi-square " + chi + " over 15 degrees of freedom: " + Arrays.toString(buckets));
        }
    }

    // --------------------------------------------------------------------------------- coverage and the model

    private static List<Shuffle> shuffles() {
        return List.of(
                Shuffle.none(),
                Shuffle.samples(11),
                Shuffle.shardBlocks(11, 1),
                Shuffle.shardBlocks(11, 3),
                Shuffle.shardBlocks(11, 100));
    }

    private static Sampler base(Shuffle shuffle, boolean shards, int[] sizes) {
        return shards
                ? Sampler.ofShards(sizes, shuffle)
                : Sampler.of(Arrays.stream(sizes).sum(), shuffle);
    }

    /**
     * Every combination: each rank yields the same count, the parts cover every sample, and the only repeats are the
     * padding the rule allows; each rank's part equals the model's.
     */
    @Test
    void everySampleExactlyOncePerEpochAcrossAllRanks() {
        int checked = 0;
        for (int[] sizes : List.of(SHARDS, new int[] {40, 1, 1, 1, 20}, new int[] {7})) {
            int n = Arrays.stream(sizes).sum();
            for (Shuffle shuffle : shuffles()) {
                for (boolean shards : new boolean[] {false, true}) {
                    if (!shards && shuffle.kind() == Shuffle.Kind.SHARD_BLOCKS) {
                        continue;
                    }
                    for (Partitioning partitioning : Partitioning.values()) {
                        for (int world : new int[] {1, 2, 3, 4, 6, 8}) {
                            for (int g : new int[] {1, 2, 3}) {
                                if (world % g != 0 || world > n) {
                                    continue;
                                }
                                for (int p : new int[] {960, 7}) {
                                    checked += checkWorld(
                                            base(shuffle, shards, sizes), sizes, shards, partitioning, world, g, p);
                                }
                            }
                        }
                    }
                }
            }
        }
        assertTrue(checked > 300, "combinations checked: " + checked);
    }

    /** {@return 1 if checked, 0 if the combination is refused (and the refusal is the documented one)} */
    private static int checkWorld(
            Sampler base, int[] sizes, boolean shards, Partitioning partitioning, int world, int g, int p) {
        int n = base.datasetSize();
        String what = base + " " + partitioning + " W=" + world + " g=" + g + " P=" + p;
        int nodes = world / g;
        if (partitioning == Partitioning.STABLE && nodes > p) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> base.shard(0, world, partitioning, g, p));
            assertTrue(e.getMessage().contains("more nodes than canonical partitions"), e.getMessage());
            return 0;
        }
        Model model;
        try {
            model = new Model(sizes, shards, base.shuffle(), partitioning, world, g, p);
        } catch (IllegalStateException empty) { // the model finds a node without samples: the sampler must refuse
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> base.shard(0, world, partitioning, g, p), what);
            assertTrue(e.getMessage().contains("gets no samples"), e.getMessage());
            return 0;
        }
        for (long epoch = 0; epoch < 2; epoch++) {
            int[] count = new int[n];
            int length = -1;
            for (int rank = 0; rank < world; rank++) {
                Sampler s = base.shard(rank, world, partitioning, g, p);
                int[] part = s.epoch(epoch);
                assertEquals(s.epochSize(), part.length, what);
                if (length >= 0) {
                    assertEquals(length, part.length, what + ": equal steps for every rank");
                }
                length = part.length;
                assertArrayEquals(model.rank(rank, epoch), part, what + " rank " + rank + " epoch " + epoch);
                for (int i : part) {
                    count[i]++;
                }
            }
            int repeats = 0;
            for (int i = 0; i < n; i++) {
                assertTrue(count[i] >= 1, what + ": sample " + i + " never seen in epoch " + epoch);
                repeats += count[i] - 1;
            }
            assertEquals((long) world * length - n, repeats, what + ": repeats are the padding");
            assertTrue(repeats <= model.maxPadding(), what + ": padding " + repeats + " > " + model.maxPadding());
            if (world == 1 && partitioning == Partitioning.PER_EPOCH) {
                assertPermutation(base.fullOrder(epoch), n, what + " full order");
            }
        }
        if (partitioning == Partitioning.STABLE) {
            int[] all = new int[0];
            for (int node = 0; node < nodes; node++) {
                all = IntStream.concat(
                                IntStream.of(all),
                                IntStream.of(((EpochOrder) base.shard(node * g, world, partitioning, g, p)).nodePart()))
                        .toArray();
            }
            assertPermutation(all, n, what + ": the node parts partition the dataset");
            assertPermutation(base.shard(0, world, partitioning, g, p).fullOrder(1), n, what + " full order");
        }
        return 1;
    }

    /**
     * The documented rule, written the obvious way: whole arrays, no lookups. It shares only
     * {@link KeyedPermutation} (pinned above) with the sampler.
     */
    private static final class Model {
        final int[] first;
        final boolean shards;
        final Shuffle shuffle;
        final Partitioning partitioning;
        final int world;
        final int g;
        final int n;
        final List<int[]> nodeParts = new ArrayList<>(); // STABLE: units (shards or samples), in stable order
        final List<int[]> nodeFirstLast = new ArrayList<>();
        final long[] nodeSizes;

        Model(int[] sizes, boolean shards, Shuffle shuffle, Partitioning partitioning, int world, int g, int p) {
            first = new int[sizes.length + 1];
            for (int s = 0; s < sizes.length; s++) {
                first[s + 1] = first[s] + sizes[s];
            }
            this.shards = shards;
            this.shuffle = shuffle;
            this.partitioning = partitioning;
            this.world = world;
            this.g = g;
            this.n = first[sizes.length];
            int nodes = world / g;
            nodeSizes = new long[nodes];
            if (partitioning == Partitioning.STABLE) {
                int units = shards ? sizes.length : n;
                int[] stable = perm(units, key(4, 0, 0));
                List<List<Integer>> members = new ArrayList<>();
                for (int m = 0; m < nodes; m++) {
                    members.add(new ArrayList<>());
                }
                long x = 0;
                for (int u : stable) {
                    int c = 0;
                    while (c + 1 < p && (long) (c + 1) * n / p <= x) {
                        c++;
                    }
                    int node = 0;
                    while (node + 1 < nodes && (long) (node + 1) * p / nodes <= c) {
                        node++;
                    }
                    members.get(node).add(u);
                    int size = shards ? sizes[u] : 1;
                    nodeSizes[node] += size;
                    x += size;
                }
                for (int m = 0; m < nodes; m++) {
                    if (nodeSizes[m] == 0) {
                        throw new IllegalStateException("node " + m + " empty");
                    }
                    nodeParts.add(
                            members.get(m).stream().mapToInt(Integer::intValue).toArray());
                    nodeFirstLast.add(new int[] {(int) ((long) m * p / nodes), (int) ((long) (m + 1) * p / nodes)});
                }
            }
        }

        long key(long tag, long epoch, long identity) {
            return KeyedPermutation.combine(
                    KeyedPermutation.combine(KeyedPermutation.combine(shuffle.seed(), tag), epoch), identity);
        }

        int[] perm(int size, long key) {
            int[] out = new int[size];
            if (!shuffle.shuffles()) {
                Arrays.setAll(out, i -> i);
                return out;
            }
            KeyedPermutation f = new KeyedPermutation(size, key);
            Arrays.setAll(out, i -> f.applyAsInt(i));
            return out;
        }

        /** Shards in a block order: permuted, blocks of k, samples shuffled within each block. */
        int[] blocks(int[] shardList, long epoch, long identity, boolean permute, int k, boolean within) {
            int[] tau = permute
                    ? perm(shardList.length, key(2, epoch, identity))
                    : IntStream.range(0, shardList.length).toArray();
            List<Integer> out = new ArrayList<>();
            for (int b = 0; b * (long) k < shardList.length; b++) {
                List<Integer> seq = new ArrayList<>();
                for (int i = b * k; i < Math.min(shardList.length, (long) b * k + k); i++) {
                    int s = shardList[tau[i]];
                    for (int j = first[s]; j < first[s + 1]; j++) {
                        seq.add(j);
                    }
                }
                if (seq.isEmpty()) {
                    continue;
                }
                int[] pi = within
                        ? perm(seq.size(), KeyedPermutation.combine(key(3, epoch, identity), b))
                        : IntStream.range(0, seq.size()).toArray();
                for (int o = 0; o < seq.size(); o++) {
                    out.add(seq.get(pi[o]));
                }
            }
            return out.stream().mapToInt(Integer::intValue).toArray();
        }

        int[] rank(int rank, long epoch) {
            int node = rank / g;
            int local = rank % g;
            if (partitioning == Partitioning.PER_EPOCH) {
                int length = world == 1 ? n : (n + world - 1) / world;
                int[] order;
                if (shuffle.kind() == Shuffle.Kind.SHARD_BLOCKS) {
                    order = blocks(
                            IntStream.range(0, first.length - 1).toArray(),
                            epoch,
                            0,
                            true,
                            shuffle.blockShards(),
                            true);
                    int[] padded = pad(order, world * length);
                    int[] span = Arrays.copyOfRange(padded, node * g * length, (node + 1) * g * length);
                    return strided(span, local, g, length);
                }
                order = perm(n, key(1, epoch, 0));
                return strided(pad(order, world * length), rank, world, length);
            }
            int[] fl = nodeFirstLast.get(node);
            long identity = ((long) fl[0] << 32) | fl[1];
            int[] units = nodeParts.get(node);
            int[] order;
            if (shards) {
                order = blocks(
                        units,
                        epoch,
                        identity,
                        shuffle.kind() == Shuffle.Kind.SHARD_BLOCKS,
                        shuffle.kind() == Shuffle.Kind.SHARD_BLOCKS ? shuffle.blockShards() : Integer.MAX_VALUE,
                        shuffle.shuffles());
            } else {
                int[] pi = perm(units.length, key(5, epoch, identity));
                order = new int[units.length];
                Arrays.setAll(order, q -> units[pi[q]]);
            }
            long max = Arrays.stream(nodeSizes).max().orElseThrow();
            int length = (int) ((max + g - 1) / g);
            return strided(pad(order, g * length), local, g, length);
        }

        long maxPadding() {
            if (partitioning == Partitioning.PER_EPOCH) {
                return world - 1L;
            }
            long max = Arrays.stream(nodeSizes).max().orElseThrow();
            long length = (max + g - 1) / g;
            return Arrays.stream(nodeSizes).map(s -> g * length - s).sum();
        }

        static int[] pad(int[] order, int length) {
            int[] out = new int[length];
            for (int i = 0; i < length; i++) {
                out[i] = order[i % order.length];
            }
            return out;
        }

        static int[] strided(int[] order, int offset, int step, int length) {
            int[] out = new int[length];
            for (int j = 0; j < length; j++) {
                out[j] = order[offset + j * step];
            }
            return out;
        }
    }

    @Test
    void aLargeRandomLayoutMatchesTheModel() {
        SplittableRandom random = new SplittableRandom(3);
        for (int trial = 0; trial < 20; trial++) {
            int[] sizes = new int[1 + random.nextInt(60)];
            for (int s = 0; s < sizes.length; s++) {
                sizes[s] = random.nextInt(40);
            }
            int n = Arrays.stream(sizes).sum();
            if (n < 8) {
                continue;
            }
            Shuffle shuffle = switch (trial % 3) {
                case 0 -> Shuffle.samples(trial);
                case 1 -> Shuffle.shardBlocks(trial, 1 + random.nextInt(6));
                default -> Shuffle.none();
            };
            int g = 1 + random.nextInt(2);
            int world = g * (1 + random.nextInt(4));
            Partitioning partitioning = random.nextInt(2) == 0 ? Partitioning.PER_EPOCH : Partitioning.STABLE;
            checkWorld(base(shuffle, true, sizes), sizes, true, partitioning, world, g, 1 + random.nextInt(40));
        }
    }

    // ------------------------------------------------------------------------------------- stable and elastic

    @Test
    void stablePartsStayPutAcrossEpochsAndAreReshuffledWithin() {
        for (Sampler base : List.of(
                Sampler.shuffled(10_007, 1),
                Sampler.ofShards(shardSizes(200, 9), Shuffle.shardBlocks(1, 4)),
                Sampler.ofShards(shardSizes(200, 9), Shuffle.samples(1)))) {
            for (int rank = 0; rank < 8; rank++) {
                Sampler s = base.shard(rank, 8, Partitioning.STABLE, 2, 960);
                Set<Integer> e0 = set(s.epoch(0));
                int[] e1 = s.epoch(1);
                assertEquals(
                        set(((EpochOrder) s).nodePart()),
                        union(
                                e0,
                                set(base.shard(rank ^ 1, 8, Partitioning.STABLE, 2, 960)
                                        .epoch(0))),
                        base + ": the node's two ranks cover its part");
                Set<Integer> node0 = union(
                        set(s.epoch(3)),
                        set(base.shard(rank ^ 1, 8, Partitioning.STABLE, 2, 960).epoch(3)));
                assertEquals(set(((EpochOrder) s).nodePart()), node0, base + ": the node's part in epoch 3");
                assertNotEquals(Arrays.toString(s.epoch(0)), Arrays.toString(e1), base + ": reshuffled");
            }
        }
        // Under PER_EPOCH the part moves: a rank keeps about 1/W of last epoch's samples.
        Sampler per = Sampler.shuffled(10_007, 1).shard(0, 8);
        Set<Integer> kept = set(per.epoch(0));
        kept.retainAll(set(per.epoch(1)));
        assertTrue(kept.size() < 2 * 10_007 / 64, "PER_EPOCH keeps " + kept.size());
    }

    @Test
    void stablePartsAreUnionsOfCanonicalPartitionsWhateverTheWorld() {
        // Samples: the default 960 partitions; shards: 96 partitions of ~10 shards each (every partition then holds
        // the first sample of some shard, so none is empty).
        checkUnions(Sampler.shuffled(50_000, 4), 960, new int[] {1, 2, 3, 8, 32, 48, 960});
        checkUnions(
                Sampler.ofShards(shardSizes(960, 17), Shuffle.shardBlocks(4, 8)), 96, new int[] {1, 2, 3, 8, 32, 48, 96
                });
    }

    private static void checkUnions(Sampler base, int p, int[] worlds) {
        // The canonical partitions, as the parts of a world of P nodes.
        Map<Integer, Integer> partitionOf = new HashMap<>();
        int[] partitionSize = new int[p];
        for (int c = 0; c < p; c++) {
            int[] part = ((EpochOrder) base.shard(c, p, Partitioning.STABLE, 1, p)).nodePart();
            partitionSize[c] = part.length;
            for (int i : part) {
                partitionOf.put(i, c);
            }
        }
        assertEquals(base.datasetSize(), partitionOf.size());
        for (int world : worlds) {
            for (int node = 0; node < world; node++) {
                int[] part = ((EpochOrder) base.shard(node, world, Partitioning.STABLE, 1, p)).nodePart();
                TreeSet<Integer> partitions = new TreeSet<>();
                for (int i : part) {
                    partitions.add(partitionOf.get(i));
                }
                String what = base + " W " + world + " node " + node;
                assertEquals(node * p / world, partitions.first(), what);
                assertEquals((node + 1) * p / world - 1, partitions.last(), what);
                int expected = 0;
                for (int c = partitions.first(); c <= partitions.last(); c++) {
                    expected += partitionSize[c];
                }
                assertEquals(expected, part.length, what + ": whole canonical partitions");
            }
        }
    }

    @Test
    void stablePartsOfShardsAreWholeShards() {
        int[] sizes = shardSizes(300, 5);
        Sampler base = Sampler.ofShards(sizes, Shuffle.shardBlocks(8, 5));
        int[] shardOf = new int[base.datasetSize()];
        int[] first = EpochOrder.boundaries(sizes);
        for (int s = 0; s < sizes.length; s++) {
            Arrays.fill(shardOf, first[s], first[s + 1], s);
        }
        for (int node = 0; node < 8; node++) {
            int[] part = ((EpochOrder) base.shard(node, 8, Partitioning.STABLE)).nodePart();
            Map<Integer, Integer> perShard = new HashMap<>();
            for (int i : part) {
                perShard.merge(shardOf[i], 1, Integer::sum);
            }
            perShard.forEach((s, c) -> assertEquals(sizes[s], c, "shard " + s + " whole on node"));
        }
    }

    @Test
    void shardBlocksReadKShardsAtATime() {
        int[] sizes = shardSizes(40, 50);
        int[] first = EpochOrder.boundaries(sizes);
        int[] order = Sampler.ofShards(sizes, Shuffle.shardBlocks(2, 4)).epoch(3);
        assertPermutation(order, first[40], "one epoch");
        // Cut the order into runs that each exhaust the shards they touch: each touches at most k shards.
        int k = 4;
        int position = 0;
        int blocks = 0;
        while (position < order.length) {
            TreeSet<Integer> shards = new TreeSet<>();
            int blockSize = 0;
            for (int s : blockShards(sizes, order, position, first)) {
                shards.add(s);
                blockSize += sizes[s];
            }
            assertTrue(shards.size() <= k, "block " + blocks + " spans " + shards);
            position += blockSize;
            blocks++;
        }
        assertTrue(blocks >= 10, "40 shards in blocks of 4: " + blocks + " runs");
    }

    /** The shards of the block starting at {@code position}: grows until the samples seen fill whole shards. */
    private static Set<Integer> blockShards(int[] sizes, int[] order, int position, int[] first) {
        TreeSet<Integer> shards = new TreeSet<>();
        int covered = 0;
        int i = position;
        do {
            int s = Arrays.binarySearch(first, order[i]);
            s = s >= 0 ? s : -s - 2;
            while (s + 1 < first.length - 1 && first[s + 1] == first[s]) {
                s++;
            }
            if (shards.add(s)) {
                covered += sizes[s];
            }
            i++;
        } while (i - position < covered);
        return shards;
    }

    // ---------------------------------------------------------------------------------------------- arguments

    @Test
    void badArgumentsAreNamed() {
        assertMessage("dataset size: -1 (expected: >= 0)", () -> Sampler.shuffled(-1, 0));
        assertMessage(
                "world size: 0 (expected: >= 1)", () -> Sampler.sequential(5).shard(0, 0));
        assertMessage(
                "rank: 4 (expected: 0 <= rank < world size 4)",
                () -> Sampler.sequential(5).shard(4, 4));
        assertMessage("epoch: -1 (expected: >= 0)", () -> Sampler.shuffled(5, 1).epoch(-1));
        assertMessage("shards per block: 0 (expected: >= 1)", () -> Shuffle.shardBlocks(1, 0));
        assertMessage(
                "ranks per node: 3 (expected: >= 1 and dividing the world size 4)",
                () -> Sampler.shuffled(100, 1).shard(0, 4, Partitioning.STABLE, 3, 960));
        assertMessage(
                "canonical partitions: 0 (expected: 1..16777216)",
                () -> Sampler.shuffled(100, 1).shard(0, 4, Partitioning.STABLE, 1, 0));
        assertMessage(
                "STABLE partitioning over 8 nodes (8 ranks, 1 per node): more nodes than canonical partitions,"
                        + " 4 (expected: at most 4 nodes; raise canonicalPartitions)",
                () -> Sampler.shuffled(100, 1).shard(0, 8, Partitioning.STABLE, 1, 4));
        assertMessage(
                "STABLE partitioning: node 1 of 2 gets no samples (3 samples in 2 shards, 960 canonical"
                        + " partitions; expected: a part for every node: fewer nodes, or more shards)",
                () -> Sampler.ofShards(new int[] {3, 0}, Shuffle.none()).shard(0, 2, Partitioning.STABLE));
        assertMessage("shard 1 size: -2 (expected: >= 0)", () -> Sampler.ofShards(new int[] {1, -2}, Shuffle.none()));
        IllegalArgumentException blocks =
                assertThrows(IllegalArgumentException.class, () -> Sampler.of(10, Shuffle.shardBlocks(1, 2)));
        assertTrue(
                blocks.getMessage().startsWith("shuffle: Shuffle.shardBlocks(1, 2) over a dataset without shards"),
                blocks.getMessage());
        assertThrows(
                IllegalStateException.class,
                () -> Sampler.shuffled(5, 1).shard(0, 2).shard(0, 2));
        assertMessage(
                "shuffle: null (expected: Shuffle.none(), Shuffle.samples(seed) or Shuffle.shardBlocks(seed," + " k))",
                () -> Sampler.of(3, null));
    }

    private static void assertMessage(String expected, Executable call) {
        assertEquals(
                expected, assertThrows(IllegalArgumentException.class, call).getMessage());
    }

    private static int[] shardSizes(int shards, int seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int[] sizes = new int[shards];
        Arrays.setAll(sizes, s -> 20 + random.nextInt(60));
        return sizes;
    }

    private static Set<Integer> set(int[] values) {
        TreeSet<Integer> set = new TreeSet<>();
        for (int v : values) {
            set.add(v);
        }
        return set;
    }

    private static Set<Integer> union(Set<Integer> a, Set<Integer> b) {
        TreeSet<Integer> u = new TreeSet<>(a);
        u.addAll(b);
        return u;
    }
}
