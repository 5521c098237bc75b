// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.s3;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.origin.s3.testkit.FaultProxy;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The direct ranged GET (decision 0012) against a real S3 server (S3Proxy, with a {@link FaultProxy} in front): the
 * same bytes as the S3 client's path for many ranges and awkward keys, its counters (so a direct path that silently
 * stopped being used fails here), and every answer that is not the data — a missing object, a changed version, a
 * range past the end, wrong credentials, a dead endpoint, a store's wrong headers or short body — ending exactly as
 * it does through the S3 client, never with wrong bytes.
 */
@Timeout(120)
class S3OriginDirectGetTest {

    private static final AtomicInteger BUCKETS = new AtomicInteger();
    private static S3ProxyServer server;
    private static S3Client client;
    private String bucket;
    private FaultProxy proxy;
    private S3Origin direct;
    private S3Origin sdk;

    @BeforeAll
    static void startServer() throws IOException {
        server = S3ProxyServer.shared();
        client = server.client();
    }

    @AfterAll
    static void closeClient() {
        client.close();
    }

    @BeforeEach
    void startProxy() throws IOException {
        bucket = "direct-" + BUCKETS.incrementAndGet();
        client.createBucket(b -> b.bucket(bucket));
        proxy = FaultProxy.start(server.port());
        direct = builder().build();
        sdk = builder().directGet(false).build();
        assertTrue(direct.directGet(), "the direct path applies to an origin that makes its own client");
        assertFalse(sdk.directGet());
    }

    @AfterEach
    void stopProxy() throws IOException {
        direct.close();
        sdk.close();
        proxy.close();
    }

