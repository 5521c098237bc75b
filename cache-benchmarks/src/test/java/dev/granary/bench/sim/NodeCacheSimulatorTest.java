// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.loader.Partitioning;
import dev.granary.loader.Sampler;
import dev.granary.loader.Shuffle;
import java.io.IOException;
import java.util.Arrays;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The per-node simulator on a small world: real tiers per node, the shipped orders. */
class NodeCacheSimulatorTest {

    private static final int ITEMS = 2_400;

    private static NodeCacheSimulator.Settings settings(int g) {
        return NodeCacheSimulator.Settings.parse(
                new String[] {"--items=" + ITEMS, "--epochs=3", "--shard-size=10", "--ranks-per-node=" + g});
    }

    @Test
    void stableReachesTheNodeCeilingAndPerEpochAboutOneOverW() throws IOException {
        NodeCacheSimulator.Settings s = settings(1);
        int w = 4;
        int capacity = ITEMS / w / 2; // C·W/N = 0.5: 300 items, memory third 100 items
        for (boolean shards : new boolean[] {false, true}) {
            Sampler base = shards ? Sampler.ofShards(sizes(), Shuffle.shardBlocks(1, 4)) : Sampler.shuffled(ITEMS, 1);
            NodeCacheSimulator.Outcome stable = NodeCacheSimulator.run(base, Partitioning.STABLE, w, s, capacity);
            NodeCacheSimulator.Outcome perEpoch = NodeCacheSimulator.run(base, Partitioning.PER_EPOCH, w, s, capacity);
            double ideal = Math.min(1, (double) stable.ceiling() * w / ITEMS);
            assertTrue(stable.ratio() >= 0.98 * ideal, base + ": STABLE " + stable.ratio() + " of ideal " + ideal);
            assertTrue(stable.ratio() <= 1.0);
            assertTrue(perEpoch.ratio() < 0.5 * ideal, base + ": PER_EPOCH " + perEpoch.ratio() + " of " + ideal);
        }
    }

    @Test
    void aNodesRanksAreInterleavedAndCoverTheNodesPart() {
        Sampler base = Sampler.ofShards(sizes(), Shuffle.shardBlocks(3, 2));
        int[] node = NodeCacheSimulator.nodeOrder(base, Partitioning.STABLE, 2, 2, 960, 1, 0);
        int[] rank2 = base.shard(2, 4, Partitioning.STABLE, 2, 960).epoch(0);
        int[] rank3 = base.shard(3, 4, Partitioning.STABLE, 2, 960).epoch(0);
        assertEquals(rank2.length + rank3.length, node.length);
        for (int j = 0; j < rank2.length; j++) {
            assertEquals(rank2[j], node[2 * j]);
            assertEquals(rank3[j], node[2 * j + 1]);
        }
        int[] sorted = Arrays.stream(node).distinct().sorted().toArray();
        int[] other = Arrays.stream(NodeCacheSimulator.nodeOrder(base, Partitioning.STABLE, 2, 2, 960, 0, 0))
                .distinct()
                .toArray();
        int[] all = IntStream.concat(Arrays.stream(sorted), Arrays.stream(other))
                .sorted()
                .toArray();
        int[] identity = new int[ITEMS];
        Arrays.setAll(identity, i -> i);
        assertArrayEquals(identity, all, "the two nodes' parts partition the dataset");
    }

    private static int[] sizes() {
        int[] sizes = new int[ITEMS / 10];
        Arrays.fill(sizes, 10);
        return sizes;
    }
}
