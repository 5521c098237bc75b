// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.spi.EvictionPolicy;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.testkit.Concurrently;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The memory tier's slot table ({@link MemorySlots}): stale hints, slot and name reuse, custom policies told by key,
 * and many threads leasing, filling, evicting and removing the same keys at once.
 */
@Timeout(180)
class MemoryTierSlotsTest {

    private static PageKey key(int object, int page, int length) {
        return new PageKey("t://", "obj-" + object, "v1", (long) page * 65536, length);
    }

    /** Bytes that name their page: a page served for another key is caught. */
    private static byte[] content(PageKey key) {
        byte[] b = new byte[key.length()];
        new SplittableRandom(key.hashCode()).nextBytes(b);
        return b;
    }

    private static boolean fill(MemoryTier tier, PageKey key) {
        Page page = tier.allocate(key);
        if (page == null) {
            return false;
        }
        try {
            MemorySegment.copy(MemorySegment.ofArray(content(key)), 0, page.writableSegment(), 0, key.length());
            page.seal();
            return tier.put(page);
        } finally {
            page.release();
        }
    }

    private static void assertBytes(PageKey key, Page page) {
        assertEquals(key, page.key());
        assertArrayEquals(content(key), page.segment().toArray(ValueLayout.JAVA_BYTE), "bytes of " + key);
    }

    @Test
    void aHintNeverReachesTheNextPageInItsSlot() {
        MemoryTier tier = MemoryTier.builder().capacity(64 << 10).build();
        try {
            PageKey first = key(1, 0, 1000);
            assertTrue(fill(tier, first));
            Page page = tier.get(first);
            Object hint = tier.hint(page);
            page.release();
            assertNotNull(hint);
            assertTrue(tier.remove(first));
            PageKey second = key(2, 0, 1000); // takes the freed slot
            assertTrue(fill(tier, second));
            assertNull(tier.touch(hint), "the hint's page left: its slot now holds another page");
            assertTrue(fill(tier, first)); // the same key again, in some slot: still another stay
            assertNull(tier.touch(hint), "a hint names one stay in the index, not a key");
            Page again = tier.get(first);
            Object fresh = tier.hint(again);
            again.release();
            Page touched = tier.touch(fresh);
            assertNotNull(touched);
            assertBytes(first, touched);
            touched.release();
        } finally {
            tier.close();
        }
        assertTrue(tier.isReleased());
    }

    @Test
    void slotsAndNamesAreReusedNotGrown() {
        MemoryTier tier = MemoryTier.builder().capacity(1 << 20).build();
        try {
            for (int round = 0; round < 5; round++) {
                for (int i = 0; i < 100; i++) {
                    assertTrue(fill(tier, key(i % 10, i, 512)));
                }
                assertEquals(100, tier.pageCount());
                assertEquals(10, tier.slots().nameCount(), "one name per object, not per page");
                for (int o = 0; o < 10; o++) {
                    tier.invalidate("t://", "obj-" + o);
                }
                assertEquals(0, tier.pageCount());
                assertEquals(0, tier.slots().nameCount(), "no name outlives its pages");
            }
            assertTrue(tier.slots().toString().contains("slots=100,"), "ids reused: " + tier.slots());
        } finally {
            tier.close();
        }
        assertTrue(tier.isReleased());
    }

    @Test
    void aPageLeasedAcrossItsEvictionKeepsItsSlotUntilReleased() {
        MemoryTier tier =
                MemoryTier.builder().capacity(64 << 10).slabSize(64 << 10).build();
        try {
            PageKey held = key(0, 0, 8000);
            assertTrue(fill(tier, held));
            Page lease = tier.get(held);
            for (int i = 1; i < 200; i++) { // far more than the capacity
                fill(tier, key(i, 0, 8000));
            }
            assertBytes(held, lease);
            assertTrue(tier.stats().usedBytes() <= 64 << 10);
            lease.release();
        } finally {
            tier.close();
        }
        assertTrue(tier.isReleased());
    }

