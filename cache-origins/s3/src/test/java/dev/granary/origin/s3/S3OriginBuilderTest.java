// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectInfo;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.sync.RequestBody;

/** Bad input: each a clear exception at build or first use, naming what is wrong. */
@Timeout(60)
class S3OriginBuilderTest {

    private static IllegalArgumentException rejects(Runnable setter) {
        return assertThrows(IllegalArgumentException.class, setter::run);
    }

    private static void assertMentions(Throwable e, String... parts) {
        for (String part : parts) {
            assertTrue(e.getMessage().contains(part), "'" + part + "' missing in: " + e.getMessage());
        }
    }

    @Test
    void badBucketNames() {
        for (String bad : new String[] {"s3://data", "ab", "-data", "data/train", "da ta"}) {
            assertMentions(rejects(() -> S3Origin.builder().bucket(bad)), "bucket: '" + bad + "'", "expected");
        }
        assertMentions(rejects(() -> S3Origin.builder().bucket(null)), "bucket: null");
        assertMentions(
                assertThrows(
                        IllegalStateException.class, () -> S3Origin.builder().build()),
                "bucket: not set");
    }

    @Test
    void badPrefixes() {
        for (String bad : new String[] {"/abs", "a/../b", "a//b", "./a"}) {
            assertMentions(rejects(() -> S3Origin.builder().prefix(bad)), "prefix: '" + bad + "'");
        }
        assertEquals(
                "imagenet/",
                S3Origin.builder()
                        .bucket("b-1")
                        .prefix("imagenet")
                        .region("us-east-1")
                        .credentials(S3ProxyServer.credentials())
                        .build()
                        .prefix());
    }

    @Test
    void badEndpointsRegionsAndLimits() {
        for (String bad : new String[] {"ftp://host", "localhost:9000", "http:///nohost", "http://h:1/?q=1"}) {
            assertMentions(rejects(() -> S3Origin.builder().endpoint(URI.create(bad))), "endpoint: " + bad);
        }
        assertMentions(rejects(() -> S3Origin.builder().endpoint(null)), "endpoint: null");
        assertMentions(rejects(() -> S3Origin.builder().region("US East")), "region: 'US East'");
        assertMentions(rejects(() -> S3Origin.builder().maxConcurrency(-1)), "max concurrency: -1", "1..4096");
        assertMentions(rejects(() -> S3Origin.builder().maxConcurrency(0)), "max concurrency: 0");
        assertMentions(rejects(() -> S3Origin.builder().maxAttempts(0)), "max attempts: 0");
        assertMentions(
                rejects(() -> S3Origin.builder().retryBudget(Duration.ofHours(2))),
                "retry budget: PT2H",
                "expected: 0 .. 1 h");
        assertMentions(rejects(() -> S3Origin.builder().retryBudget(null)), "retry budget: null");
        assertMentions(rejects(() -> S3Origin.builder().requestTimeout(Duration.ZERO)), "request timeout: PT0S");
        assertMentions(rejects(() -> S3Origin.builder().retryBackoff(Duration.ofMillis(-1))), "retry backoff");
        assertMentions(rejects(() -> S3Origin.builder().credentials(null)), "credentials: null");
    }

    @Test
    void keysTheCacheCannotAddressAreRejected() {
        try (S3Origin origin = S3Origin.builder()
                .bucket("b-1")
                .region("us-east-1")
                .credentials(S3ProxyServer.credentials())
                .build()) {
            assertMentions(rejects(() -> stat(origin, "a/../../etc")), "key: 'a/../../etc'");
            assertMentions(rejects(() -> stat(origin, "/abs")), "key: '/abs'");
            assertMentions(rejects(() -> stat(origin, "dir/")), "key: 'dir/'");
            assertMentions(rejects(() -> origin.checkKey("dir/")), "key: 'dir/'"); // what invalidate() asks
            origin.checkKey("dir/a");
        }
    }

    private static void stat(S3Origin origin, String key) {
        try {
            origin.stat(key);
        } catch (IOException e) {
            throw new AssertionError("expected an IllegalArgumentException before any request", e);
        }
    }

    @Test
    void aBucketThatDoesNotExistIsNamedNotMistakenForAMissingKey() throws Exception {
        S3ProxyServer server = S3ProxyServer.shared();
        try (S3Origin origin = S3Origin.builder()
                .bucket("no-such-bucket")
                .endpoint(server.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .build()) {
            IOException stat = assertThrows(IOException.class, () -> origin.stat("a.bin"));
            assertFalse(stat instanceof NoSuchObjectException, stat.toString());
            assertMentions(stat, "no such bucket: 'no-such-bucket'");
            IOException read = assertThrows(
                    IOException.class,
                    () -> origin.read(new ObjectInfo("a.bin", 10, "\"x\""), 0, MemorySegment.ofArray(new byte[10])));
            assertMentions(read, "no such bucket: 'no-such-bucket'");
            assertMentions(assertThrows(IOException.class, () -> origin.list("")), "no such bucket");
        }
    }

    @Test
    void wrongCredentialsSaySo() throws Exception {
        S3ProxyServer server = S3ProxyServer.shared();
        try (var client = server.client()) {
            client.createBucket(b -> b.bucket("creds"));
            client.putObject(b -> b.bucket("creds").key("a.bin"), RequestBody.fromBytes(new byte[10]));
        }
        try (S3Origin origin = S3Origin.builder()
                .bucket("creds")
                .endpoint(server.endpoint())
                .pathStyle(true)
                .credentials(StaticCredentialsProvider.create(AwsBasicCredentials.create("wrong", "wrong")))
                .build()) {
            IOException e = assertThrows(IOException.class, () -> origin.stat("a.bin"));
            assertMentions(e, "403", "check the credentials", "'creds'");
            assertEquals(0, origin.retries(), "an access error is not retried");
            assertMentions(assertThrows(IOException.class, () -> origin.list("")), "403");
        }
    }

    @Test
    void anEndpointWhereNothingListensFailsAfterItsAttempts() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        } // closed: nothing listens there now
        try (S3Origin origin = S3Origin.builder()
                .bucket("b-1")
                .endpoint(URI.create("http://127.0.0.1:" + port))
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .maxAttempts(2)
                .retryBackoff(Duration.ofMillis(1))
                .build()) {
            IOException e = assertThrows(IOException.class, () -> origin.stat("a.bin"));
            assertMentions(e, "HEAD of 'a.bin' in s3://b-1/", "after 2 attempts");
            assertEquals(1, origin.retries());
        }
    }

    @Test
    void useAfterCloseIsAnIllegalState() {
        S3Origin origin = S3Origin.builder()
                .bucket("b-1")
                .region("us-east-1")
                .credentials(S3ProxyServer.credentials())
                .build();
        origin.close();
        origin.close(); // idempotent
        assertMentions(assertThrows(IllegalStateException.class, () -> origin.stat("a")), "closed");
    }
}
