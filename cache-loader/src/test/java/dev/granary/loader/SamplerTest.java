// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(60)
class SamplerTest {

    private static void assertPermutation(int[] order, int n, String what) {
        assertEquals(n, order.length, what);
        boolean[] seen = new boolean[n];
        for (int i : order) {
            assertTrue(i >= 0 && i < n, what + ": index " + i);
            assertFalse(seen[i], what + ": index " + i + " twice");
            seen[i] = true;
        }
    }

    @Test
    void everySampleExactlyOncePerEpoch() {
        for (int n : new int[] {0, 1, 2, 3, 17, 1000, 65_537}) {
            Sampler shuffled = Sampler.shuffled(n, 42);
            for (long epoch = 0; epoch < 3; epoch++) {
                assertPermutation(shuffled.epoch(epoch), n, "n=" + n + ", epoch " + epoch);
            }
            assertArrayEquals(java.util.stream.IntStream.range(0, n).toArray(), Sampler.sequential(n).epoch(5));
        }
    }

    @Test
    void theSameSeedGivesTheSameOrderAndOthersDiffer() {
        Sampler a = Sampler.shuffled(10_000, 7);
        Sampler b = Sampler.shuffled(10_000, 7);
        assertArrayEquals(a.epoch(3), b.epoch(3), "two samplers, one seed");
        assertFalse(Arrays.equals(a.epoch(3), Sampler.shuffled(10_000, 8).epoch(3)), "another seed");
        assertFalse(Arrays.equals(a.epoch(3), a.epoch(4)), "another epoch");
        assertArrayEquals(a.epoch(3), a.epoch(3), "asking again");
    }

    @Test
    void theMixerIsSplitMix64() {
        // splitmix64 seeded with 0: its first three outputs, as published with the algorithm.
        long gamma = 0x9E3779B97F4A7C15L;
        assertEquals(0xE220A8397B1DCDAFL, SeededShuffle.mix(gamma));
        assertEquals(0x6E789E6AA1B965F4L, SeededShuffle.mix(2 * gamma));
        assertEquals(0x06C45D188009454FL, SeededShuffle.mix(3 * gamma));
    }

    @Test
    void theAlgorithmIsPinned() {
        // The documented algorithm, cross-checked by an independent Python implementation of the Javadoc when
        // pinned; a change here breaks every user's reproducibility and resume.
        assertArrayEquals(new int[] {1, 7, 2, 5, 6, 4, 0, 9, 8, 3}, Sampler.shuffled(10, 42).epoch(0));
    }

    @Test
    void theOrderIsTheSameInAnotherJvm() throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process child = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
                SamplerOrderMain.class.getName(), "1000", "99", "2", "1", "3").redirectErrorStream(true).start();
        String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(child.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, child.exitValue(), out);
        assertEquals(Arrays.toString(Sampler.shuffled(1000, 99).shard(1, 3).epoch(2)), out);
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
    void shardsAreDisjointAndCoverTheEpochWhenTheWorldDividesIt() {
        int n = 1200;
        for (int world : new int[] {1, 2, 3, 4, 8}) {
            List<Integer> all = new ArrayList<>();
            for (int rank = 0; rank < world; rank++) {
                Sampler shard = Sampler.shuffled(n, 5).shard(rank, world);
                int[] part = shard.epoch(1);
                assertEquals(n / world, part.length);
                assertEquals(n / world, shard.epochSize());
                for (int i : part) {
                    all.add(i);
                }
            }
            assertPermutation(all.stream().mapToInt(Integer::intValue).toArray(), n, "world " + world);
        }
    }

    @Test
    void unevenShardsArePaddedFromTheStartLikeDistributedSampler() {
        int n = 10;
        int world = 4; // ceil(10/4) = 3 each; padded to 12 by repeating the first 2 of the full order
        Sampler base = Sampler.shuffled(n, 11);
        int[] full = base.fullOrder(0);
        int[] padded = new int[12];
        for (int i = 0; i < 12; i++) {
            padded[i] = full[i % n];
        }
        int[] seen = new int[n];
        for (int rank = 0; rank < world; rank++) {
            int[] part = base.shard(rank, world).epoch(0);
            assertEquals(3, part.length);
            for (int k = 0; k < 3; k++) {
                assertEquals(padded[rank + k * world], part[k], "rank " + rank + " position " + k);
                seen[part[k]]++;
            }
        }
        assertTrue(Arrays.stream(seen).allMatch(c -> c >= 1), "every sample is seen: " + Arrays.toString(seen));
        assertEquals(2, Arrays.stream(seen).filter(c -> c == 2).count(), "world - (n mod world) repeats");
    }

    @Test
    void badArgumentsAreNamed() {
        assertEquals("dataset size: -1 (expected: >= 0)",
                assertThrows(IllegalArgumentException.class, () -> Sampler.shuffled(-1, 0)).getMessage());
        assertEquals("world size: 0 (expected: >= 1)",
                assertThrows(IllegalArgumentException.class, () -> Sampler.sequential(5).shard(0, 0)).getMessage());
        assertEquals("rank: 4 (expected: 0 <= rank < world size 4)",
                assertThrows(IllegalArgumentException.class, () -> Sampler.sequential(5).shard(4, 4)).getMessage());
        assertEquals("epoch: -1 (expected: >= 0)",
                assertThrows(IllegalArgumentException.class, () -> Sampler.shuffled(5, 1).epoch(-1)).getMessage());
        assertThrows(IllegalStateException.class, () -> Sampler.shuffled(5, 1).shard(0, 2).shard(0, 2));
    }
}
