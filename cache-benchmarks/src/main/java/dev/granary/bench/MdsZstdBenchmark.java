// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.github.luben.zstd.Zstd;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.MdsDataset;
import dev.granary.loader.ShardedDataset;
import dev.granary.loader.Shuffle;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * What zstd-compressed MDS shards cost, for decision 0024: the tiers' room (compressed against decoded bytes) against
 * the CPU an epoch spends decompressing. Writes {@code shards} MDS shards of {@code shardMiB} each, raw and zstd level
 * 3 (MosaicML Streaming's default), in two kinds of sample — {@code text} (4 KiB of words, compressible like tokenised
 * or JSON text) and {@code random} (4 KiB of random bytes, incompressible like JPEG) — then for each kind:
 * <ul>
 *   <li>the compression ratio (what the tiers hold either way);</li>
 *   <li>the thread CPU of decompressing every shard once (one epoch's decode), in CPU-seconds per decoded GiB;</li>
 *   <li>SHA-1 and XXH64-free verification cost: the CPU of SHA-1 over the decoded bytes (index.json's usual hash);</li>
 *   <li>an epoch through {@link MdsDataset} with shard blocks: its wall time and what {@link ShardedDataset#decoding()}
 *       counted (each shard decoded once).</li>
 * </ul>
 * Run: {@code ./mvnw -o -q install -DskipTests -pl cache-benchmarks -am} then
 * {@code java --enable-native-access=ALL-UNNAMED -cp "$(cat
 * cache-benchmarks/target/classpath.txt):cache-benchmarks/target/classes"
 * dev.granary.bench.MdsZstdBenchmark [shards] [shardMiB]} (the classpath as {@code dependency:build-classpath} writes
 * it).
 */
public final class MdsZstdBenchmark {

    private static final int SAMPLE = 4096;

    private MdsZstdBenchmark() {}

    public static void main(String[] args) throws Exception {
        int shards = args.length > 0 ? Integer.parseInt(args[0]) : 8;
        int shardMiB = args.length > 1 ? Integer.parseInt(args[1]) : 16;
        if (shards < 1 || shardMiB < 1) {
            throw new IllegalArgumentException(
                    "shards " + shards + ", shardMiB " + shardMiB + " (expected: >= 1 each)");
        }
        Path dir = Files.createTempDirectory("mds-zstd-bench");
        System.out.printf(
                Locale.ROOT,
                "%d shards of %d MiB, samples of %d bytes, zstd level 3, %s%n",
                shards,
                shardMiB,
                SAMPLE,
                dir);
        for (String kind : List.of("text", "random")) {
            run(dir, kind, shards, shardMiB);
        }
    }

    private static void run(Path dir, String kind, int shards, int shardMiB) throws Exception {
        SplittableRandom random = new SplittableRandom(24);
        int perShard = (shardMiB << 20) / (SAMPLE + 8 + 4 + 4);
        Path root = Files.createDirectories(dir.resolve(kind));
        List<byte[]> compressed = new ArrayList<>();
        long rawTotal = 0;
        long zipTotal = 0;
        StringBuilder index = new StringBuilder("{\"shards\": [");
        for (int s = 0; s < shards; s++) {
            byte[] raw = shard(random, kind, perShard);
            byte[] zip = Zstd.compress(raw, 3);
            compressed.add(zip);
            rawTotal += raw.length;
            zipTotal += zip.length;
            String name = String.format(Locale.ROOT, "shard.%05d.mds", s);
            Files.write(root.resolve(name + ".zstd"), zip);
            index.append(s == 0 ? "" : ", ")
                    .append("{\"column_encodings\": [\"int\", \"str\"], \"column_names\": [\"label\", \"text\"],"
                            + " \"column_sizes\": [8, null], \"compression\": \"zstd\", \"format\": \"mds\","
                            + " \"hashes\": [], \"raw_data\": {\"basename\": \"" + name + "\", \"bytes\": "
                            + raw.length + ", \"hashes\": {}}, \"samples\": " + perShard + ", \"size_limit\": "
                            + (shardMiB << 20) + ", \"version\": 2, \"zip_data\": {\"basename\": \"" + name
                            + ".zstd\", \"bytes\": " + zip.length + ", \"hashes\": {}}}");
        }
        Files.writeString(root.resolve("index.json"), index.append("], \"version\": 2}"));

        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long best = Long.MAX_VALUE;
        long sha = Long.MAX_VALUE;
        for (int round = 0; round < 3; round++) {
            long cpu0 = threads.getCurrentThreadCpuTime();
            List<byte[]> decoded = new ArrayList<>();
            for (byte[] zip : compressed) {
                decoded.add(Zstd.decompress(zip, (int) Zstd.getFrameContentSize(zip)));
            }
            long cpu1 = threads.getCurrentThreadCpuTime();
            MessageDigest sha1 = MessageDigest.getInstance("SHA-1");
            for (byte[] raw : decoded) {
                sha1.update(raw);
            }
            sha1.digest();
            long cpu2 = threads.getCurrentThreadCpuTime();
            best = Math.min(best, cpu1 - cpu0);
            sha = Math.min(sha, cpu2 - cpu1);
        }
        double gib = rawTotal / (double) (1L << 30);

        MemoryTier memory =
                MemoryTier.builder().capacity(2 * rawTotal + (64L << 20)).build();
        long wall;
        ShardedDataset.Decoding d;
        try (TieredCache cache =
                TieredCache.builder(PosixOrigin.of(dir)).tier(memory).build()) {
            ShardedDataset dataset = MdsDataset.of(cache, kind, (2L * shardMiB) << 20);
            long t0 = System.nanoTime();
            long samples = 0;
            try (DataLoader<Long> loader = DataLoader.builder(
                                    dataset,
                                    sample -> sample.fields()
                                            .get("label")
                                            .order(ByteOrder.LITTLE_ENDIAN)
                                            .getLong(0))
                            .batchSize(256)
                            .workers(2)
                            .shuffle(Shuffle.shardBlocks(1L, 2))
                            .build();
                    Epoch<Long> epoch = loader.epoch(0)) {
                for (Batch<Long> batch : epoch) {
                    samples += batch.size();
                }
            }
            wall = System.nanoTime() - t0;
            d = dataset.decoding();
            if (samples != (long) perShard * shards) {
                throw new IllegalStateException("epoch: " + samples + " samples (expected: " + perShard * shards + ")");
            }
        }
        System.out.printf(
                Locale.ROOT,
                "%-6s stored %7.1f MiB  decoded %7.1f MiB  ratio %.2f | decompress %.3f CPU-s/GiB (%.0f MiB/s/core)"
                        + "  sha1 %.3f CPU-s/GiB | epoch (index + 1 epoch) %.2f s wall, %d decodes, %d reuses,"
                        + " decode %.3f s%n",
                kind,
                zipTotal / 1048576.0,
                rawTotal / 1048576.0,
                rawTotal / (double) zipTotal,
                best / 1e9 / gib,
                rawTotal / 1048576.0 / (best / 1e9),
                sha / 1e9 / gib,
                wall / 1e9,
                d.shardsDecoded(),
                d.shardsReused(),
                d.decodeNanos() / 1e9);
    }

    /** One MDS shard: header, config, then samples {label: int, text: str}. */
    private static byte[] shard(SplittableRandom random, String kind, int samples) {
        byte[] config = "{}".getBytes(StandardCharsets.UTF_8);
        int header = 4 + 4 * (samples + 1);
        int sample = 4 + 8 + SAMPLE;
        ByteBuffer b =
                ByteBuffer.allocate(header + config.length + samples * sample).order(ByteOrder.LITTLE_ENDIAN);
        b.putInt(samples);
        for (int i = 0; i <= samples; i++) {
            b.putInt(header + config.length + i * sample);
        }
        b.put(config);
        byte[] text = new byte[SAMPLE];
        String[] words = {
            "the", "loader", "reads", "shards", "of", "tokens", "and", "images", "granary", "cache", "epoch", "sample",
            "batch", "tier", "memory", "disk"
        };
        for (int i = 0; i < samples; i++) {
            if (kind.equals("random")) {
                random.nextBytes(text);
            } else {
                int at = 0;
                while (at < SAMPLE) {
                    byte[] w = (words[random.nextInt(words.length)] + (random.nextInt(8) == 0 ? ". " : " "))
                            .getBytes(StandardCharsets.US_ASCII);
                    for (int k = 0; k < w.length && at < SAMPLE; k++) {
                        text[at++] = w[k];
                    }
                }
            }
            b.putInt(SAMPLE).putLong(i).put(text);
        }
        return b.array();
    }
}
