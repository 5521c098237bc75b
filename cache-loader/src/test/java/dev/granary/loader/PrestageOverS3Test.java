// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.PrestageResult;
import dev.granary.Progress;
import dev.granary.TieredCache;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * {@link TieredCache#prestage} against a real S3 server (S3Proxy): a prefix staged into a disk tier through
 * {@link S3Origin}, then a new cache over the reopened directory runs a shuffled loader epoch over
 * {@link Dataset#ofObjects} (one object of three pages) and reads every object whole with zero origin data reads;
 * a second prestage finds all staged; a missing bucket fails at once with the origin's error.
 */
@Timeout(120)
class PrestageOverS3Test {

    private static final String BUCKET = "prestage-" + Long.toHexString(System.nanoTime()) + "-"
            + ProcessHandle.current().pid();
    private static final int OBJECTS = 57;
    private static final int PAGE = 64 << 10;
    private static final TreeMap<String, byte[]> objects = new TreeMap<>();
    private static S3ProxyServer server;
    private static S3Client client;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path root;

    @BeforeAll
    static void upload() throws IOException {
        server = S3ProxyServer.shared();
        client = server.client();
        client.createBucket(b -> b.bucket(BUCKET));
        SplittableRandom random = new SplittableRandom(23);
        for (int i = 0; i < OBJECTS; i++) {
            // Up to a page each (a sample of Dataset.ofObjects is then exactly a cache page), one of three pages.
            byte[] bytes = new byte[i == 5 ? 3 * PAGE - 17 : 1 + random.nextInt(PAGE)];
            random.nextBytes(bytes);
            String key = String.format("train/%04d.jpg", i);
            client.putObject(b -> b.bucket(BUCKET).key(key), RequestBody.fromBytes(bytes));
            objects.put(key, bytes);
        }
        client.putObject(b -> b.bucket(BUCKET).key("val/0.jpg"), RequestBody.fromBytes(new byte[10]));
    }

    @AfterAll
    static void closeClient() {
        if (client != null) {
            client.close();
        }
    }

    private TieredCache cache(String bucket, Path disk) {
        S3Origin origin = S3Origin.builder()
                .bucket(bucket)
                .endpoint(server.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .retryBackoff(Duration.ofMillis(2))
                .maxConcurrency(8)
                .build();
        MemoryTier memory = MemoryTier.builder().capacity(8L << 20).build();
        DiskTier tier = DiskTier.builder().directory(disk).capacity(32L << 20).build();
        return leaks.watch(TieredCache.builder(origin)
                .tier(memory)
                .tier(tier)
                .pageSize(PAGE)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }

    @Test
    void aStagedDiskTierServesTheFirstEpochWithoutOriginReads() throws Exception {
        Path disk = root.resolve("nvme");
        long total = objects.values().stream().mapToLong(b -> b.length).sum();
        List<Progress> seen = new CopyOnWriteArrayList<>();
        try (TieredCache cache = cache(BUCKET, disk)) {
            PrestageResult r = cache.prestage("train/", seen::add);
            assertTrue(r.complete(), r.toString());
            assertEquals(OBJECTS, r.objects());
            assertEquals(total, r.bytes());
            assertEquals(0, r.alreadyCached());
            assertEquals(OBJECTS + 2, cache.stats().origin().reads(), "one GET per page: one object has three");
            assertEquals(total, cache.stats().origin().bytes());
            assertEquals(OBJECTS, seen.getLast().objectsTotal());
            assertTrue(seen.getLast().bytesPerSecond() > 0);
        }
        // The training job: a new cache over the staged directory.
        try (TieredCache cache = cache(BUCKET, disk)) {
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            int seenSamples = 0;
            try (DataLoader<LoaderFixture.Item> loader = DataLoader.builder(dataset, LoaderFixture::copy)
                            .batchSize(8)
                            .shuffle(7)
                            .workers(2)
                            .prefetch(2)
                            .build();
                    Epoch<LoaderFixture.Item> epoch = loader.epoch(0)) {
                for (Batch<LoaderFixture.Item> batch : epoch) {
                    for (LoaderFixture.Item item : batch.items()) {
                        assertArrayEquals(objects.get(item.key()), item.bytes(), item.key());
                        seenSamples++;
                    }
                }
            }
            assertEquals(OBJECTS, seenSamples);
            // The one object of three pages is one extent to the loader: served from its three staged pages.
            assertEquals(
                    0,
                    cache.stats().origin().reads(),
                    "first epoch: " + cache.stats().origin());
            long before = cache.stats().origin().reads();
            for (Map.Entry<String, byte[]> e : objects.entrySet()) {
                try (Lease lease = cache.read(e.getKey())) {
                    ByteBuffer b = lease.bytes();
                    byte[] got = new byte[b.remaining()];
                    b.get(got);
                    assertArrayEquals(e.getValue(), got, e.getKey());
                }
            }
            assertEquals(before, cache.stats().origin().reads(), "whole reads: zero origin data reads");

            PrestageResult again = cache.prestage("train/", p -> {});
            assertEquals(OBJECTS, again.alreadyCached(), "a second prestage finds everything staged");
            assertEquals(0, again.bytesFetched());
            assertEquals(before, cache.stats().origin().reads());
        }
    }

    @Test
    void aMissingBucketFailsAtOnce() {
        try (TieredCache cache =
                cache("no-such-bucket-" + ProcessHandle.current().pid(), root.resolve("d"))) {
            IOException e = assertThrows(IOException.class, () -> cache.prestage("train/", p -> {}));
            assertTrue(e.getMessage().contains("no-such-bucket"), e.getMessage());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
