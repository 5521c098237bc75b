// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * The loader's shuffles and partitionings over real tar shards and real files: the batches follow the sampler, every
 * kind resumes mid-epoch exactly, the state records the kind, old states are read or refused as documented, an
 * epoch boundary resumes on another world size, and bad combinations fail at build().
 */
@Timeout(120)
class LoaderOrderTest {

    private static final int SAMPLES = 157; // 13 shards of at most 13: not divisible by the worlds below

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    private List<String> shards;

    @BeforeEach
    void writeShards() throws IOException {
        try (ShardWriter writer = ShardWriter.builder(Files.createDirectories(root.resolve("shards")))
                .pattern("s-%04d.tar")
                .maxCount(13)
                .build()) {
            for (int i = 0; i < SAMPLES; i++) {
                writer.write(
                        String.format("k%05d", i), Map.of("txt", ("sample " + i).getBytes(StandardCharsets.UTF_8)));
            }
            writer.close();
            shards = writer.shards().stream().map(s -> "shards/" + s).toList();
        }
        dev.granary.testkit.Dataset files = new dev.granary.testkit.Dataset(root, 3);
        for (int i = 0; i < 41; i++) {
            files.put(String.format("objects/%03d.bin", i), 100 + i);
        }
    }

    private static String text(Sample sample) {
        ByteBuffer b = sample.fields().get("txt").duplicate();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static List<Integer> drain(Epoch<Integer> epoch, int batches) {
        List<Integer> out = new ArrayList<>();
        var it = epoch.iterator();
        for (int b = 0; b < batches && it.hasNext(); b++) {
            out.addAll(it.next().items());
        }
        return out;
    }

    private DataLoader.Builder<Integer> web(TieredCache cache) throws IOException {
        return DataLoader.builder(WebDataset.of(cache, shards), sample -> {
                    String t = text(sample);
                    int index = Integer.parseInt(t.substring("sample ".length()));
                    assertEquals(index, sample.index(), "the sample's bytes are its own");
                    return sample.index();
                })
                .batchSize(5)
                .workers(2)
                .prefetch(2);
    }

    @Test
    void everyKindFollowsTheSamplerAndResumesMidEpochExactly() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            WebDataset dataset = WebDataset.of(cache, shards);
            assertEquals(SAMPLES, dataset.size());
            for (Shuffle shuffle : List.of(Shuffle.samples(5), Shuffle.shardBlocks(5, 3), Shuffle.none())) {
                for (Partitioning partitioning : Partitioning.values()) {
                    int world = 4;
                    int perNode = partitioning == Partitioning.STABLE ? 2 : 1;
                    int rank = 3;
                    Sampler sampler = Sampler.of(dataset, shuffle).shard(rank, world, partitioning, perNode, 960);
                    String what = shuffle + " " + partitioning;
                    List<Integer> whole;
                    try (DataLoader<Integer> loader = web(cache)
                                    .shuffle(shuffle)
                                    .shard(rank, world, partitioning)
                                    .ranksPerNode(perNode)
                                    .build();
                            Epoch<Integer> e = loader.epoch(2)) {
                        whole = drain(e, Integer.MAX_VALUE);
                    }
                    assertEquals(Arrays.stream(sampler.epoch(2)).boxed().toList(), whole, what + ": sampler order");
                    LoaderState state;
                    List<Integer> head;
                    try (DataLoader<Integer> loader = web(cache)
                                    .shuffle(shuffle)
                                    .shard(rank, world, partitioning)
                                    .ranksPerNode(perNode)
                                    .build();
                            Epoch<Integer> e = loader.epoch(2)) {
                        head = drain(e, 3);
                        state = loader.state();
                    }
                    assertEquals(3, state.nextBatch(), what);
                    assertEquals(shuffle, state.shuffle(), what);
                    assertEquals(partitioning, state.partitioning(), what);
                    assertEquals(perNode, state.ranksPerNode(), what);
                    LoaderState decoded = LoaderState.decode(state.encode());
                    assertEquals(state, decoded, what + ": text form");
                    List<Integer> tail;
                    try (DataLoader<Integer> loader = web(cache)
                            .shuffle(shuffle)
                            .shard(rank, world, partitioning)
                            .ranksPerNode(perNode)
                            .build()) {
                        loader.resume(decoded);
                        try (Epoch<Integer> e = loader.epoch(2)) {
                            tail = drain(e, Integer.MAX_VALUE);
                        }
                    }
                    List<Integer> joined = new ArrayList<>(head);
                    joined.addAll(tail);
                    assertEquals(whole, joined, what + ": resumed = uninterrupted");
                    if (shuffle.shuffles()) {
                        try (DataLoader<Integer> other = web(cache)
                                .shuffle(shuffle)
                                .shard(
                                        rank,
                                        world,
                                        partitioning == Partitioning.STABLE
                                                ? Partitioning.PER_EPOCH
                                                : Partitioning.STABLE)
                                .build()) {
                            IllegalArgumentException e =
                                    assertThrows(IllegalArgumentException.class, () -> other.resume(decoded));
                            assertTrue(e.getMessage().contains("partitioning="), e.getMessage());
                        }
                    }
                }
            }
        }
    }

    @Test
    void stableKeepsEachNodesShardsAcrossEpochsAndCoversTheDatasetAcrossRanks() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            int world = 4;
            List<Set<String>> shardsOfRank = new ArrayList<>();
            int[] seen = new int[SAMPLES];
            for (int rank = 0; rank < world; rank++) {
                Set<String> first = null;
                try (DataLoader<Integer> loader = web(cache)
                        .shuffle(Shuffle.shardBlocks(9, 2))
                        .shard(rank, world, Partitioning.STABLE)
                        .build()) {
                    for (int e = 0; e < 3; e++) {
                        List<Integer> order;
                        try (Epoch<Integer> epoch = loader.epoch(e)) {
                            order = drain(epoch, Integer.MAX_VALUE);
                        }
                        Set<String> used = new TreeSet<>();
                        for (int i : order) {
                            used.add(((WebDataset) loader.dataset()).shard(i));
                            if (e == 0) {
                                seen[i]++;
                            }
                        }
                        if (first == null) {
                            first = used;
                        } else {
                            assertEquals(first, used, "rank " + rank + " epoch " + e + ": the same shards");
                        }
                    }
                }
                for (Set<String> other : shardsOfRank) {
                    assertTrue(Collections.disjoint(other, first), "whole shards, one node each");
                }
                shardsOfRank.add(first);
            }
            assertTrue(Arrays.stream(seen).allMatch(c -> c >= 1), "every sample in epoch 0: " + Arrays.toString(seen));
        }
    }

    @Test
    void anEpochBoundaryResumesOnAnotherWorldSizeButAMidEpochStateDoesNot() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            LoaderState boundary;
            LoaderState middle;
            try (DataLoader<Integer> loader = web(cache)
                    .shuffle(Shuffle.shardBlocks(2, 2))
                    .shard(1, 4, Partitioning.STABLE)
                    .build()) {
                try (Epoch<Integer> e = loader.epoch(0)) {
                    drain(e, Integer.MAX_VALUE);
                }
                boundary = loader.state();
                try (Epoch<Integer> e = loader.epoch(1)) {
                    drain(e, 2);
                }
                middle = loader.state();
            }
            assertEquals(1, boundary.epoch());
            assertEquals(0, boundary.nextBatch());
            int[] seen = new int[SAMPLES];
            for (int rank = 0; rank < 2; rank++) {
                try (DataLoader<Integer> loader = web(cache)
                        .shuffle(Shuffle.shardBlocks(2, 2))
                        .shard(rank, 2, Partitioning.STABLE)
                        .build()) {
                    loader.resume(boundary);
                    try (Epoch<Integer> e = loader.epoch(1)) {
                        drain(e, Integer.MAX_VALUE).forEach(i -> seen[i]++);
                    }
                    IllegalArgumentException e =
                            assertThrows(IllegalArgumentException.class, () -> loader.resume(middle));
                    assertTrue(
                            e.getMessage().contains("worldSize=4")
                                    && e.getMessage().contains("worldSize=2"),
                            e.getMessage());
                }
            }
            assertTrue(Arrays.stream(seen).allMatch(c -> c >= 1), "two ranks see every sample of epoch 1");
        }
    }

    @Test
    void versionOneStatesAreReadAtAnEpochBoundaryAndRefusedWithin() {
        LoaderState old = LoaderState.decode("granary-loader-state/1 epoch=3 nextBatch=0 datasetSize=100 batchSize=8"
                + " dropLast=false shuffled=true seed=9 rank=1 worldSize=2");
        assertEquals(
                new LoaderState(3, 0, 100, 8, false, Shuffle.samples(9), Partitioning.PER_EPOCH, 1, 2, 1, 960), old);
        assertEquals(old, new LoaderState(3, 0, 100, 8, false, true, 9, 1, 2), "the version-1 constructor");
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> LoaderState.decode(
                        "granary-loader-state/1 epoch=3 nextBatch=4 datasetSize=100 batchSize=8 dropLast=false"
                                + " shuffled=true seed=9 rank=1 worldSize=2"));
        assertTrue(e.getMessage().contains("a version-1 state in the middle of epoch 3"), e.getMessage());
        assertTrue(e.getMessage().contains("repeat and skip samples"), e.getMessage());
        LoaderState v2 =
                new LoaderState(1, 2, 100, 8, true, Shuffle.shardBlocks(-4, 16), Partitioning.STABLE, 5, 8, 4, 64);
        assertEquals(
                "granary-loader-state/2 epoch=1 nextBatch=2 datasetSize=100 batchSize=8 dropLast=true"
                        + " shuffle=shard-blocks seed=-4 blockShards=16 partitioning=stable rank=5 worldSize=8"
                        + " ranksPerNode=4"
                        + " canonicalPartitions=64",
                v2.encode());
        assertEquals(v2, LoaderState.decode(v2.encode()));
        IllegalArgumentException kind = assertThrows(
                IllegalArgumentException.class,
                () -> LoaderState.decode(v2.encode().replace("shard-blocks", "blocks")));
        assertEquals("shuffle: 'blocks' (expected: none, samples or shard-blocks)", kind.getMessage());
        IllegalArgumentException part = assertThrows(
                IllegalArgumentException.class,
                () -> LoaderState.decode(v2.encode().replace("=stable", "=fixed")));
        assertTrue(
                part.getMessage().contains("partitioning 'fixed' (expected: per-epoch or stable)"), part.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> new LoaderState(0, 0, 1, 1, false, Shuffle.none(), Partitioning.STABLE, 0, 4, 3, 960));
    }

    @Test
    void badCombinationsFailAtBuildWithClearMessages() throws IOException {
        try (TieredCache cache = LoaderFixture.cache(leaks, root)) {
            Dataset objects = Dataset.ofObjects(cache, "objects/");
            DataLoader.Builder<Integer> b = DataLoader.builder(objects, Sample::index);
            IllegalArgumentException blocks = assertThrows(
                    IllegalArgumentException.class,
                    () -> b.shuffle(Shuffle.shardBlocks(1, 4)).build());
            assertTrue(
                    blocks.getMessage().contains("over a dataset without shards")
                            && blocks.getMessage().contains("Shuffle.samples(seed)"),
                    blocks.getMessage());
            b.shuffle(Shuffle.samples(1));
            assertMessage(
                    "shuffle: null (expected: Shuffle.none(), Shuffle.samples(seed) or Shuffle.shardBlocks(seed,"
                            + " k))",
                    () -> b.shuffle((Shuffle) null));
            assertMessage("ranks per node: 0 (expected: >= 1)", () -> b.ranksPerNode(0));
            assertMessage("canonical partitions: 0 (expected: 1..16777216)", () -> b.canonicalPartitions(0));
            assertMessage("rank: 4 (expected: 0 <= rank < world size 4)", () -> b.shard(4, 4, Partitioning.STABLE));
            assertMessage("partitioning: null (expected: Partitioning.PER_EPOCH or STABLE)", () -> b.shard(0, 4, null));
            b.shard(0, 4, Partitioning.STABLE).ranksPerNode(3);
            assertMessage("ranks per node: 3 (expected: >= 1 and dividing the world size 4)", b::build);
            b.ranksPerNode(1).canonicalPartitions(2);
            assertMessage(
                    "STABLE partitioning over 4 nodes (4 ranks, 1 per node): more nodes than canonical"
                            + " partitions, 2 (expected: at most 2 nodes; raise canonicalPartitions)",
                    b::build);
            b.canonicalPartitions(960);
            try (DataLoader<Integer> loader = b.batchSize(4).build()) {
                assertEquals(
                        11,
                        Sampler.of(objects, Shuffle.samples(1))
                                .shard(0, 4, Partitioning.STABLE)
                                .epochSize(),
                        "41 samples over 4 nodes: 11 each, the shorter parts padded");
                assertEquals(3, loader.batchesPerEpoch());
            }
        }
    }

    private static void assertMessage(String expected, Executable call) {
        assertEquals(
                expected, assertThrows(IllegalArgumentException.class, call).getMessage());
    }
}