    private S3Origin.Builder builder() {
        return S3Origin.builder()
                .bucket(bucket)
                .prefix("root")
                .endpoint(proxy.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .maxAttempts(5)
                .retryBackoff(Duration.ofMillis(1));
    }

    private byte[] put(String key, int size, long seed) {
        byte[] bytes = new byte[size];
        new SplittableRandom(seed).nextBytes(bytes);
        client.putObject(b -> b.bucket(bucket).key("root/" + key), RequestBody.fromBytes(bytes));
        return bytes;
    }

    private static byte[] read(S3Origin origin, ObjectInfo info, long position, int length) throws IOException {
        byte[] out = new byte[length];
        origin.read(info, position, MemorySegment.ofArray(out));
        return out;
    }

    @Test
    void theDirectPathReadsTheSameBytesAsTheS3ClientForManyRangesAndKeys() throws Exception {
        int page = 16 * 1024;
        String[] keys = {
            "plain.bin",
            "dir/sub dir/a+b=c&d.bin",
            "ünï/cödé/€ 1.bin",
            "tilde~star*(paren)!'.bin",
            "percent%20and%2F.bin",
            "semi;colon:at@dollar$,comma.bin",
            "./dot/x.bin",
            "question?hash#.bin",
            "caret^back`pipe|brace{}.bin"
        };
        // Not "a//b": S3Proxy's filesystem backend refuses the S3 client's own PUT of it (signature mismatch).
        int[] sizes = {1, 4095, 64 * 1024, 64 * 1024 + 1, 5 * page + 123, 300_000, 16 * 1024, 1000, 70_000};
        int reads = 0;
        for (int k = 0; k < keys.length; k++) {
            byte[] bytes = put(keys[k], sizes[k], k);
            ObjectInfo info = direct.stat(keys[k]);
            assertEquals(sdk.stat(keys[k]), info);
            List<long[]> ranges = new ArrayList<>();
            for (long at = 0; at < bytes.length; at += page) { // every page, the last one partial
                ranges.add(new long[] {at, Math.min(page, bytes.length - at)});
            }
            ranges.add(new long[] {0, bytes.length}); // the whole object
            ranges.add(new long[] {bytes.length - 1, 1}); // the last byte
            ranges.add(new long[] {0, 1}); // the first byte
            if (bytes.length > 64 * 1024 + 2) {
                ranges.add(new long[] {64 * 1024 - 1, 3}); // across a transfer-buffer boundary
            }
            for (long[] r : ranges) {
                byte[] expected = Arrays.copyOfRange(bytes, (int) r[0], (int) (r[0] + r[1]));
                String what = keys[k] + " [" + r[0] + ", +" + r[1] + ")";
                assertArrayEquals(expected, read(direct, info, r[0], (int) r[1]), "direct: " + what);
                assertArrayEquals(expected, read(sdk, info, r[0], (int) r[1]), "S3 client: " + what);
                reads++;
            }
            // Empty reads send nothing, at the start and at the end.
            assertEquals(0, read(direct, info, 0, 0).length);
            assertEquals(0, read(direct, info, bytes.length, 0).length);
        }
        assertEquals(reads, direct.directReads(), "every non-empty read of the direct origin went the direct path");
        assertEquals(0, direct.directFallbacks(), "and none fell back to the S3 client");
        assertEquals(0, direct.retries());
        assertEquals(0, sdk.directReads());
    }

    @Test
    void manyThreadsShareTheConnectionsAndReadTheRightBytes() throws Exception {
        int objects = 24;
        byte[][] bytes = new byte[objects][];
        ObjectInfo[] infos = new ObjectInfo[objects];
        for (int i = 0; i < objects; i++) {
            bytes[i] = put("par/" + i, 40_000 + i, 100 + i);
            infos[i] = direct.stat("par/" + i);
        }
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < 8; t++) {
            int first = t;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    for (int round = 0; round < 3; round++) {
                        for (int j = 0; j < objects; j++) {
                            int i = (first * 3 + j) % objects;
                            assertArrayEquals(bytes[i], read(direct, infos[i], 0, bytes[i].length), "par/" + i);
                        }
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        assertEquals(List.of(), failures);
        assertEquals(8L * 3 * objects, direct.directReads());
        assertEquals(0, direct.directFallbacks());
    }

    @Test
    void aMissingObjectIsNoSuchObjectAsThroughTheS3Client() {
        put("present.bin", 10, 1); // the bucket exists
        ObjectInfo ghost = new ObjectInfo("ghost.bin", 100, "\"0123456789abcdef0123456789abcdef\"");
        NoSuchObjectException viaDirect = assertThrows(NoSuchObjectException.class, () -> read(direct, ghost, 0, 100));
        NoSuchObjectException viaSdk = assertThrows(NoSuchObjectException.class, () -> read(sdk, ghost, 0, 100));
        assertEquals(viaSdk.getMessage(), viaDirect.getMessage());
        assertEquals(1, direct.directFallbacks());
        assertEquals(0, direct.directReads());
        assertEquals(0, direct.retries(), "a 404 is an answer, not a fault");
    }

    @Test
    void aChangedObjectIsObjectChangedAndNoByteOfTheNewVersionLands() throws Exception {
        put("changing.bin", 50_000, 2);
        ObjectInfo old = direct.stat("changing.bin");
        put("changing.bin", 50_000, 3);
        byte[] out = new byte[50_000];
        Arrays.fill(out, (byte) 0x5A);
        ObjectChangedException e =
                assertThrows(ObjectChangedException.class, () -> direct.read(old, 0, MemorySegment.ofArray(out)));
        assertEquals(old.version(), e.expectedVersion());
        assertTrue(allEqual(out, (byte) 0x5A), "nothing of the other version was written");
        assertEquals(1, direct.directFallbacks());
        assertEquals(0, direct.retries(), "a 412 is an answer, not a fault");

        // Without If-Match the store serves the new version; the ETag check refuses its bytes on both paths.
        try (S3Origin unconditional = builder().ifMatch(false).build()) {
            assertTrue(unconditional.directGet());
            ObjectChangedException refused = assertThrows(
                    ObjectChangedException.class, () -> unconditional.read(old, 0, MemorySegment.ofArray(out)));
            assertEquals(direct.stat("changing.bin").version(), refused.actualVersion());
            assertTrue(allEqual(out, (byte) 0x5A), "nothing of the other version was written");
            assertEquals(1, unconditional.directFallbacks());
        }
    }

    @Test
    void aRangePastTheEndIsEofAsThroughTheS3Client() throws Exception {
        put("short.bin", 1000, 4);
        ObjectInfo claimed =
                new ObjectInfo("short.bin", 5000, direct.stat("short.bin").version());
        EOFException viaDirect = assertThrows(EOFException.class, () -> read(direct, claimed, 2000, 100));
        EOFException viaSdk = assertThrows(EOFException.class, () -> read(sdk, claimed, 2000, 100));
        assertEquals(viaSdk.getMessage(), viaDirect.getMessage());
        assertTrue(viaDirect.getMessage().contains("416"), viaDirect.getMessage());
        assertEquals(1, direct.directFallbacks());
        assertEquals(0, direct.retries());
    }

    @Test
    void wrongCredentialsAreRefusedAsThroughTheS3Client() throws Exception {
        put("secret.bin", 1000, 5);
        ObjectInfo info = direct.stat("secret.bin");
        var wrong = StaticCredentialsProvider.create(AwsBasicCredentials.create(S3ProxyServer.IDENTITY, "not-it"));
        try (S3Origin badDirect = builder().credentials(wrong).build();
                S3Origin badSdk = builder().credentials(wrong).directGet(false).build()) {
            IOException viaDirect = assertThrows(IOException.class, () -> read(badDirect, info, 0, 1000));
            IOException viaSdk = assertThrows(IOException.class, () -> read(badSdk, info, 0, 1000));
            assertEquals(viaSdk.getMessage(), viaDirect.getMessage());
            assertTrue(viaDirect.getMessage().contains("refused (403"), viaDirect.getMessage());
            assertEquals(1, badDirect.directFallbacks());
            assertEquals(0, badDirect.directReads());
            assertEquals(0, badDirect.retries());
        }
    }

    @Test
    void aDeadEndpointFailsClearlyAfterItsAttempts() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort(); // closed again: nothing listens there
        }
        try (S3Origin dead = S3Origin.builder()
                .bucket(bucket)
                .endpoint(URI.create("http://127.0.0.1:" + port))
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .maxAttempts(3)
                .retryBackoff(Duration.ofMillis(1))
                .requestTimeout(Duration.ofSeconds(2))
                .build()) {
            assertTrue(dead.directGet());
            byte[] out = new byte[100];
            IOException e = assertThrows(
                    IOException.class,
                    () -> dead.read(new ObjectInfo("x.bin", 100, "\"e\""), 0, MemorySegment.ofArray(out)));
            assertTrue(
                    e.getMessage().startsWith("GET of 'x.bin' in s3://" + bucket + "/ failed after 3 attempts"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("refused") || e.getMessage().contains("Connect"), e.getMessage());
            assertEquals(1, dead.directFallbacks());
            assertEquals(2, dead.retries(), "the direct attempt counts as the first of the three");
        }
    }

    @Test
    void aStoreThatAnswersTheWrongRangeOrCutsTheBodyShortNeverServesWrongBytes() throws Exception {
        byte[] bytes = put("wrong.bin", 30_000, 6);
        ObjectInfo info = direct.stat("wrong.bin");
        byte[] garbage = new byte[1000];
        Arrays.fill(garbage, (byte) 0x77);
        int fallbacks = 0;

        // A 206 for another range than asked for (headers otherwise right): refused, asked again via the S3 client.
        proxy.answerNext(response(206, info.version(), "bytes 1000-1999/30000", 1000, garbage));
        assertArrayEquals(Arrays.copyOfRange(bytes, 0, 1000), read(direct, info, 0, 1000));
        assertEquals(++fallbacks, direct.directFallbacks());

        // A Content-Length other than the range's.
        proxy.answerNext(response(206, info.version(), "bytes 0-999/30000", 500, Arrays.copyOf(garbage, 500)));
        assertArrayEquals(Arrays.copyOfRange(bytes, 0, 1000), read(direct, info, 0, 1000));
        assertEquals(++fallbacks, direct.directFallbacks());

        // Another ETag than the version read.
        proxy.answerNext(response(206, "\"other\"", "bytes 0-999/30000", 1000, garbage));
        assertArrayEquals(Arrays.copyOfRange(bytes, 0, 1000), read(direct, info, 0, 1000));
        assertEquals(++fallbacks, direct.directFallbacks());

        // A 200 with the whole object for a part of it.
        proxy.answerNext(response(200, info.version(), null, 1000, garbage));
        assertArrayEquals(Arrays.copyOfRange(bytes, 0, 1000), read(direct, info, 0, 1000));
        assertEquals(++fallbacks, direct.directFallbacks());

        // A body cut short: its first bytes are the object's, kept; the rest is resumed through the S3 client.
        byte[] head = Arrays.copyOfRange(bytes, 2000, 2400);
        proxy.answerNext(response(206, info.version(), "bytes 2000-2999/30000", 1000, head));
        assertArrayEquals(Arrays.copyOfRange(bytes, 2000, 3000), read(direct, info, 2000, 1000));
        assertEquals(++fallbacks, direct.directFallbacks());
        assertEquals(1, direct.retries(), "a body cut short is a fault: a counted retry");

        // A 503: a fault, retried through the S3 client after a backoff.
        proxy.failNext(1);
        assertArrayEquals(Arrays.copyOfRange(bytes, 0, 1000), read(direct, info, 0, 1000));
        assertEquals(++fallbacks, direct.directFallbacks());
        assertEquals(2, direct.retries());
        assertEquals(6, proxy.injectedFailures());
        assertEquals(0, direct.directReads());

        read(direct, info, 0, 1000);
        assertEquals(1, direct.directReads(), "the direct path is back for the next read");
    }

    @Test
    void theDirectPathIsOffWhereItDoesNotApplyOrIsTurnedOff() throws Exception {
        try (S3Client own = server.client();
                S3Origin given = S3Origin.builder().bucket(bucket).client(own).build()) {
            assertFalse(given.directGet(), "a client passed in is used as it is");
        }
        try (S3Origin express = S3Origin.builder()
                .bucket("train--usw2-az1--x-s3")
                .region("us-west-2")
                .credentials(S3ProxyServer.credentials())
                .build()) {
            assertFalse(express.directGet(), "directory buckets keep the SDK's session handling");
        }
        String before = System.getProperty("granary.s3.directGet");
        try {
            System.setProperty("granary.s3.directGet", "false");
            try (S3Origin off = builder().build()) {
                assertFalse(off.directGet(), "the system property turns it off");
                put("prop.bin", 100, 7);
                read(off, off.stat("prop.bin"), 0, 100);
                assertEquals(0, off.directReads());
            }
            System.setProperty("granary.s3.directGet", "true");
            try (S3Origin on = builder().build()) {
                assertTrue(on.directGet());
            }
            System.setProperty("granary.s3.directGet", "yes");
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> builder().build());
            assertEquals("system property granary.s3.directGet: 'yes' (expected: true or false)", e.getMessage());
        } finally {
            if (before == null) {
                System.clearProperty("granary.s3.directGet");
            } else {
                System.setProperty("granary.s3.directGet", before);
            }
        }
    }

    private static boolean allEqual(byte[] bytes, byte value) {
        for (byte b : bytes) {
            if (b != value) {
                return false;
            }
        }
        return true;
    }

    /** A whole HTTP/1.1 response with these headers and body (the body may be shorter than the length). */
    private static byte[] response(int status, String etag, String contentRange, long contentLength, byte[] body)
            throws IOException {
        StringBuilder head = new StringBuilder("HTTP/1.1 " + status + " Canned\r\n");
        head.append("ETag: ").append(etag).append("\r\n");
        if (contentRange != null) {
            head.append("Content-Range: ").append(contentRange).append("\r\n");
        }
        head.append("Content-Length: ").append(contentLength).append("\r\n");
        head.append("Content-Type: application/octet-stream\r\n\r\n");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        return out.toByteArray();
    }
}
