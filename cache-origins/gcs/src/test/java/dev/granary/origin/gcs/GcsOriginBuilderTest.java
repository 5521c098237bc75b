// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.gcs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.cloud.storage.contrib.nio.testing.LocalStorageHelper;
import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Bad input: each a clear exception naming the value and what was expected. */
class GcsOriginBuilderTest {

    private static void assertMentions(Throwable e, String... parts) {
        for (String part : parts) {
            assertTrue(e.getMessage().contains(part), "'" + part + "' missing in: " + e.getMessage());
        }
    }

    private static IllegalArgumentException rejects(Runnable setter) {
        return assertThrows(IllegalArgumentException.class, setter::run);
    }

    @Test
    void badSettings() {
        for (String bad : new String[] {"gs://data", "ab", "Data", "data/x"}) {
            assertMentions(rejects(() -> GcsOrigin.builder().bucket(bad)), "bucket: '" + bad + "'");
        }
        assertMentions(rejects(() -> GcsOrigin.builder().prefix("/x")), "prefix: '/x'");
        assertMentions(rejects(() -> GcsOrigin.builder().host("localhost:9199")), "host: 'localhost:9199'");
        assertMentions(rejects(() -> GcsOrigin.builder().host("not a uri")), "host: 'not a uri'");
        assertMentions(rejects(() -> GcsOrigin.builder().maxConcurrency(-1)), "max concurrency: -1");
        assertMentions(rejects(() -> GcsOrigin.builder().maxAttempts(0)), "max attempts: 0");
        assertMentions(rejects(() -> GcsOrigin.builder().requestTimeout(Duration.ZERO)), "request timeout");
        assertMentions(rejects(() -> GcsOrigin.builder().projectId(" ")), "project id");
        assertMentions(rejects(() -> GcsOrigin.builder().credentials(null)), "credentials: null");
        assertMentions(
                assertThrows(
                        IllegalStateException.class, () -> GcsOrigin.builder().build()),
                "bucket: not set");
    }

    @Test
    void keysTheCacheCannotAddressAreRejectedBeforeAnyRequest() throws IOException {
        try (GcsOrigin origin = GcsOrigin.builder()
                .bucket("b-1")
                .storage(LocalStorageHelper.customOptions(false).getService())
                .build()) {
            assertMentions(
                    rejects(() -> {
                        try {
                            origin.stat("a/../../x");
                        } catch (IOException e) {
                            throw new AssertionError(e);
                        }
                    }),
                    "key: 'a/../../x'");
            assertEquals("gs://b-1/", origin.uri().toString());
        }
    }

    @Test
    void anEmulatorHostIsAccepted() throws IOException {
        try (GcsOrigin origin = GcsOrigin.builder()
                .bucket("b-1")
                .host("http://127.0.0.1:9199")
                .projectId("demo")
                .build()) {
            assertEquals("gs://b-1/", origin.uri().toString());
        }
    }
}
