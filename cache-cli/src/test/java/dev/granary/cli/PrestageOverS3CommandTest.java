// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.tier.DiskTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * {@code granary prestage s3://...} against a real S3 server (S3Proxy, a child JVM): the command stages a prefix
 * through {@code --endpoint --path-style}, with credentials from the SDK's default chain (the {@code aws.accessKeyId}
 * system properties here, the environment or an instance role in production); a cache over the directory then reads
 * everything with zero origin data reads; a missing bucket is one line and exit 4.
 */
@Timeout(120)
class PrestageOverS3CommandTest {

    private static final String BUCKET = "cli-" + Long.toHexString(System.nanoTime()) + "-"
            + ProcessHandle.current().pid();
    private static final TreeMap<String, byte[]> objects = new TreeMap<>();
    private static S3ProxyServer server;
    private static S3Client client;

    @TempDir
    Path root;

    @BeforeAll
    static void upload() throws IOException {
        server = S3ProxyServer.shared();
        client = server.client();
        client.createBucket(b -> b.bucket(BUCKET));
        SplittableRandom random = new SplittableRandom(8);
        for (int i = 0; i < 40; i++) {
            byte[] bytes = new byte[1 + random.nextInt(150_000)];
            random.nextBytes(bytes);
            String key = String.format("imagenet/train/%03d.jpg", i);
            client.putObject(b -> b.bucket(BUCKET).key(key), RequestBody.fromBytes(bytes));
            objects.put(key.substring("imagenet/".length()), bytes);
        }
        client.putObject(b -> b.bucket(BUCKET).key("imagenet/val/0.jpg"), RequestBody.fromBytes(new byte[5]));
        // The SDK's default credentials chain reads these first.
        System.setProperty("aws.accessKeyId", S3ProxyServer.IDENTITY);
        System.setProperty("aws.secretAccessKey", S3ProxyServer.CREDENTIAL);
    }

    @AfterAll
    static void closeClient() {
        if (client != null) {
            client.close();
        }
    }

    @Test
    void prestagesAnS3PrefixAndACacheReadsItLocally() throws Exception {
        Path disk = root.resolve("nvme");
        Cli.Result r = Cli.run(
                "prestage",
                "s3://" + BUCKET + "/imagenet/",
                "--endpoint",
                server.endpoint().toString(),
                "--path-style",
                "--prefix",
                "train/",
                "--disk",
                disk.toString(),
                "--capacity",
                "256M",
                "--page-size",
                "64K",
                "--concurrency",
                "8",
                "--interval",
                "0");
        assertEquals(0, r.exit(), r.toString());
        assertTrue(r.out().startsWith("prestaged 40 of 40 objects"), r.out());
        assertTrue(r.out().contains("from s3://" + BUCKET + "/imagenet/train/ into " + disk), r.out());
        assertTrue(r.err().contains("prestage: 40/40 objects"), r.err());

        S3Origin origin = S3Origin.builder()
                .bucket(BUCKET)
                .prefix("imagenet/")
                .endpoint(server.endpoint())
                .pathStyle(true)
                .region("us-east-1")
                .credentials(S3ProxyServer.credentials())
                .build();
        try (TieredCache cache = TieredCache.builder(origin)
                .tier(DiskTier.builder().directory(disk).capacity(256L << 20).build())
                .pageSize(64 << 10)
                .build()) {
            for (Map.Entry<String, byte[]> e : objects.entrySet()) {
                try (Lease lease = cache.read(e.getKey())) {
                    ByteBuffer b = lease.bytes();
                    byte[] got = new byte[b.remaining()];
                    b.get(got);
                    assertArrayEquals(e.getValue(), got, e.getKey());
                }
            }
            assertEquals(0, cache.stats().origin().reads(), "every byte from the staged disk tier");
        }

        Cli.Result missing = Cli.run(
                "prestage",
                "s3://no-such-bucket-" + BUCKET + "/x/",
                "--endpoint",
                server.endpoint().toString(),
                "--path-style",
                "--disk",
                root.resolve("other").toString(),
                "--capacity",
                "64M");
        assertEquals(4, missing.exit(), missing.toString());
        assertEquals(1, missing.err().strip().split("\n").length, missing.err());
        assertTrue(
                missing.err().startsWith("granary prestage: ") && missing.err().contains("no-such-bucket-"),
                missing.err());
    }
}
