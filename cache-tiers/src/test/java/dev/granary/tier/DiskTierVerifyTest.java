// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DiskTier.Verify}: bytes overwritten in a segment file after their page was verified (the outside probe's case:
 * a stray writer, a tool, bit rot while the tier runs) are never served with {@code EVERY_READ}; with {@code ONCE} they
 * are, which is what the setting is for.
 */
@Timeout(120)
class DiskTierVerifyTest {

    private static final int[] SIZES = {4096, 128 << 10, 1 << 20};

    @TempDir
    Path dir;

    @Test
    void bytesOverwrittenAfterVerificationAreNeverServedWhenEveryReadIsChecked() throws IOException {
        try (DiskTier tier = tier(DiskTier.Verify.EVERY_READ)) {
            List<PageKey> keys = fill(tier);
            for (PageKey key : keys) {
                readAndRelease(tier, key); // verified now
            }
            SplittableRandom random = new SplittableRandom(7);
            for (PageKey key : keys) {
                DiskTier.Location at = tier.locate(key);
                overwrite(at.file(), at.payloadOffset() + random.nextInt(at.length()));
            }
            for (PageKey key : keys) {
                assertNull(tier.get(key), "a page whose bytes changed after its first read is a miss: " + key);
                assertNull(tier.locate(key), "and it left the index: " + key);
            }
            assertEquals(keys.size(), tier.stats().corruptions(), "each damaged page is counted once");
        }
    }

    @Test
    void withVerifyOnceTheSameDamageIsServedSoTheTestAboveCanFail() throws IOException {
        try (DiskTier tier = tier(DiskTier.Verify.ONCE)) {
            List<PageKey> keys = fill(tier);
            for (PageKey key : keys) {
                readAndRelease(tier, key);
            }
            for (PageKey key : keys) {
                DiskTier.Location at = tier.locate(key);
                overwrite(at.file(), at.payloadOffset());
            }
            for (PageKey key : keys) {
                Page page = tier.get(key);
                assertNotNull(page, key.toString());
                try {
                    assertFalse(
                            page.buffer().get(0) == bytes(key)[0],
                            "verified once: the overwritten byte is served (the window EVERY_READ closes)");
                } finally {
                    page.release();
                }
            }
            assertEquals(0, tier.stats().corruptions());
        }
    }

    @Test
    void throughACacheEveryReadServesTheOriginsBytesAfterRandomOverwrites() throws IOException {
        Path data = dir.resolve("data");
        Dataset dataset = new Dataset(data, 3);
        SplittableRandom random = new SplittableRandom(11);
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            String key = "obj-" + i;
            dataset.put(key, 1 + random.nextInt(300_000));
            keys.add(key);
        }
        DiskTier tier = tier(DiskTier.Verify.EVERY_READ);
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(tier)
                .pageSize(64 << 10)
                .build()) {
            for (int round = 0; round < 5; round++) {
                for (String key : keys) {
                    try (Lease lease = cache.read(key)) {
                        Bytes.assertSame(dataset.bytes(key), lease.bytes(), key + ", round " + round);
                    }
                }
                // Damage a few of the pages now cached, in place, while the tier runs.
                for (PageKey page : List.copyOf(tier.keys())) {
                    if (random.nextInt(4) == 0) {
                        DiskTier.Location at = tier.locate(page);
                        if (at != null) {
                            overwrite(at.file(), at.payloadOffset() + random.nextInt(at.length()));
                        }
                    }
                }
            }
            assertTrue(tier.stats().corruptions() > 0, "the damage was found: " + tier.stats());
        }
    }

    @Test
    void verifyRefusesNull() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> DiskTier.builder().verify(null));
        assertTrue(e.getMessage().contains("Verify.ONCE or Verify.EVERY_READ"), e.getMessage());
    }

    private DiskTier tier(DiskTier.Verify verify) throws IOException {
        return DiskTier.builder()
                .directory(dir.resolve("disk"))
                .capacity(64L << 20)
                .segmentSize(8L << 20)
                .verify(verify)
                .build();
    }

    /** Pages of each size, with bytes that {@link #bytes} can give again. */
    private static List<PageKey> fill(DiskTier tier) {
        List<PageKey> keys = new ArrayList<>();
        for (int size : SIZES) {
            for (int i = 0; i < 3; i++) {
                PageKey key = new PageKey("test://", "p-" + size + "-" + i, "v", 0, size);
                assertTrue(tier.put(sealed(key, bytes(key))), key.toString());
                keys.add(key);
            }
        }
        return keys;
    }

    private static byte[] bytes(PageKey key) {
        byte[] bytes = new byte[key.length()];
        new SplittableRandom(key.key().hashCode()).nextBytes(bytes);
        return bytes;
    }

    private static void readAndRelease(DiskTier tier, PageKey key) {
        Page page = tier.get(key);
        assertNotNull(page, key.toString());
        try {
            byte[] got = new byte[key.length()];
            page.buffer().duplicate().get(got);
            assertArrayEquals(bytes(key), got, key.toString());
        } finally {
            page.release();
        }
    }

    /** Overwrites one byte of a file in place (its inode and length stay), as a stray writer would. */
    private static void overwrite(Path file, long position) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            channel.read(one, position);
            one.put(0, (byte) (one.get(0) ^ 0x5A)).rewind();
            channel.write(one, position);
        }
    }

    private static Page sealed(PageKey key, byte[] bytes) {
        Page page = new Page(key, MemorySegment.ofArray(bytes.clone())) {
            @Override
            protected void deallocate() {}
        };
        page.seal();
        return page;
    }
}
