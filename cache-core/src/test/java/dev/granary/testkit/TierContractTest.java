// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TierStats;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The contract every {@link Tier} keeps, run against each implementation (memory, disk). Every test ends by closing
 * the tier and checking that, once every page is released, the tier has given back all its resources: a test that
 * leaks a page reference fails.
 */
@Timeout(120)
public abstract class TierContractTest {

    protected static final String ORIGIN = "test://origin/";

    /** Creates a tier of the given capacity in bytes. */
    protected abstract Tier createTier(long capacity) throws Exception;

    /** Whether a closed tier has returned every resource (memory, mappings) — true only once nothing is held. */
    protected abstract boolean isReleased(Tier tier);

    /** A capacity small enough that the tests overflow it quickly, large enough to hold a few 64 KiB pages. */
    protected long smallCapacity() {
        return 1L << 20;
    }

    private final List<Tier> tiers = new ArrayList<>();
    private final SplittableRandom random = new SplittableRandom(11);

    protected Tier tier(long capacity) throws Exception {
        Tier tier = createTier(capacity);
        tiers.add(tier);
        return tier;
    }

    @AfterEach
    void everyTierReleasesEverything() {
        for (Tier tier : tiers) {
            tier.close();
            assertTrue(isReleased(tier), tier + " still holds resources after close: a page reference leaked");
        }
    }

    protected static PageKey key(String object, long offset, int length) {
        return new PageKey(ORIGIN, object, "v1", offset, length);
    }

    /** A sealed heap page, as the cache makes when no tier would allocate. */
    protected static Page heapPage(PageKey key, byte[] bytes) {
        Page page = unsealedHeapPage(key, bytes);
        page.seal();
        return page;
    }

    private static Page unsealedHeapPage(PageKey key, byte[] bytes) {
        return new Page(key, MemorySegment.ofArray(bytes.clone())) {
            @Override
            protected void deallocate() {}
        };
    }

    protected byte[] randomBytes(int n) {
        byte[] bytes = new byte[n];
        random.nextBytes(bytes);
        return bytes;
    }

