// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.FaultProxy;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.testkit.Await;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The object store goes away for a few seconds in the middle of an epoch, as when it restarts: with the origin's
 * default retry budget every batch still arrives, whole and right; with a short budget the failed batch's
 * {@link SampleException} says what the origin waited for. A server of this class's own (it is killed and restarted)
 * behind a {@link FaultProxy}, so the endpoint stays the same across the restart.
 */
@Timeout(180)
class LoaderOutageTest {

    private static final String BUCKET = "outage";
    private static final int OBJECTS = 48;
    private static final TreeMap<String, byte[]> objects = new TreeMap<>();
    private static Path dir;
    private static S3ProxyServer server;
    private static S3Client client;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @BeforeAll
    static void startServer() throws IOException {
        dir = Files.createTempDirectory("granary-loader-outage-");
        server = S3ProxyServer.start(dir.resolve("data"));
        client = server.client();
        client.createBucket(b -> b.bucket(BUCKET));
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < OBJECTS; i++) {
            byte[] bytes = new byte[4096 + random.nextInt(8192)];
            random.nextBytes(bytes);
            String key = String.format("train/%03d.bin", i);
            client.putObject(b -> b.bucket(BUCKET).key(key), RequestBody.fromBytes(bytes));
            objects.put(key, bytes);
        }
    }

    @AfterAll
    static void stopServer() throws Exception {
        client.close();
        server.close();
        S3ProxyServer.deleteTree(dir);
    }

    private TieredCache cache(S3Origin.Builder origin, FaultProxy proxy) {
        return LoaderFixture.cache(
                leaks,
                origin.bucket(BUCKET)
                        .endpoint(proxy.endpoint())
                        .pathStyle(true)
                        .credentials(S3ProxyServer.credentials())
                        .build(),
                32L << 20);
    }

    @Test
    void anOutageOfAFewSecondsMidEpochFailsNoBatch() throws Exception {
        try (FaultProxy proxy = FaultProxy.start(server.port());
                TieredCache cache = cache(S3Origin.builder(), proxy); // the origin's defaults
                DataLoader<LoaderFixture.Item> loader = DataLoader.builder(
                                Dataset.ofObjects(cache, "train/"), LoaderFixture::copy)
                        .batchSize(4)
                        .shuffle(7)
                        .workers(2)
                        .prefetch(2)
                        .build()) {
            AtomicInteger batches = new AtomicInteger();
            CompletableFuture<Double> outage = CompletableFuture.supplyAsync(
                    () -> {
                        Await.until(
                                () -> batches.get() >= 3, () -> "three batches before the outage: " + batches.get());
                        long down = System.nanoTime();
                        try {
                            server.kill();
                            Thread.sleep(Duration.ofSeconds(2)); // the outage, on top of the restart's own time
                            server.restart();
                            proxy.upstream(server.port());
                        } catch (IOException | InterruptedException e) {
                            throw new IllegalStateException("outage: " + e, e);
                        }
                        return (System.nanoTime() - down) / 1e9;
                    },
                    task -> Thread.ofVirtual().start(task));
            Set<String> seen = new HashSet<>();
            try (Epoch<LoaderFixture.Item> epoch = loader.epoch(0)) {
                for (Batch<LoaderFixture.Item> batch : epoch) { // a SampleException here fails the test
                    for (LoaderFixture.Item item : batch.items()) {
                        assertArrayEquals(objects.get(item.key()), item.bytes(), item.key());
                        assertTrue(seen.add(item.key()), "once: " + item.key());
                    }
                    batches.incrementAndGet();
                }
            }
            double seconds = outage.get();
            assertEquals(OBJECTS / 4, batches.get(), "every batch of the epoch");
            assertEquals(objects.keySet(), seen);
            assertEquals(0, loader.stats().failed());
            assertEquals(0, cache.stats().origin().errors(), "waited out, not failed");
            assertTrue(
                    cache.stats().origin().retries() > 0,
                    "the outage (" + seconds + " s) was waited out in" + " retries: "
                            + cache.stats().origin());
        } finally {
            client.close();
            client = server.client(); // the seeding client follows the server to its new port
        }
    }

    @Test
    void withAShortBudgetTheFailedBatchSaysWhatTheOriginWaitedFor() throws Exception {
        try (FaultProxy proxy = FaultProxy.start(server.port());
                TieredCache cache = cache(S3Origin.builder().retryBudget(Duration.ofMillis(500)), proxy);
                DataLoader<LoaderFixture.Item> loader = DataLoader.builder(
                                Dataset.ofKeys(
                                        cache, List.copyOf(objects.keySet()).subList(0, 8)),
                                LoaderFixture::copy)
                        .batchSize(4)
                        .workers(1)
                        .build();
                Epoch<LoaderFixture.Item> epoch = loader.epoch(0)) {
            proxy.failNext(100_000, 503, "SlowDown"); // the store sheds every request for longer than the budget
            var it = epoch.iterator();
            SampleException failed = assertThrows(SampleException.class, it::next);
            assertTrue(
                    failed.getMessage()
                            .matches("(?s)sample \\d 'train/00\\d\\.bin' of batch 0 of epoch 0 failed: "
                                    + ".*(HEAD|GET) of 'train/00\\d\\.bin' in s3://outage/ failed after \\d+ attempts"
                                    + " over \\d+\\.\\d"
                                    + " s: HTTP 503.*"),
                    failed.getMessage()); // a HEAD's 503 has no body, so no error code
            proxy.heal();
        }
    }
}
