// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code preTouch(true)}: the whole capacity is reserved at build, and the tier serves and evicts pages as usual. */
@Timeout(120)
class MemoryTierPreTouchTest {

    private static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    private static boolean fill(MemoryTier tier, PageKey key, byte[] bytes) {
        Page page = tier.allocate(key);
        if (page == null) {
            return false;
        }
        try {
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, page.writableSegment(), 0, bytes.length);
            page.seal();
            return tier.put(page);
        } finally {
            page.release();
        }
    }

    @Test
    void aPreTouchedTierReservesItsWholeCapacityAtBuild() {
        long capacity = 3 * (256L << 10) + 4096; // three whole slabs and a short one
        MemoryTier tier = MemoryTier.builder()
                .capacity(capacity)
                .slabSize(256L << 10)
                .preTouch(true)
                .build();
        try {
            assertEquals(capacity, tier.pinning().reservedBytes(), "reserved at build, before any page");
            assertEquals(0, tier.stats().usedBytes(), "nothing allocated yet");
        } finally {
            tier.close();
        }
        assertTrue(tier.isReleased(), "an empty pre-touched tier returns its memory at close");
    }

    @Test
    void anUntouchedTierReservesNothingUntilPagesArrive() {
        MemoryTier tier = MemoryTier.builder().capacity(1 << 20).build();
        try {
            assertEquals(0, tier.pinning().reservedBytes());
        } finally {
            tier.close();
        }
    }

    @Test
    void aPreTouchedTierServesAndEvictsPagesCorrectly() {
        long capacity = 1 << 20;
        MemoryTier tier = MemoryTier.builder()
                .capacity(capacity)
                .slabSize(256L << 10)
                .preTouch(true)
                .build();
        try {
            // Pages spread over every slab, each checked byte for byte, then far more than the capacity.
            for (int i = 0; i < 200; i++) {
                int size = 1 + new SplittableRandom(i).nextInt(60_000);
                byte[] content = bytes(size, i);
                PageKey key = new PageKey("t://", "obj-" + i, "v1", 0, size);
                fill(tier, key, content);
                Page page = tier.get(key);
                if (page != null) {
                    try {
                        byte[] read = page.segment().toArray(ValueLayout.JAVA_BYTE);
                        assertArrayEquals(content, read, "bytes of " + key);
                    } finally {
                        page.release();
                    }
                }
                assertTrue(tier.stats().usedBytes() <= capacity, "after " + i + ": " + tier.stats());
                assertEquals(capacity, tier.pinning().reservedBytes(), "never reserves beyond the capacity");
            }
            assertTrue(tier.stats().hits() > 100, "most pages were served: " + tier.stats());
            assertTrue(tier.stats().evictions() > 0, "200 pages of up to 60 KB in 1 MiB must evict: " + tier.stats());
            byte[] last = bytes(1000, 7);
            PageKey key = new PageKey("t://", "last", "v1", 0, 1000);
            assertTrue(fill(tier, key, last));
            Page page = tier.get(key);
            assertNotNull(page);
            try {
                assertArrayEquals(last, page.segment().toArray(ValueLayout.JAVA_BYTE));
            } finally {
                page.release();
            }
        } finally {
            tier.close();
        }
        assertTrue(tier.isReleased(), "every page released: the memory is returned");
    }

    @Test
    void preTouchAndPinnedTogetherLockOrReportAtBuild() {
        MemoryTier tier = MemoryTier.builder()
                .capacity(1 << 20)
                .pinned(true)
                .preTouch(true)
                .build();
        try {
            MemoryTier.Pinning pinning = tier.pinning();
            assertEquals(1 << 20, pinning.reservedBytes());
            assertTrue(pinning.complete() || pinning.failure().isPresent(), "locked at build, or why not: " + pinning);
        } finally {
            tier.close();
        }
    }
}