    /** Fills a page the way the cache does: allocate (or heap), write, seal, put; returns whether it was stored. */
    protected boolean fill(Tier tier, PageKey key, byte[] bytes) {
        Page page = tier.allocate(key);
        if (page == null) {
            page = heapPage(key, bytes);
        } else {
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, page.writableSegment(), 0, bytes.length);
            page.seal();
        }
        try {
            return tier.put(page);
        } finally {
            page.release();
        }
    }

    @Test
    void missOnAnEmptyTierIsNullAndCounted() throws Exception {
        Tier tier = tier(smallCapacity());
        assertNull(tier.get(key("a", 0, 10)));
        TierStats stats = tier.stats();
        assertEquals(1, stats.misses());
        assertEquals(0, stats.hits());
        assertEquals(smallCapacity(), stats.capacityBytes());
    }

    @Test
    void allocatedPageRoundTrips() throws Exception {
        Tier tier = tier(smallCapacity());
        byte[] bytes = randomBytes(5000);
        PageKey key = key("obj", 0, bytes.length);
        assertTrue(fill(tier, key, bytes));
        Page page = tier.get(key);
        assertNotNull(page);
        try {
            assertEquals(key, page.key());
            Bytes.assertSame(bytes, page.buffer(), "bytes of the page");
            assertTrue(page.buffer().isReadOnly(), "readers get read-only views");
            assertTrue(page.segment().isReadOnly(), "readers get read-only views");
        } finally {
            page.release();
        }
        TierStats stats = tier.stats();
        assertEquals(1, stats.hits());
        assertEquals(5000, stats.hitBytes());
        assertTrue(stats.usedBytes() >= 5000, "used bytes count the page: " + stats);
    }

    @Test
    void foreignPageIsCopied() throws Exception {
        Tier tier = tier(smallCapacity());
        byte[] bytes = randomBytes(3000);
        PageKey key = key("foreign", 4096, bytes.length);
        Page foreign = heapPage(key, bytes);
        assertTrue(tier.put(foreign));
        foreign.release();
        Page page = tier.get(key);
        assertNotNull(page);
        try {
            Bytes.assertSame(bytes, page.buffer(), "bytes copied from a foreign page");
        } finally {
            page.release();
        }
    }

    @Test
    void putOfAnUnsealedPageIsRejected() throws Exception {
        Tier tier = tier(smallCapacity());
        Page page = unsealedHeapPage(key("unsealed", 0, 100), new byte[100]);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> tier.put(page));
        assertTrue(e.getMessage().contains("not sealed"), e.getMessage());
    }

    @Test
    void keysDifferingInVersionOrExtentAreDifferentPages() throws Exception {
        Tier tier = tier(smallCapacity());
        byte[] v1 = randomBytes(1000);
        assertTrue(fill(tier, new PageKey(ORIGIN, "k", "v1", 0, 1000), v1));
        assertNull(tier.get(new PageKey(ORIGIN, "k", "v2", 0, 1000)), "another version is another page");
        assertNull(tier.get(new PageKey(ORIGIN, "k", "v1", 0, 999)), "another extent is another page");
        assertNull(tier.get(new PageKey("other://", "k", "v1", 0, 1000)), "another origin is another page");
        Page page = tier.get(new PageKey(ORIGIN, "k", "v1", 0, 1000));
        assertNotNull(page);
        page.release();
    }

    @Test
    void invalidateDropsEveryVersionOfOneObjectOnly() throws Exception {
        Tier tier = tier(smallCapacity());
        fill(tier, new PageKey(ORIGIN, "x", "v1", 0, 100), randomBytes(100));
        fill(tier, new PageKey(ORIGIN, "x", "v2", 100, 100), randomBytes(100));
        fill(tier, new PageKey(ORIGIN, "y", "v1", 0, 100), randomBytes(100));
        fill(tier, new PageKey("other://", "x", "v1", 0, 100), randomBytes(100));
        tier.invalidate(ORIGIN, "x");
        assertNull(tier.get(new PageKey(ORIGIN, "x", "v1", 0, 100)));
        assertNull(tier.get(new PageKey(ORIGIN, "x", "v2", 100, 100)));
        Page y = tier.get(new PageKey(ORIGIN, "y", "v1", 0, 100));
        Page other = tier.get(new PageKey("other://", "x", "v1", 0, 100));
        assertNotNull(y, "another object stays");
        assertNotNull(other, "the same key of another origin stays");
        y.release();
        other.release();
    }

    @Test
    void aHeldPageSurvivesInvalidationAndEvictionUnchanged() throws Exception {
        Tier tier = tier(smallCapacity());
        byte[] bytes = randomBytes(60_000);
        PageKey key = key("held", 0, bytes.length);
        assertTrue(fill(tier, key, bytes));
        Page held = tier.get(key);
        assertNotNull(held);
        try {
            tier.invalidate(ORIGIN, "held");
            assertNull(tier.get(key), "invalidated");
            // Churn far more than the capacity through the tier: the held page's memory must not be reused.
            for (int i = 0; i < 100; i++) {
                fill(tier, key("churn-" + i, 0, 60_000), randomBytes(60_000));
            }
            Bytes.assertSame(bytes, held.buffer(), "a held page after invalidation and churn");
            assertTrue(tier.stats().usedBytes() <= tier.stats().capacityBytes());
        } finally {
            held.release();
        }
    }

    @Test
    void usedBytesNeverExceedCapacityAndEvictionHappens() throws Exception {
        Tier tier = tier(smallCapacity());
        for (int i = 0; i < 200; i++) {
            int size = 1 + random.nextInt(64 * 1024);
            fill(tier, key("fill-" + i, 0, size), randomBytes(size));
            TierStats stats = tier.stats();
            assertTrue(stats.usedBytes() <= stats.capacityBytes(), "after fill " + i + ": " + stats);
        }
        assertTrue(tier.stats().evictions() > 0, "200 pages of up to 64 KiB in 1 MiB must evict: " + tier.stats());
    }

    @Test
    void aPageLargerThanTheCapacityIsRefusedNotFatal() throws Exception {
        Tier tier = tier(smallCapacity());
        int size = (int) smallCapacity() + 1;
        PageKey key = key("huge", 0, size);
        assertFalse(fill(tier, key, new byte[size]), "a page larger than the tier cannot be held");
        assertNull(tier.get(key));
        assertTrue(tier.stats().rejections() > 0, "refusals are counted: " + tier.stats());
    }

    @Test
    void closedTierMissesAndRefuses() throws Exception {
        Tier tier = tier(smallCapacity());
        byte[] bytes = randomBytes(1000);
        PageKey key = key("c", 0, 1000);
        fill(tier, key, bytes);
        Page held = tier.get(key);
        assertNotNull(held);
        tier.close();
        tier.close(); // idempotent
        assertNull(tier.get(key), "a closed tier misses");
        assertNull(tier.allocate(key("d", 0, 10)), "a closed tier does not allocate");
        Page foreign = heapPage(key("e", 0, 10), new byte[10]);
        assertFalse(tier.put(foreign), "a closed tier refuses pages");
        Bytes.assertSame(bytes, held.buffer(), "a page held across close stays valid");
        assertFalse(isReleased(tier), "memory a reader holds is not freed");
        held.release();
        assertTrue(isReleased(tier), "the last release frees the memory");
    }

    @Test
    void concurrentFillsAndReadsNeverSeeWrongBytesOrExceedCapacity() throws Exception {
        Tier tier = tier(smallCapacity());
        int objects = 64;
        List<byte[]> contents = new ArrayList<>();
        for (int i = 0; i < objects; i++) {
            contents.add(randomBytes(8 * 1024 + i * 512));
        }
        AtomicBoolean done = new AtomicBoolean();
        AtomicLong maxUsed = new AtomicLong();
        Thread sampler = Thread.ofPlatform().start(() -> {
            while (!done.get()) {
                maxUsed.accumulateAndGet(tier.stats().usedBytes(), Math::max);
                Thread.onSpinWait();
            }
        });
        try {
            Concurrently.run(8, thread -> {
                SplittableRandom r = new SplittableRandom(thread);
                for (int i = 0; i < 2000; i++) {
                    int o = r.nextInt(objects);
                    byte[] bytes = contents.get(o);
                    PageKey key = key("obj-" + o, 0, bytes.length);
                    Page page = tier.get(key);
                    if (page == null) {
                        fill(tier, key, bytes);
                    } else {
                        try {
                            Bytes.assertSame(bytes, page.buffer(), "concurrent read of " + key);
                        } finally {
                            page.release();
                        }
                    }
                }
            });
        } finally {
            done.set(true);
            sampler.join();
        }
        assertTrue(maxUsed.get() <= smallCapacity(), "used bytes peaked at " + maxUsed + " > " + smallCapacity());
        TierStats stats = tier.stats();
        assertTrue(stats.hits() > 0 && stats.evictions() > 0, "the test must exercise hits and evictions: " + stats);
    }

    @Test
    void aHintServesHitsUntilThePageLeavesTheTier() throws Exception {
        Tier tier = tier(smallCapacity());
        Tier.Hints hints = tier.hints().orElse(null);
        if (hints == null) {
            return; // this tier offers no hints: nothing to check
        }
        byte[] bytes = randomBytes(2000);
        PageKey key = key("hinted", 0, bytes.length);
        assertTrue(fill(tier, key, bytes));
        Page page = tier.get(key);
        Object hint = hints.hint(page);
        page.release();
        assertNull(hints.hint(heapPage(key("foreign", 0, 1), new byte[1])), "no hint for another tier's page");
        assertNull(hints.touch(new Object()), "a foreign token is no hint");
        if (hint == null) {
            return; // this tier offers no hints: nothing more to check
        }
        long hits = tier.stats().hits();
        Page touched = hints.touch(hint);
        assertNotNull(touched);
        try {
            assertEquals(key, touched.key());
            Bytes.assertSame(bytes, touched.buffer(), "a page reached through its hint");
        } finally {
            touched.release();
        }
        assertEquals(hits + 1, tier.stats().hits(), "a touch is a hit");
        tier.invalidate(ORIGIN, "hinted");
        assertNull(hints.touch(hint), "an invalidated page is not reachable through its hint");
        assertEquals(hits + 1, tier.stats().hits(), "a failed touch counts nothing");
    }

    @Test
    void nameIsStable() throws Exception {
        Tier tier = tier(smallCapacity());
        assertNotNull(tier.name());
        assertSame(tier.name(), tier.name());
        assertEquals(tier.name(), tier.stats().name());
    }

    /** The cache asks for a tier's views once and keeps them: whether a view is offered must not change. */
    @Test
    void capabilityViewsAreStable() throws Exception {
        Tier tier = tier(smallCapacity());
        boolean hints = tier.hints().isPresent();
        boolean eviction = tier.eviction().isPresent();
        boolean durability = tier.durability().isPresent();
        boolean sharing = tier.sharing().isPresent();
        assertTrue(fill(tier, key("v", 0, 100), randomBytes(100)));
        tier.invalidate(ORIGIN, "v");
        assertEquals(hints, tier.hints().isPresent(), "hints()");
        assertEquals(eviction, tier.eviction().isPresent(), "eviction()");
        assertEquals(durability, tier.durability().isPresent(), "durability()");
        assertEquals(sharing, tier.sharing().isPresent(), "sharing()");
        tier.durability()
                .ifPresent(d -> assertEquals(
                        d.durable(), tier.durability().orElseThrow().durable()));
    }
}
