// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.LeakCheck;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The guarantees of a memory-tier hit's buffer, which decision 0021 made a slice of a read-only view of its slab: it
 * is read-only and the lease's own; its memory is not freed or reused while the lease is open, whatever happens to
 * the page, the tier or the cache; after {@code close()} the lease refuses to hand it out again; and under
 * {@link LeakDetection#PARANOID} a buffer or segment kept past its lease's close throws instead of reading.
 */
@Timeout(60)
class LeaseViewTest {

    private static final int PAGE = 64 << 10;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    @ParameterizedTest
    @EnumSource(LeakDetection.class)
    void aHitsBufferIsReadOnlyAndTheLeasesOwn(LeakDetection detection) throws Exception {
        Fixture f = fixture(temp, leaks, 16L << 20, PAGE, b -> b.leakDetection(detection));
        byte[] bytes = f.data.put("k", PAGE);
        f.cache.read("k").close();
        try (Lease a = f.cache.read("k");
                Lease b = f.cache.read("k")) {
            assertEquals(2, f.cache.stats().tiers().getFirst().hits(), "both are hits");
            ByteBuffer x = a.bytes();
            ByteBuffer y = b.bytes();
            assertTrue(x.isReadOnly() && x.isDirect(), "a zero-copy, read-only view");
            assertThrows(ReadOnlyBufferException.class, () -> x.putLong(0, 1L));
            assertTrue(a.segment().isReadOnly());
            x.position(100).limit(200);
            assertEquals(0, y.position(), "each lease's buffer has its own position and limit");
            assertEquals(PAGE, y.limit());
            assertArrayEquals(bytes, copy(y));
            assertEquals(y.getLong(8), a.segment().get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(y.order()), 8));
        }
    }

    @Test
    void aHeldLeasesMemoryIsNotFreedOrReusedWhenItsPageLeavesAndTheTierCloses() throws Exception {
        // Room for 4 pages: filling 8 more evicts the held one and reuses whatever memory is free.
        Fixture f = fixture(temp, leaks, 4L * PAGE, PAGE, b -> b.leakDetection(LeakDetection.SAMPLED));
        byte[] held = f.data.put("held", PAGE);
        f.cache.read("held").close();
        Lease lease = f.cache.read("held");
        try {
            f.cache.invalidate("held");
            for (int i = 0; i < 8; i++) {
                f.data.put("other" + i, PAGE);
                f.cache.read("other" + i).close();
            }
            assertTrue(f.memory.stats().evictions() > 0, "the fills evicted pages");
            assertArrayEquals(held, copy(lease.bytes()), "the held page's memory was not reused");
            f.cache.close();
            assertFalse(f.memory.isReleased(), "the tier keeps its memory while a lease holds part of it");
            assertArrayEquals(held, copy(lease.bytes()), "still readable after the cache closed");
        } finally {
            lease.close();
        }
        assertTrue(f.memory.isReleased(), "the last lease's close returned the memory");
    }

    @ParameterizedTest
    @EnumSource(
            value = LeakDetection.class,
            names = {"DISABLED", "SAMPLED"})
    void aClosedLeaseRefusesToHandOutItsBytes(LeakDetection detection) throws Exception {
        Fixture f = fixture(temp, leaks, 16L << 20, PAGE, b -> b.leakDetection(detection));
        f.data.put("k", PAGE);
        f.cache.read("k").close();
        Lease lease = f.cache.read("k");
        lease.close();
        assertThrows(IllegalStateException.class, lease::bytes);
        assertThrows(IllegalStateException.class, lease::segment);
    }

    @Test
    void underParanoidABufferOrSegmentKeptPastCloseThrows() throws Exception {
        Fixture f = fixture(temp, leaks, 16L << 20, PAGE, b -> b.leakDetection(LeakDetection.PARANOID));
        f.data.put("k", PAGE);
        f.cache.read("k").close();
        Lease lease = f.cache.read("k");
        ByteBuffer kept = lease.bytes();
        MemorySegment keptSegment = lease.segment();
        ByteBuffer keptSlice = kept.slice(8, 64);
        assertEquals(1, f.cache.stats().tiers().getFirst().hits(), "a zero-copy hit");
        kept.getLong(0);
        lease.close();
        assertThrows(IllegalStateException.class, () -> kept.getLong(0));
        assertThrows(IllegalStateException.class, () -> keptSlice.get(0));
        assertThrows(IllegalStateException.class, () -> keptSegment.get(ValueLayout.JAVA_BYTE, 0));
        assertThrows(
                IllegalStateException.class,
                () -> MemorySegment.copy(keptSegment, 0, MemorySegment.ofArray(new byte[8]), 0, 8));
    }

    /** A dataset in {@code temp}, a POSIX origin over it and a memory tier, watched by {@link #leaks}. */
    private record Fixture(Dataset data, MemoryTier memory, TieredCache cache) {}

    private Fixture fixture(Path dir, LeakCheck check, long capacity, int pageSize, Consumer<TieredCache.Builder> more)
            throws Exception {
        Dataset data = new Dataset(Files.createDirectories(dir.resolve("data")), 42);
        MemoryTier memory = MemoryTier.builder().capacity(capacity).build();
        TieredCache.Builder builder =
                TieredCache.builder(PosixOrigin.of(data.root())).tier(memory).pageSize(pageSize);
        more.accept(builder);
        TieredCache cache = check.watch(builder.build());
        check.released("memory tier of " + cache, memory::isReleased);
        return new Fixture(data, memory, cache);
    }

    private static byte[] copy(ByteBuffer bytes) {
        byte[] out = new byte[bytes.remaining()];
        bytes.duplicate().get(out);
        return out;
    }
}
