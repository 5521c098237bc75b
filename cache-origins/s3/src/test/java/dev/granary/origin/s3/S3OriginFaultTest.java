// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.s3;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.Lease;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.origin.s3.testkit.FaultProxy;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.testkit.Await;
import dev.granary.testkit.Bytes;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.SdkHttpRequest;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The faults object stores have, injected by a loopback {@link FaultProxy} in front of a real S3 server of this
 * class's own (it gets killed and restarted): throttling bursts, connection resets, a server killed in the middle of a
 * read and brought back, a server that stops answering, an object overwritten while it is read.
 */
@Timeout(120)
class S3OriginFaultTest {

    private static final String BUCKET = "faults";
    private static Path dir;
    private static S3ProxyServer server;
    private static S3Client client;
    private FaultProxy proxy;
    private S3Origin origin;

    @BeforeAll
    static void startServer() throws IOException {
        dir = Files.createTempDirectory("granary-s3-faults-");
        server = S3ProxyServer.start(dir.resolve("data"));
        client = server.client();
        client.createBucket(b -> b.bucket(BUCKET));
    }

    @AfterAll
    static void stopServer() throws Exception {
        client.close();
        server.close();
        S3ProxyServer.deleteTree(dir);
    }

    @BeforeEach
    void startProxy() throws IOException {
        proxy = FaultProxy.start(server.port());
        origin = origin(5, Duration.ofSeconds(5));
    }

    @AfterEach
    void stopProxy() throws IOException {
        origin.close();
        proxy.close();
    }

