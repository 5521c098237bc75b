// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.LeakCheck;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the cache's reads promise only over an off-heap tier, so not testable with the test kit's heap tier (the rest
 * of the facade's tests run in cache-core, over {@code HeapTier}): zero-copy views of the tier's memory, buffers that
 * fail once their lease is closed under {@link LeakDetection#PARANOID}; and the memory tier builder's messages.
 */
@Timeout(60)
class MemoryTierFacadeTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    @Test
    void underParanoidDetectionABufferKeptPastCloseFailsInsteadOfShowingOtherBytes() throws Exception {
        Dataset data = new Dataset(Files.createDirectories(temp.resolve("data")), 1);
        byte[] bytes = data.put("a", 10_000);
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data.root()))
                .tier(MemoryTier.builder().capacity(1 << 20).build())
                .leakDetection(LeakDetection.PARANOID)
                .build()) {
            Lease lease = cache.read("a");
            ByteBuffer kept = lease.bytes();
            MemorySegment keptSegment = lease.segment();
            Bytes.assertSame(bytes, kept, "readable while the lease is open");
            lease.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> kept.get(0));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
            assertThrows(IllegalStateException.class, () -> keptSegment.get(ValueLayout.JAVA_BYTE, 0));
            assertThrows(IllegalStateException.class, lease::bytes);
            assertEquals(0, cache.stats().openLeases());
            try (Lease again = cache.read("a")) {
                Bytes.assertSame(bytes, again.bytes(), "the page itself is intact and served again");
            }
        }
    }

    @Test
    void aReadWithinOnePageIsAZeroCopyViewOfTheTiersMemory() throws Exception {
        Dataset data = new Dataset(Files.createDirectories(temp.resolve("data")), 42);
        MemoryTier memory = MemoryTier.builder().capacity(64L << 20).build();
        TieredCache cache = leaks.watch(TieredCache.builder(PosixOrigin.of(data.root()))
                .tier(memory)
                .pageSize(64 << 10)
                .leakDetection(LeakDetection.PARANOID)
                .build());
        leaks.released("memory tier of " + cache, memory::isReleased);
        byte[] bytes = data.put("one-page", 10_000);
        try (Lease first = cache.read("one-page", 100, 5000);
                Lease second = cache.read("one-page", 100, 5000)) {
            Bytes.assertSame(data.range("one-page", 100, 5000), second.bytes(), "range");
            assertTrue(first.bytes().isDirect(), "off-heap, not a heap copy");
            assertTrue(first.bytes().isReadOnly(), "readers cannot write the cache's memory");
            assertEquals(
                    first.segment().address(),
                    second.segment().address(),
                    "two leases of one cached page view the same memory: no copy");
        }
        assertEquals(bytes.length, cache.stat("one-page").size());
    }

    @Test
    void memoryTierBuilderRejectsBadConfiguration() {
        MemoryTier.Builder b = MemoryTier.builder();
        assertMessage("memory tier capacity: 1000 bytes (expected: 64 KiB..1 TiB)", () -> b.capacity(1000));
        assertMessage("memory tier capacity: -1 bytes (expected: 64 KiB..1 TiB)", () -> b.capacity(-1));
        assertMessage("slab size: 4096 bytes (expected: 64 KiB..1 GiB)", () -> b.slabSize(4096));
        assertMessage(
                "eviction policy: null (expected: a factory such as WindowTinyLfuPolicy::new)", () -> b.policy(null));
        assertMessage("tier name: ' ' (expected: a non-blank name)", () -> b.name(" "));
        IllegalStateException e = assertThrows(IllegalStateException.class, b::build);
        assertEquals("memory tier capacity not set (expected: capacity(bytes) before build())", e.getMessage());
    }

    private static void assertMessage(String expected, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertEquals(expected, e.getMessage());
    }
}
