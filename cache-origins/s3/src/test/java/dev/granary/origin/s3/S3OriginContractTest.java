// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.granary.ObjectInfo;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.spi.Origin;
import dev.granary.testkit.OriginContractTest;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The origin contract against a real S3 server: S3Proxy 4.1.0 on loopback, started by the test build. Every fixture
 * is a fresh bucket with the origin rooted at the prefix {@code root/}, and a decoy object beside that prefix that
 * must never show up.
 */
class S3OriginContractTest extends OriginContractTest {

    private static final AtomicInteger BUCKETS = new AtomicInteger();

    /**
     * S3Proxy's filesystem backend lists in Java {@code String} (UTF-16) order, which differs from S3's UTF-8 byte
     * order for keys mixing characters above U+FFFF with ones in U+E000..U+FFFF; real S3 lists in UTF-8 order and
     * {@code S3Origin} passes its order through unchanged. The order of ordinary keys is checked below.
     */
    @Override
    protected boolean listsInUtf8Order() {
        return false;
    }

    @Override
    protected boolean writes() {
        return true;
    }

    @Override
    protected Fixture createFixture() throws Exception {
        S3ProxyServer server = S3ProxyServer.shared();
        S3Client client = server.client();
        String bucket = "contract-" + BUCKETS.incrementAndGet();
        client.createBucket(b -> b.bucket(bucket));
        client.putObject(b -> b.bucket(bucket).key("rootless.txt"), RequestBody.fromString("outside the prefix"));
        S3Origin origin = S3Origin.builder()
                .bucket(bucket)
                .prefix("root")
                .endpoint(server.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .retryBackoff(Duration.ofMillis(1))
                .build();
        return new Fixture() {
            @Override
            public void put(String key, byte[] bytes) {
                client.putObject(b -> b.bucket(bucket).key("root/" + key), RequestBody.fromBytes(bytes));
            }

            @Override
            public void delete(String key) {
                client.deleteObject(b -> b.bucket(bucket).key("root/" + key));
            }

            @Override
            public Origin origin() {
                return origin;
            }

            @Override
            public void close() {
                origin.close();
                client.close();
            }
        };
    }

    @Test
    void theUriNamesBucketAndPrefix() {
        assertEquals("s3", origin.uri().getScheme());
        assertEquals(((S3Origin) origin).bucket(), origin.uri().getHost());
        assertEquals("/root/", origin.uri().getPath());
    }

    @Test
    void listingSkipsFolderMarkersAndPagesThroughManyKeys() throws Exception {
        for (int i = 0; i < 1_250; i++) { // more than one ListObjectsV2 page of 1 000
            fixture.put(String.format("many/%05d", i), new byte[] {(byte) i});
        }
        fixture.put("many/folder/", new byte[0]);
        try (Stream<ObjectInfo> listed = origin.list("many/")) {
            var keys = listed.map(ObjectInfo::key).toList();
            assertEquals(1_250, keys.size());
            assertEquals(keys.stream().sorted().toList(), keys, "in order across pages");
            assertEquals("many/00000", keys.getFirst());
            assertEquals("many/01249", keys.getLast());
        }
    }
}
