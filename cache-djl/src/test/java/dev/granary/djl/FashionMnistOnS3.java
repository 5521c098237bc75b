// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import dev.granary.LeakDetection;
import dev.granary.TieredCache;
import dev.granary.loader.testkit.FashionMnist;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The real Fashion-MNIST (Debian's {@code dataset-fashion-mnist}) as WebDataset shards on a real S3 server: train
 * (60 000 samples) and t10k (10 000) packed 5 000 per shard ({@code train-00000.tar …}, {@code t10k-00000.tar …}),
 * uploaded once per test JVM to a fresh bucket of {@link S3ProxyServer#shared()}. For the {@code training} tests.
 */
// "exports": a test fixture compiled into the module under test; its public methods serve this module's tests only,
// so the test-only types they name (S3Origin, LeakCheck) need not be exported to anyone.
@SuppressWarnings("exports")
public final class FashionMnistOnS3 {

    /** Samples per shard. */
    public static final int PER_SHARD = 5_000;

    private static FashionMnistOnS3 uploaded;

    private final S3ProxyServer server;
    private final String bucket;
    private final List<String> trainShards;
    private final List<String> testShards;
    private final long bytes;

    private FashionMnistOnS3(
            S3ProxyServer server, String bucket, List<String> trainShards, List<String> testShards, long bytes) {
        this.server = server;
        this.bucket = bucket;
        this.trainShards = trainShards;
        this.testShards = testShards;
        this.bytes = bytes;
    }

    /**
     * {@return the shards on S3}, packed and uploaded on first use
     *
     * @throws IllegalStateException if the Debian package is missing, saying how to install it
     */
    public static synchronized FashionMnistOnS3 get() throws IOException {
        FashionMnist.requireInstalled();
        if (uploaded == null) {
            long t0 = System.nanoTime();
            S3ProxyServer server = S3ProxyServer.shared();
            String bucket = "fashion-mnist-" + Long.toHexString(System.nanoTime()) + "-"
                    + ProcessHandle.current().pid();
            Path dir = Files.createTempDirectory("granary-fashion-mnist-");
            long bytes = 0;
            List<String> train;
            List<String> test;
            try (S3Client client = server.client()) {
                client.createBucket(b -> b.bucket(bucket));
                train = FashionMnist.pack(FashionMnist.read("train"), 60_000, "train", PER_SHARD, dir);
                test = FashionMnist.pack(FashionMnist.read("t10k"), 10_000, "t10k", PER_SHARD, dir);
                for (String shard : Stream.concat(train.stream(), test.stream()).toList()) {
                    Path file = dir.resolve(shard);
                    bytes += Files.size(file);
                    client.putObject(b -> b.bucket(bucket).key(shard), RequestBody.fromFile(file));
                }
            } finally {
                S3ProxyServer.deleteTree(dir);
            }
            uploaded = new FashionMnistOnS3(server, bucket, train, test, bytes);
            System.out.printf(
                    "Fashion-MNIST: %d + %d shards, %.1f MB, packed and uploaded to S3Proxy in %.1f s%n",
                    train.size(), test.size(), bytes / 1e6, (System.nanoTime() - t0) / 1e9);
        }
        return uploaded;
    }

    public List<String> trainShards() {
        return trainShards;
    }

    public List<String> testShards() {
        return testShards;
    }

    /** {@return the bytes of all shards} */
    public long bytes() {
        return bytes;
    }

    /** {@return an origin over the bucket} */
    public S3Origin origin() {
        return S3Origin.builder()
                .bucket(bucket)
                .endpoint(server.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .build();
    }

    /** {@return a cache over the bucket whose memory tier holds every shard, watched by {@code leaks}} */
    public TieredCache cache(LeakCheck leaks) {
        MemoryTier memory = MemoryTier.builder().capacity(bytes + (64L << 20)).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        return leaks.watch(TieredCache.builder(origin())
                .tier(memory)
                .leakDetection(LeakDetection.SAMPLED)
                .build());
    }
}
