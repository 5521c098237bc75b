// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.Sample;
import dev.granary.loader.ShardWriter;
import dev.granary.loader.Shuffle;
import dev.granary.loader.WebDataset;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.spi.Origin;
import dev.granary.tier.DiskTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * {@code granary prestage} of a WebDataset, then a training job's cache over the staged directory: its indexing, a
 * streamed epoch (shard parts) and a per-sample epoch read zero bytes from the origin, every sample checked. Over a
 * POSIX directory with {@code --keys-from} naming only the {@code .tar} shards (the command adds their {@code .gidx}
 * indexes), and over a real S3 server (S3Proxy) by prefix.
 */
@Timeout(180)
class PrestageWebDatasetCommandTest {

    private static final int PAGE = 16 << 10;
    private static final int SAMPLES = 150;
    private static final int SHARDS = 3;

    @TempDir
    Path root;

    private static byte[] jpg(int i) {
        SplittableRandom random = new SplittableRandom(500 + i);
        byte[] bytes = new byte[i % 4 == 0 ? 100 + random.nextInt(5_000) : 8_000 + random.nextInt(50_000)];
        random.nextBytes(bytes);
        return bytes;
    }

    /** Writes the shards with their indexes under {@code data/shards}; returns the shard keys. */
    private static List<String> write(Path data) {
        try (ShardWriter w = ShardWriter.builder(data.resolve("shards"))
                .pattern("train-%04d.tar")
                .maxCount(SAMPLES / SHARDS)
                .build()) {
            for (int i = 0; i < SAMPLES; i++) {
                Map<String, byte[]> fields = new LinkedHashMap<>();
                fields.put("jpg", jpg(i));
                fields.put("cls", Integer.toString(i).getBytes(US_ASCII));
                w.write(String.format("train/%05d", i), fields);
            }
            w.close();
            return w.shards().stream().map(s -> "shards/" + s).toList();
        }
    }

    @Test
    void aListOfShardsIsStagedWithItsIndexesAndTheJobReadsNothingFromTheOrigin() throws Exception {
        Path data = root.resolve("data");
        Path disk = root.resolve("nvme");
        List<String> shards = write(data);
        assertEquals(SHARDS, shards.size());
        Path keys = Files.write(root.resolve("shards.txt"), shards);
        Cli.Result r = Cli.run(
                "prestage",
                data.toUri().toString(),
                "--keys-from",
                keys.toString(),
                "--disk",
                disk.toString(),
                "--capacity",
                "64M",
                "--page-size",
                "16K",
                "--progress",
                "none");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(
                r.out().startsWith("prestaged " + 2 * SHARDS + " of " + 2 * SHARDS + " objects"),
                "the shards and their indexes: " + r.out());
        train(PosixOrigin.of(data), disk, shards);
    }

    @Test
    void anS3PrefixOfShardsIsStagedAndTheJobReadsNothingFromTheOrigin() throws Exception {
        Path data = root.resolve("data");
        Path disk = root.resolve("nvme");
        List<String> shards = write(data);
        S3ProxyServer server = S3ProxyServer.shared();
        String bucket = "cli-wds-" + Long.toHexString(System.nanoTime()) + "-"
                + ProcessHandle.current().pid();
        try (S3Client client = server.client();
                Stream<Path> files = Files.walk(data)) {
            client.createBucket(b -> b.bucket(bucket));
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                String key = "ds/" + data.relativize(file).toString().replace('\\', '/');
                client.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromFile(file));
            }
        }
        // The SDK's default credentials chain reads these first.
        System.setProperty("aws.accessKeyId", S3ProxyServer.IDENTITY);
        System.setProperty("aws.secretAccessKey", S3ProxyServer.CREDENTIAL);
        Cli.Result r = Cli.run(
                "prestage",
                "s3://" + bucket + "/ds/",
                "--endpoint",
                server.endpoint().toString(),
                "--path-style",
                "--prefix",
                "shards/",
                "--disk",
                disk.toString(),
                "--capacity",
                "64M",
                "--page-size",
                "16K",
                "--progress",
                "none");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().startsWith("prestaged " + 2 * SHARDS + " of " + 2 * SHARDS + " objects"), r.out());
        train(
                S3Origin.builder()
                        .bucket(bucket)
                        .prefix("ds/")
                        .endpoint(server.endpoint())
                        .pathStyle(true)
                        .region("us-east-1")
                        .credentials(S3ProxyServer.credentials())
                        .build(),
                disk,
                shards);
    }

    /** The job: a cache with the same page size over the staged directory; two first epochs, checked. */
    private static void train(Origin origin, Path disk, List<String> shards) throws IOException {
        try (TieredCache cache = TieredCache.builder(origin)
                .tier(DiskTier.builder().directory(disk).capacity(64L << 20).build())
                .pageSize(PAGE)
                .build()) {
            WebDataset dataset = WebDataset.of(cache, shards);
            assertEquals(0, cache.stats().origin().reads(), "indexing from the staged index files");
            assertEquals(
                    SAMPLES,
                    epoch(DataLoader.builder(dataset, PrestageWebDatasetCommandTest::check)
                            .shuffle(Shuffle.shardBlocks(3, 1))
                            .shardPartSize(1 << 20)));
            assertEquals(
                    0,
                    cache.stats().origin().reads(),
                    "streamed epoch: " + cache.stats().origin());
            assertEquals(
                    SAMPLES,
                    epoch(DataLoader.builder(dataset, PrestageWebDatasetCommandTest::check)
                            .shuffle(Shuffle.samples(9))
                            .streamShards(false)));
            assertEquals(
                    0,
                    cache.stats().origin().reads(),
                    "per-sample epoch: " + cache.stats().origin());
        }
    }

    private static int epoch(DataLoader.Builder<Integer> builder) {
        List<Integer> seen = new ArrayList<>();
        try (DataLoader<Integer> loader = builder.batchSize(10).workers(2).build();
                Epoch<Integer> epoch = loader.epoch(0)) {
            for (Batch<Integer> batch : epoch) {
                seen.addAll(batch.items());
            }
        }
        assertEquals(SAMPLES, seen.stream().distinct().count(), "each sample once");
        return seen.size();
    }

    private static Integer check(Sample sample) {
        int i = Integer.parseInt(sample.key().substring("train/".length()));
        assertArrayEquals(jpg(i), bytes(sample.fields().get("jpg")), sample.key());
        assertArrayEquals(
                Integer.toString(i).getBytes(US_ASCII), bytes(sample.fields().get("cls")), sample.key());
        return i;
    }

    private static byte[] bytes(ByteBuffer buffer) {
        byte[] b = new byte[buffer.remaining()];
        buffer.duplicate().get(b);
        return b;
    }
}
