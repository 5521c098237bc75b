// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.testkit.HeapTier;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What the tier contract leaves open and {@link HeapTier} promises: LRU order, remove, the eviction listener. */
class HeapTierTest {

    private static PageKey key(String object, int length) {
        return new PageKey("test://heap/", object, "v1", 0, length);
    }

    /** Fills a page in place, as the cache does; returns whether the tier stored it. */
    private static boolean fill(HeapTier tier, PageKey key) {
        Page page = tier.allocate(key);
        if (page == null) {
            return false;
        }
        page.writableSegment().fill((byte) key.key().hashCode());
        page.seal();
        try {
            return tier.put(page);
        } finally {
            page.release();
        }
    }

    private static boolean holds(HeapTier tier, PageKey key) {
        Page page = tier.peek(key);
        if (page != null) {
            page.release();
        }
        return page != null;
    }

    @Test
    void theLeastRecentlyUsedPageGoesFirstAndPeekDoesNotCount() {
        HeapTier tier = new HeapTier(3000);
        PageKey a = key("a", 1000);
        PageKey b = key("b", 1000);
        PageKey c = key("c", 1000);
        assertTrue(fill(tier, a) && fill(tier, b) && fill(tier, c));
        tier.get(a).release(); // a is now the most recently used
        assertTrue(holds(tier, b), "peek neither counts nor reorders");
        assertTrue(fill(tier, key("d", 1000)));
        assertFalse(holds(tier, b), "b was the least recently used");
        assertTrue(holds(tier, a) && holds(tier, c));
        TierStats stats = tier.stats();
        assertEquals(1, stats.hits());
        assertEquals(0, stats.misses());
        assertEquals(1, stats.evictions());
        assertEquals(3000, stats.usedBytes());
        tier.close();
        assertTrue(tier.isReleased());
    }

    @Test
    void removeDropsOnePageAndTheListenerSeesEvictionsOnly() {
        HeapTier tier = new HeapTier(2000);
        List<PageKey> evicted = new ArrayList<>();
        List<Page> kept = new ArrayList<>();
        tier.evictionListener(page -> {
            evicted.add(page.key());
            if (kept.isEmpty() && page.tryRetain()) {
                kept.add(page); // the listener may keep an evicted page: its bytes stay counted
            }
        });
        PageKey a = key("a", 1000);
        PageKey b = key("b", 1000);
        assertTrue(fill(tier, a) && fill(tier, b));
        assertTrue(tier.remove(b));
        assertFalse(tier.remove(b), "already gone");
        tier.invalidate("test://heap/", "nothing");
        assertTrue(fill(tier, key("c", 1000)));
        assertTrue(evicted.isEmpty(), "room freed by remove: " + evicted);
        assertTrue(fill(tier, key("d", 1000)));
        assertEquals(List.of(a, key("c", 1000)), evicted, "a went first, and c too: the listener keeps a's bytes");
        assertEquals(2000, tier.stats().usedBytes(), "the kept page still counts, beside d");
        assertTrue(holds(tier, key("d", 1000)), "d stored");
        assertFalse(holds(tier, a) || holds(tier, key("c", 1000)));
        assertEquals(2, tier.stats().evictions(), "remove is no eviction");
        kept.forEach(Page::release);
        assertEquals(1000, tier.stats().usedBytes());
        tier.close();
        assertTrue(tier.isReleased());
    }

    @Test
    void aForeignPageIsCopiedAndAnUnsealedOneRefused() {
        HeapTier tier = new HeapTier(1 << 20);
        PageKey key = key("foreign", 100);
        Page foreign = new Page(key, MemorySegment.ofArray(new byte[100])) {
            @Override
            protected void deallocate() {}
        };
        assertThrows(IllegalArgumentException.class, () -> tier.put(foreign));
        foreign.seal();
        assertTrue(tier.put(foreign));
        assertEquals(1, foreign.refCnt(), "the caller's reference is neither consumed nor kept");
        Page copy = tier.get(key);
        assertNotNull(copy);
        assertFalse(copy == foreign, "a copy");
        copy.release();
        foreign.release();
        tier.close();
        assertNull(tier.get(key));
        assertTrue(tier.isReleased());
    }

    @Test
    void badArgumentsAreRefusedNamingTheValue() {
        assertEquals(
                "heap tier capacity: 0 bytes (expected: > 0)",
                assertThrows(IllegalArgumentException.class, () -> new HeapTier(0))
                        .getMessage());
        assertEquals(
                "tier name: ' ' (expected: a non-blank name)",
                assertThrows(IllegalArgumentException.class, () -> new HeapTier(" ", 1))
                        .getMessage());
        assertEquals("l1", new HeapTier("l1", 1).name());
    }
}
