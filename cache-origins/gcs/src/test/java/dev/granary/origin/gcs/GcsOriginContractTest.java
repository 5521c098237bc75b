// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.gcs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.cloud.WriteChannel;
import com.google.cloud.storage.BlobId;
import com.google.cloud.storage.BlobInfo;
import com.google.cloud.storage.Storage;
import com.google.cloud.storage.contrib.nio.testing.LocalStorageHelper;
import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import dev.granary.testkit.OriginContractTest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * The origin contract against google-cloud-nio's {@code LocalStorageHelper}: Google's in-process fake of the storage
 * client's RPC layer, the only GCS stand-in that runs on this machine (no network; the Firebase emulator and
 * fake-gcs-server cannot be installed — BUILD.md).
 *
 * <p><b>What this covers:</b> {@link GcsOrigin}'s own logic on the real {@code google-cloud-storage} client objects —
 * stat (size, generation as the version; a rewrite gets a new generation), ranged reads through {@code ReadChannel}
 * (seek, limit), missing and deleted objects, prefixes, folder markers, the key rules, and concurrent reads.
 * <p><b>What it does not:</b> generation pinning — the fake serves the live bytes whatever generation or
 * {@code ifGenerationMatch} a read names (checked: {@link #detectsChangedVersions()} is false, so the contract only
 * requires a new version and the new bytes after a rewrite); HTTP (status codes, retries and the resumption of a
 * broken body are driven through a fault-injecting wrapper in {@link GcsOriginFaultTest}; timeouts are not tested);
 * pagination (the fake returns one page); list order (the fake lists in hash order: {@link #listsInUtf8Order()} is
 * false, so only the set of keys is checked); credentials; a missing bucket.
 */
class GcsOriginContractTest extends OriginContractTest {

    private static final String BUCKET = "contract";

    @Override
    protected boolean listsInUtf8Order() {
        return false;
    }

    @Override
    protected boolean detectsChangedVersions() {
        return false;
    }

    @Override
    protected boolean writes() {
        return true;
    }

    @Override
    protected Fixture createFixture() {
        Storage storage = LocalStorageHelper.customOptions(false).getService();
        write(storage, "rootless.txt", new byte[] {1});
        GcsOrigin origin = GcsOrigin.builder()
                .bucket(BUCKET)
                .prefix("root/")
                .storage(storage)
                .build();
        return new Fixture() {
            @Override
            public void put(String key, byte[] bytes) throws Exception {
                write(storage, "root/" + key, bytes);
            }

            @Override
            public void delete(String key) {
                storage.delete(BlobId.of(BUCKET, "root/" + key));
            }

            @Override
            public Origin origin() {
                return origin;
            }
        };
    }

    /** Writes through a WriteChannel, which is how the fake assigns generations. */
    private static void write(Storage storage, String name, byte[] bytes) {
        try (WriteChannel writer =
                storage.writer(BlobInfo.newBuilder(BUCKET, name).build())) {
            writer.write(ByteBuffer.wrap(bytes));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void theUriNamesBucketAndPrefix() {
        assertEquals("gs://contract/root/", origin.uri().toString());
    }

    @Test
    void versionsAreGenerations() throws Exception {
        fixture.put("g.bin", new byte[10]);
        long first = Long.parseLong(origin.stat("g.bin").version());
        fixture.put("g.bin", new byte[10]);
        assertTrue(Long.parseLong(origin.stat("g.bin").version()) > first);
    }

    @Test
    void aVersionThatIsNotAGenerationIsRejected() throws Exception {
        fixture.put("g.bin", new byte[10]);
        var e = assertThrows(
                IllegalArgumentException.class,
                () -> origin.read(new ObjectInfo("g.bin", 10, "\"etag\""), 0, MemorySegment.ofArray(new byte[10])));
        assertTrue(e.getMessage().contains("expected: a GCS generation"), e.getMessage());
    }
}