    private S3Origin origin(int attempts, Duration requestTimeout) {
        return S3Origin.builder()
                .bucket(BUCKET)
                .endpoint(proxy.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .maxAttempts(attempts)
                .requestTimeout(requestTimeout)
                .retryBackoff(Duration.ofMillis(2))
                .build();
    }

    private static byte[] put(String key, int size, long seed) {
        byte[] bytes = new byte[size];
        new SplittableRandom(seed).nextBytes(bytes);
        client.putObject(b -> b.bucket(BUCKET).key(key), RequestBody.fromBytes(bytes));
        return bytes;
    }

    private byte[] read(ObjectInfo info) throws IOException {
        byte[] out = new byte[(int) info.size()];
        origin.read(info, 0, MemorySegment.ofArray(out));
        return out;
    }

    @Test
    void addedLatencyAndABandwidthCapSlowReadsButNeverBreakThem() throws Exception {
        byte[] bytes = put("slow.bin", 200_000, 10);
        proxy.latency(Duration.ofMillis(40)).bandwidth(2_000_000);
        ObjectInfo info = origin.stat("slow.bin");
        try (TieredCache cache = TieredCache.builder(origin)
                .tier(MemoryTier.builder().capacity(4L << 20).build())
                .pageSize(16 * 1024)
                .build()) {
            try (Lease lease = cache.read("slow.bin")) { // 13 pages fetched concurrently, each 40 ms away
                Bytes.assertSame(bytes, lease.bytes(), "slow.bin through latency and a bandwidth cap");
            }
            assertEquals(13, cache.stats().origin().reads());
            assertEquals(0, cache.stats().origin().retries(), "slow is not failed: nothing retried");
            assertEquals(info, cache.stat("slow.bin"));
        }
        origin = origin(5, Duration.ofSeconds(5)); // the cache closed the one it owned
    }

    @Test
    void aBurstOfSlowDownsIsRetriedAndCounted() throws Exception {
        byte[] bytes = put("burst.bin", 50_000, 1);
        ObjectInfo info = origin.stat("burst.bin");
        proxy.failNext(3);
        assertArrayEquals(bytes, read(info));
        assertEquals(3, proxy.injectedFailures());
        assertEquals(3, origin.retries(), "the direct GET's 503 is the first of the three retries");
        assertEquals(1, origin.directFallbacks());

        proxy.failNext(2);
        assertEquals(info, origin.stat("burst.bin"), "HEAD is retried too");
        assertEquals(5, origin.retries());
    }

    @Test
    void throttlingLongerThanTheAttemptsFailsClearly() throws Exception {
        put("throttled.bin", 1000, 2);
        ObjectInfo info = origin.stat("throttled.bin");
        proxy.failNext(100);
        IOException e = assertThrows(IOException.class, () -> read(info));
        assertTrue(e.getMessage().contains("after 5 attempts") && e.getMessage().contains("503"), e.getMessage());
        assertEquals(5, proxy.injectedFailures());
        assertEquals(4, origin.retries());
    }

    @Test
    void aConnectionResetMidBodyResumesFromTheMissingByte() throws Exception {
        byte[] bytes = put("reset.bin", 300_000, 3);
        ObjectInfo info = origin.stat("reset.bin");
        long before = proxy.responseBytes();
        proxy.resetNextResponseAfter(100_000);
        assertArrayEquals(bytes, read(info));
        assertEquals(1, proxy.resets());
        assertEquals(1, origin.retries());
        assertEquals(1, origin.directFallbacks(), "the direct GET broke off; the S3 client resumed it");
        long moved = proxy.responseBytes() - before;
        assertTrue(
                moved < bytes.length + 100_000 - 10_000,
                "the retry asks only for the bytes still missing; response bytes moved: " + moved);
    }

    @Test
    void aServerKilledMidReadFailsWithinTheTimeoutAndReadsRecoverWhenItIsBack() throws Exception {
        // Bigger than what the server can have pushed into socket buffers when it dies, paced by the proxy.
        byte[] bytes = put("killed.bin", 24 << 20, 4);
        ObjectInfo info = origin.stat("killed.bin");
        proxy.bandwidth(1 << 20);
        try (S3Origin impatient = origin(3, Duration.ofSeconds(2))) {
            CompletableFuture<byte[]> reading = CompletableFuture.supplyAsync(
                    () -> {
                        byte[] out = new byte[bytes.length];
                        try {
                            impatient.read(info, 0, MemorySegment.ofArray(out));
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                        return out;
                    },
                    task -> Thread.ofVirtual().start(task));
            long before = proxy.responseBytes();
            Await.until(() -> proxy.responseBytes() > before + 100_000, () -> "the read has started");
            server.kill();
            proxy.bandwidth(0); // what the dead server had sent goes through at once; then the body breaks off
            ExecutionException failed = assertTimeoutPreemptively(
                    Duration.ofSeconds(30), () -> assertThrows(ExecutionException.class, reading::get));
            assertTrue(
                    failed.getCause() instanceof UncheckedIOException,
                    failed.getCause().toString());
            IOException cause = (IOException) failed.getCause().getCause();
            assertTrue(
                    cause.getMessage().contains("killed.bin")
                            && cause.getMessage().contains("attempt"),
                    cause.getMessage());
        } finally {
            proxy.heal();
            server.restart();
            proxy.upstream(server.port());
            client.close();
            client = server.client(); // the seeding client follows the server to its new port
        }
        assertArrayEquals(bytes, read(info), "the same version, read again once the server is back");
        assertEquals(info, origin.stat("killed.bin"));
    }

    @Test
    void aServerThatStopsAnsweringTimesOutInsteadOfHanging() throws Exception {
        put("silent.bin", 1000, 5);
        ObjectInfo info = origin.stat("silent.bin");
        proxy.blackhole(true);
        try (S3Origin impatient = origin(2, Duration.ofMillis(500))) {
            IOException read = assertTimeoutPreemptively(
                    Duration.ofSeconds(20),
                    () -> assertThrows(
                            IOException.class, () -> impatient.read(info, 0, MemorySegment.ofArray(new byte[1000]))));
            assertTrue(
                    read.getMessage().contains("silent.bin")
                            && read.getMessage().contains("2 attempt"),
                    read.getMessage());
            IOException stat = assertTimeoutPreemptively(
                    Duration.ofSeconds(20), () -> assertThrows(IOException.class, () -> impatient.stat("silent.bin")));
            assertTrue(stat.getMessage().contains("after 2 attempts"), stat.getMessage());
        }
    }

    @Test
    void aReadPinnedToAnOverwrittenVersionFails() throws Exception {
        put("pinned.bin", 10_000, 6);
        ObjectInfo old = origin.stat("pinned.bin");
        put("pinned.bin", 10_000, 7);
        ObjectChangedException e = assertThrows(ObjectChangedException.class, () -> read(old));
        assertEquals(old.version(), e.expectedVersion());
        assertEquals(0, origin.retries(), "a 412 is an answer, not a fault");
    }

    @Test
    void aStoreThatIgnoresIfMatchStillCannotServeAnotherVersion() throws Exception {
        put("ignored.bin", 10_000, 11);
        ObjectInfo old = origin.stat("ignored.bin");
        put("ignored.bin", 10_000, 12);
        // A gateway that drops If-Match: the header is removed before the request is signed and sent.
        try (S3Client careless = S3Client.builder()
                        .endpointOverride(proxy.endpoint())
                        .forcePathStyle(true)
                        .region(Region.US_EAST_1)
                        .credentialsProvider(S3ProxyServer.credentials())
                        .overrideConfiguration(o -> o.retryStrategy(AwsRetryStrategy.doNotRetry())
                                .addExecutionInterceptor(new ExecutionInterceptor() {
                                    @Override
                                    public SdkHttpRequest modifyHttpRequest(
                                            Context.ModifyHttpRequest context, ExecutionAttributes attributes) {
                                        return context.httpRequest().toBuilder()
                                                .removeHeader("If-Match")
                                                .build();
                                    }
                                }))
                        .build();
                S3Origin pinnedByEtagOnly =
                        S3Origin.builder().bucket(BUCKET).client(careless).build()) {
            ObjectChangedException e = assertThrows(
                    ObjectChangedException.class,
                    () -> pinnedByEtagOnly.read(old, 0, MemorySegment.ofArray(new byte[10_000])));
            assertEquals(old.version(), e.expectedVersion());
            assertEquals(origin.stat("ignored.bin").version(), e.actualVersion(), "the version actually served");
        }
    }

    @Test
    void withoutIfMatchTheResponseEtagStillPinsTheRead() throws Exception {
        byte[] first = put("etag-only.bin", 10_000, 13);
        try (S3Origin etagOnly = S3Origin.builder()
                .bucket(BUCKET)
                .endpoint(proxy.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .ifMatch(false)
                .build()) {
            ObjectInfo old = etagOnly.stat("etag-only.bin");
            byte[] out = new byte[10_000];
            etagOnly.read(old, 0, MemorySegment.ofArray(out));
            assertArrayEquals(first, out);
            put("etag-only.bin", 10_000, 14);
            ObjectChangedException e = assertThrows(
                    ObjectChangedException.class, () -> etagOnly.read(old, 0, MemorySegment.ofArray(new byte[10_000])));
            assertEquals(etagOnly.stat("etag-only.bin").version(), e.actualVersion());
        }
    }

    @Test
    void anObjectOverwrittenWhileTheCacheReadsItIsNeverServedMixed() throws Exception {
        int pageSize = 16 * 1024;
        byte[] first = put("epoch/shard.bin", 20 * pageSize, 8);
        try (TieredCache cache = TieredCache.builder(origin)
                .tier(MemoryTier.builder().capacity(4L << 20).build())
                .pageSize(pageSize)
                .metadataTtl(Duration.ofHours(1)) // the cache keeps trusting the old version: pinning must catch it
                .build()) {
            try (Lease head = cache.read("epoch/shard.bin", 0, pageSize)) { // page 0 of the old version cached
                Bytes.assertSame(Arrays.copyOf(first, pageSize), head.bytes(), "page 0");
            }
            byte[] second = put("epoch/shard.bin", 20 * pageSize, 9);
            try (Lease whole = cache.read("epoch/shard.bin")) {
                byte[] got = Bytes.toArray(whole.bytes());
                assertTrue(
                        Arrays.equals(got, second),
                        "all bytes of the new version (the cache re-learned it after a 412), never a mix");
            }
            try (Lease again = cache.read("epoch/shard.bin", 0, pageSize)) {
                Bytes.assertSame(
                        Arrays.copyOf(second, pageSize),
                        again.bytes(),
                        "the old version's page is not served once the new version is known");
            }
        }
        origin = origin(5, Duration.ofSeconds(5)); // the cache closed the one it owned
    }

    /**
     * The store goes away for a few seconds in the middle of a run of reads (killed, then restarted over the same data)
     * and an origin with the default settings rides it out: every read returns the right bytes, none fails, and the
     * wait shows as counted retries. (With the old default of 5 attempts 50 ms apart, reads failed within a second.)
     */
    @Test
    void withTheDefaultsAFewSecondsOutageMidRunFailsNoRead() throws Exception {
        int objects = 16;
        byte[][] bytes = new byte[objects][];
        ObjectInfo[] infos = new ObjectInfo[objects];
        try (S3Origin patient = S3Origin.builder()
                .bucket(BUCKET)
                .endpoint(proxy.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .build()) {
            for (int i = 0; i < objects; i++) {
                bytes[i] = put("outage/" + i + ".bin", 64 * 1024, 100 + i);
                infos[i] = patient.stat("outage/" + i + ".bin");
            }
            AtomicInteger reads = new AtomicInteger();
            AtomicInteger readsAfterBack = new AtomicInteger();
            AtomicBoolean back = new AtomicBoolean();
            CompletableFuture<Void> run = CompletableFuture.runAsync(
                    () -> {
                        byte[] out = new byte[64 * 1024];
                        for (int i = 0; !back.get() || readsAfterBack.get() < 2 * objects; i++) {
                            try {
                                patient.read(infos[i % objects], 0, MemorySegment.ofArray(out));
                            } catch (IOException e) {
                                throw new UncheckedIOException("read " + i + " failed", e);
                            }
                            assertArrayEquals(bytes[i % objects], out, "read " + i);
                            reads.incrementAndGet();
                            if (back.get()) {
                                readsAfterBack.incrementAndGet();
                            }
                        }
                    },
                    task -> Thread.ofVirtual().start(task));
            Await.until(() -> reads.get() >= objects, () -> "the run has started: " + reads.get() + " reads");
            long down = System.nanoTime();
            try {
                server.kill();
                Thread.sleep(Duration.ofSeconds(2)); // the outage itself, on top of the restart's own time
            } finally {
                server.restart();
                proxy.upstream(server.port());
                client.close();
                client = server.client();
                back.set(true);
            }
            double outage = (System.nanoTime() - down) / 1e9;
            int readsBefore = reads.get();
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> run.get()); // a failed read fails here
            assertTrue(outage >= 2 && outage < 15, "an outage of a few seconds: " + outage + " s");
            assertTrue(
                    patient.retries() > 0,
                    "the outage was waited out in retries: " + patient.retries() + " over an outage of " + outage
                            + " s, " + readsBefore + " reads before it ended");
            assertTrue(reads.get() >= readsBefore + 2 * objects, "reads went on after the outage: " + reads.get());
        }
    }

    /** A short retry budget gives up in about that time, and the message says what the request waited for. */
    @Test
    void aRequestGivenUpSaysHowManyAttemptsOverHowLong() throws Exception {
        put("budget.bin", 1000, 20);
        try (S3Origin brief = S3Origin.builder()
                .bucket(BUCKET)
                .endpoint(proxy.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .retryBudget(Duration.ofMillis(800))
                .build()) {
            ObjectInfo info = brief.stat("budget.bin");
            proxy.failNext(10_000);
            long start = System.nanoTime();
            IOException e =
                    assertThrows(IOException.class, () -> brief.read(info, 0, MemorySegment.ofArray(new byte[1000])));
            double took = (System.nanoTime() - start) / 1e9;
            Matcher m = Pattern.compile("GET of 'budget\\.bin' in s3://faults/ failed"
                            + " after (\\d+) attempts over (\\d+\\.\\d) s: HTTP 503 SlowDown: .*")
                    .matcher(e.getMessage());
            assertTrue(m.matches(), e.getMessage());
            int attempts = Integer.parseInt(m.group(1));
            double over = Double.parseDouble(m.group(2));
            assertTrue(attempts >= 2, e.getMessage());
            assertEquals(attempts - 1, brief.retries(), "every attempt after the first is a counted retry");
            assertEquals(attempts, proxy.injectedFailures());
            assertTrue(
                    over >= 0.8 && over <= took + 0.05,
                    "the budget was used, and reported: " + over + " s of " + took + " s");
            proxy.heal();
        }
    }
}