    /** A custom policy gets keys: for inserts, hits (by key and by hint), removals; its evictions go through. */
    @Test
    void aCustomPolicyIsToldByKeyAndEvictsByKey() {
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        EvictionPolicy.Evictor[] evictor = new EvictionPolicy.Evictor[1];
        EvictionPolicy.Factory factory = (capacity, e) -> {
            evictor[0] = e;
            return new EvictionPolicy() {
                @Override
                public void recordAccess(PageKey key) {
                    events.add("access " + key.key());
                }

                @Override
                public boolean admit(PageKey key, long weight) {
                    return !key.key().equals("obj-9");
                }

                @Override
                public void recordInsert(PageKey key, long weight) {
                    events.add("insert " + key.key() + " " + weight);
                }

                @Override
                public void recordRemoval(PageKey key) {
                    events.add("removal " + key.key());
                }

                @Override
                public long evict(long bytes) {
                    return 0;
                }
            };
        };
        MemoryTier tier = MemoryTier.builder().capacity(1 << 20).policy(factory).build();
        List<PageKey> evicted = new ArrayList<>();
        tier.evictionListener(page -> evicted.add(page.key()));
        try {
            PageKey a = key(1, 0, 1000);
            PageKey b = key(2, 0, 600);
            assertTrue(fill(tier, a));
            assertTrue(fill(tier, b));
            assertFalse(fill(tier, key(9, 0, 10)), "the policy refused it");
            Page page = tier.get(a);
            Object hint = tier.hint(page);
            page.release();
            tier.touch(hint).release();
            assertTrue(evictor[0].evict(b));
            assertFalse(evictor[0].evict(b), "gone already");
            assertNull(tier.get(b));
            assertTrue(tier.remove(a));
            assertEquals(
                    List.of("insert obj-1 1024", "insert obj-2 1024", "access obj-1", "access obj-1", "removal obj-1"),
                    events);
            assertEquals(List.of(b), evicted, "the listener saw the policy's eviction");
            assertEquals(0, tier.slots().nameCount());
        } finally {
            tier.close();
        }
        assertTrue(tier.isReleased());
    }

    /**
     * Eight threads on 48 keys (three objects of 16 pages) in a tier that holds about a third of them: lookups by key
     * and by hint, fills, removals and invalidations of the same keys at once, with leases held across other threads'
     * evictions. Every page read has its own key's bytes; used bytes never pass the capacity; at the end every lease
     * is released, every name forgotten and every byte returned.
     */
    @Test
    void manyThreadsLeasingFillingAndEvictingTheSameKeys() throws Exception {
        int capacity = 256 << 10;
        MemoryTier tier =
                MemoryTier.builder().capacity(capacity).slabSize(64 << 10).build();
        List<PageKey> keys = new ArrayList<>();
        for (int o = 0; o < 3; o++) {
            for (int p = 0; p < 16; p++) {
                keys.add(key(o, p, 2000 + 977 * ((o * 16 + p) % 17)));
            }
        }
        AtomicBoolean done = new AtomicBoolean();
        AtomicLong maxUsed = new AtomicLong();
        AtomicLong reads = new AtomicLong();
        Thread sampler = Thread.ofPlatform().start(() -> {
            while (!done.get()) {
                maxUsed.accumulateAndGet(tier.stats().usedBytes(), Math::max);
                Thread.onSpinWait();
            }
        });
        try {
            Concurrently.run(8, thread -> {
                SplittableRandom r = new SplittableRandom(thread * 31L + 7);
                Object[] hints = new Object[keys.size()];
                Page kept = null;
                for (int i = 0; i < 20_000; i++) {
                    int k = r.nextInt(keys.size());
                    PageKey key = keys.get(k);
                    int op = r.nextInt(100);
                    if (op < 50) {
                        Page page = hints[k] != null && r.nextBoolean() ? tier.touch(hints[k]) : tier.get(key);
                        if (page == null) {
                            fill(tier, key);
                        } else {
                            assertBytes(key, page);
                            reads.incrementAndGet();
                            hints[k] = tier.hint(page);
                            if (kept == null && r.nextInt(8) == 0) {
                                kept = page; // held while others evict
                            } else {
                                page.release();
                            }
                        }
                    } else if (op < 85) {
                        fill(tier, key);
                    } else if (op < 95) {
                        tier.remove(key);
                    } else if (op < 97) {
                        tier.invalidate(key.origin(), key.key());
                    } else if (kept != null) {
                        assertBytes(kept.key(), kept);
                        kept.release();
                        kept = null;
                    }
                }
                if (kept != null) {
                    assertBytes(kept.key(), kept);
                    kept.release();
                }
            });
        } finally {
            done.set(true);
            sampler.join();
        }
        assertTrue(maxUsed.get() <= capacity, "used bytes peaked at " + maxUsed + " > " + capacity);
        assertTrue(
                reads.get() > 1000 && tier.stats().evictions() > 100,
                "exercised hits and evictions: " + reads + " reads, " + tier.stats());
        int pages = tier.pageCount();
        assertTrue(
                tier.slots().nameCount() <= 3 && pages <= keys.size(),
                tier.slots().toString());
        // Every page left in the index is whole and findable.
        int found = 0;
        for (PageKey key : keys) {
            Page page = tier.peek(key);
            if (page != null) {
                assertBytes(key, page);
                page.release();
                found++;
            }
        }
        assertEquals(pages, found);
        tier.close();
        assertTrue(tier.isReleased(), "a lease leaked or a slot was freed twice: " + tier.slots());
        assertEquals(0, tier.slots().nameCount());
        assertSame(null, tier.get(keys.getFirst()));
    }
}
