// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tier of someone else's that implements only what the {@link Tier} SPI requires — {@code name}, {@code get},
 * {@code put}, {@code invalidate}, {@code stats}, {@code close} — reports every capability view empty, and works in a
 * {@link TieredCache}: inclusive and exclusive, under a loader's epochs, and through close (no carry-on-close for it);
 * a dry run refuses it by name.
 */
class ThirdPartyTierTest {

    private static final int PAGE = 1024;

    @TempDir
    Path dir;

    @Test
    void aTierWithOnlyTheRequiredMethodsOffersNoView() {
        try (MapTier tier = new MapTier("mine")) {
            assertTrue(tier.hints().isEmpty(), "hints");
            assertTrue(tier.eviction().isEmpty(), "eviction");
            assertTrue(tier.durability().isEmpty(), "durability");
            assertTrue(tier.sharing().isEmpty(), "sharing");
            assertTrue(tier.simulation().isEmpty(), "simulation");
        }
    }

    @Test
    void inclusiveReadsFillEveryTierAndHitTheFirst() throws IOException {
        byte[] bytes = write("a", 3 * PAGE + 100);
        MapTier upper = new MapTier("upper");
        MapTier lower = new MapTier("lower");
        try (TieredCache cache = cache(Tiering.INCLUSIVE, upper, lower)) {
            assertArrayEquals(bytes, read(cache, "a"));
            assertEquals(4, upper.pages.size(), "a fill goes to every tier");
            assertEquals(4, lower.pages.size(), "a fill goes to every tier");
            long reads = cache.stats().origin().reads();
            assertArrayEquals(bytes, read(cache, "a"));
            assertEquals(reads, cache.stats().origin().reads(), "the second read hits");
            assertTrue(cache.stats().tiers().get(0).hits() >= 4, cache.stats().toString());

            upper.pages.clear(); // a hit below is copied up
            assertArrayEquals(bytes, read(cache, "a"));
            assertEquals(4, upper.pages.size());
            assertEquals(reads, cache.stats().origin().reads());

            byte[] small = write("s", 100); // one page: the first page's path, without hints
            assertArrayEquals(small, read(cache, "s"));
            assertArrayEquals(small, read(cache, "s"));
            assertEquals(reads + 1, cache.stats().origin().reads());
        }
        assertTrue(upper.closed && lower.closed, "the cache closes its tiers");
    }

    @Test
    void exclusiveTieringAndALoaderWorkWithoutViews() throws IOException {
        byte[] a = write("a", 2 * PAGE);
        byte[] b = write("b", 2 * PAGE);
        MapTier upper = new MapTier("upper");
        MapTier lower = new MapTier("lower");
        TieredCache cache = cache(Tiering.EXCLUSIVE, upper, lower);
        try {
            assertArrayEquals(a, read(cache, "a"));
            assertEquals(2, upper.pages.size(), "exclusive: the first tier that takes a fill keeps it");
            assertEquals(0, lower.pages.size());

            // A hit below is moved up; the tier below cannot drop single pages (no remove), so it keeps its copy.
            lower.pages.putAll(upper.pages);
            upper.pages.clear();
            assertArrayEquals(a, read(cache, "a"));
            assertEquals(2, upper.pages.size(), "moved into the first tier above");
            assertEquals(2, lower.pages.size(), "a tier without remove keeps its copy");

            try (EpochDriver driver = cache.loaderSupport().driver()) {
                driver.startEpoch();
                assertArrayEquals(b, read(cache, "b"));
                assertEquals(4, upper.pages.size(), "driven: a fill goes to the first tier that takes it");
                driver.endEpoch();
                IllegalStateException refused = assertThrows(
                        IllegalStateException.class, () -> cache.loaderSupport().simulation(driver));
                assertTrue(refused.getMessage().contains("tier 'upper'"), refused.getMessage());
                assertTrue(refused.getMessage().contains("offers no simulation"), refused.getMessage());
            }
        } finally {
            long puts = upper.puts.get() + lower.puts.get();
            cache.close();
            assertEquals(puts, upper.puts.get() + lower.puts.get(), "nothing is carried at close without durability");
        }
        assertTrue(upper.closed && lower.closed);
    }

    private TieredCache cache(Tiering tiering, Tier... tiers) {
        TieredCache.Builder builder =
                TieredCache.builder(PosixOrigin.of(dir)).pageSize(PAGE).tiering(tiering);
        for (Tier tier : tiers) {
            builder.tier(tier);
        }
        return builder.build();
    }

    private byte[] write(String key, int size) throws IOException {
        byte[] bytes = new byte[size];
        new Random(key.hashCode()).nextBytes(bytes);
        Files.write(dir.resolve(key), bytes);
        return bytes;
    }

    private static byte[] read(TieredCache cache, String key) throws IOException {
        try (Lease lease = cache.read(key)) {
            ByteBuffer buffer = lease.bytes();
            byte[] bytes = new byte[buffer.remaining()];
            buffer.get(bytes);
            return bytes;
        }
    }

    /** A minimal tier: a map of page copies on the heap, unbounded, with only the required methods. */
    private static final class MapTier implements Tier {
        private final String name;
        final Map<PageKey, byte[]> pages = new ConcurrentHashMap<>();
        private final AtomicLong hits = new AtomicLong();
        private final AtomicLong misses = new AtomicLong();
        final AtomicLong puts = new AtomicLong();
        volatile boolean closed;

        MapTier(String name) {
            this.name = name;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public Page get(PageKey key) {
            byte[] bytes = closed ? null : pages.get(key);
            if (bytes == null) {
                misses.incrementAndGet();
                return null;
            }
            hits.incrementAndGet();
            Page page = new Page(key, MemorySegment.ofArray(bytes.clone())) {
                @Override
                protected void deallocate() {}
            };
            page.seal();
            return page;
        }

        @Override
        public boolean put(Page page) {
            if (!page.isSealed()) {
                throw new IllegalArgumentException("page " + page.key() + " is not sealed (expected: a sealed page)");
            }
            puts.incrementAndGet();
            if (closed) {
                return false;
            }
            pages.computeIfAbsent(page.key(), k -> page.segment().toArray(ValueLayout.JAVA_BYTE));
            return true;
        }

        @Override
        public void invalidate(String origin, String key) {
            pages.keySet().removeIf(k -> k.origin().equals(origin) && k.key().equals(key));
        }

        @Override
        public TierStats stats() {
            long used = pages.values().stream().mapToLong(b -> b.length).sum();
            return new TierStats(name, hits.get(), misses.get(), 0, 0, used, Long.MAX_VALUE, 0, 0, 0);
        }

        @Override
        public void close() {
            closed = true;
            pages.clear();
        }
    }
}
