// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.HeapTier;
import dev.granary.testkit.LeakCheck;
import java.io.EOFException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reads through a TieredCache with a heap tier over real files: bytes, stats, leases, errors. (What only an off-heap
 * tier can show, zero-copy views of its memory, is in cache-tiers' {@code MemoryTierFacadeTest}.)
 */
@Timeout(60)
class TieredCacheReadTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    private CacheFixture f;
    private TieredCache cache;

    @BeforeEach
    void setUp() throws Exception {
        f = CacheFixture.create(temp, leaks);
        cache = f.cache;
    }

    @Test
    void wholeObjectReadIsServedFromTheOriginOnceThenFromMemory() throws Exception {
        byte[] bytes = f.data.put("train/0001.jpg", 150_000); // 3 pages of 64 KiB
        try (Lease lease = cache.read("train/0001.jpg")) {
            Bytes.assertSame(bytes, lease.bytes(), "cold read");
            assertEquals(0, lease.offset());
            assertEquals(150_000, lease.length());
            assertEquals("train/0001.jpg", lease.key());
        }
        assertEquals(3, cache.stats().origin().reads(), "one origin read per page");
        assertEquals(150_000, cache.stats().origin().bytes());
        try (Lease lease = cache.read("train/0001.jpg")) {
            Bytes.assertSame(bytes, lease.bytes(), "warm read");
        }
        CacheStats stats = cache.stats();
        assertEquals(3, stats.origin().reads(), "the warm read asks the origin for nothing");
        assertEquals(1, stats.origin().metadataRequests(), "the version is trusted within the TTL");
        TierStats memory = stats.tiers().getFirst();
        assertEquals(3, memory.hits());
        assertEquals(150_000, memory.hitBytes());
        assertEquals(0.5, stats.hitRatio(), 1e-9, "3 hits of 6 lookups");
    }

    @Test
    void rangesSpanningPagesAreAssembledCorrectly() throws Exception {
        f.data.put("multi", 64 * 1024 * 5 + 17);
        int[][] ranges = {
            {0, 1},
            {65535, 2},
            {65536, 65536},
            {1000, 64 * 1024 * 4},
            {64 * 1024 * 5, 17},
            {64 * 1024 * 5 + 16, 1},
            {0, 64 * 1024 * 5 + 17}
        };
        for (int[] r : ranges) {
            try (Lease lease = cache.read("multi", r[0], r[1])) {
                Bytes.assertSame(f.data.range("multi", r[0], r[1]), lease.bytes(), "range " + r[0] + "+" + r[1]);
                assertTrue(lease.bytes().isReadOnly());
            }
        }
    }

    @Test
    void readIntoCopiesIntoTheCallersBufferOrSegment() throws Exception {
        f.data.put("into", 200_000);
        ByteBuffer dst = ByteBuffer.allocateDirect(150_000);
        dst.position(10);
        cache.readInto("into", 30_000, dst);
        assertEquals(150_000, dst.position(), "position advanced by the bytes read");
        Bytes.assertSame(f.data.range("into", 30_000, 149_990), dst.flip().position(10), "readInto ByteBuffer");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment segment = arena.allocate(70_000);
            cache.readInto("into", 130_000, segment);
            Bytes.assertSame(f.data.range("into", 130_000, 70_000), segment.asByteBuffer(), "readInto segment");
            EOFException e = assertThrows(EOFException.class, () -> cache.readInto("into", 130_001, segment));
            assertTrue(e.getMessage().contains("past the end"), e.getMessage());
        }
    }

    @Test
    void emptyObjectsAndEmptyRanges() throws Exception {
        f.data.put("empty", 0);
        try (Lease lease = cache.read("empty")) {
            assertEquals(0, lease.bytes().remaining());
        }
        f.data.put("some", 100);
        try (Lease lease = cache.read("some", 100, 0)) {
            assertEquals(0, lease.length());
        }
        cache.readInto("some", 100, ByteBuffer.allocate(0));
    }

    @Test
    void missingObjectsAndRangesPastTheEndFailClearly() throws Exception {
        f.data.put("short", 100);
        NoSuchObjectException missing = assertThrows(NoSuchObjectException.class, () -> cache.read("nope.jpg"));
        assertEquals("nope.jpg", missing.key());
        assertTrue(
                missing.getMessage().contains("'nope.jpg'")
                        && missing.getMessage()
                                .contains(f.data.root().toRealPath().toUri().toString()),
                missing.getMessage());
        EOFException eof = assertThrows(EOFException.class, () -> cache.read("short", 50, 51));
        assertEquals(
                "range [50, 101) of 'short' in " + cache.originUri()
                        + ": past the end (expected: within the object's 100 bytes)",
                eof.getMessage());
        assertThrows(EOFException.class, () -> cache.read("short", 101, 0));
    }

    @Test
    void badArgumentsAreRejectedWithMessagesNamingTheValue() throws Exception {
        f.data.put("k", 10);
        assertMessage("key: null (expected: a non-empty key)", () -> cache.read(null));
        assertMessage("key: '' (expected: a non-empty key)", () -> cache.read(""));
        assertMessage(
                "key: '/etc/passwd' (expected: a key relative to the origin's root, not an absolute path)",
                () -> cache.read("/etc/passwd"));
        assertMessage(
                "key: '../x' (expected: no '..' segment; keys may not escape the origin's root)",
                () -> cache.read("../x"));
        assertMessage(
                "key: 'a/../../x' (expected: no '..' segment; keys may not escape the origin's root)",
                () -> cache.stat("a/../../x"));
        assertMessage("key: 'a\\0b' (expected: no NUL character)", () -> cache.read("a\0b"));
        assertMessage("offset into 'k': -1 (expected: >= 0)", () -> cache.read("k", -1, 1));
        assertMessage("length of read of 'k': -5 (expected: >= 0)", () -> cache.read("k", 0, -5));
        assertMessage(
                "length of read of 'k': 3000000000 (expected: <= 2147483639, one buffer; use readInto for" + " more)",
                () -> cache.read("k", 0, 3_000_000_000L));
        assertMessage(
                "destination buffer: read-only (expected: a writable ByteBuffer)",
                () -> cache.readInto("k", 0, ByteBuffer.allocate(1).asReadOnlyBuffer()));
        assertMessage(
                "destination buffer: null (expected: a writable ByteBuffer)",
                () -> cache.readInto("k", 0, (ByteBuffer) null));
        assertMessage(
                "offset into 'k': -1 (expected: >= 0)",
                () -> cache.readInto("k", -1, MemorySegment.ofArray(new byte[1])));
        assertMessage(
                "key: '..' (expected: no '..' segment; keys may not escape the origin's root)",
                () -> cache.invalidate(".."));
        assertEquals(0, f.origin.reads() + f.origin.stats(), "bad arguments never reach the origin");
    }

    @Test
    void builderRejectsBadConfigurationWithMessagesNamingTheValue() throws Exception {
        PosixOrigin origin = PosixOrigin.of(temp);
        TieredCache.Builder b = TieredCache.builder(origin);
        assertMessage(
                "origin: null (expected: an Origin such as PosixOrigin.of(dir))", () -> TieredCache.builder(null));
        assertMessage("page size: 0 bytes (expected: 16 bytes..1 GiB)", () -> b.pageSize(0));
        assertMessage("page size: 2147483647 bytes (expected: 16 bytes..1 GiB)", () -> b.pageSize(Integer.MAX_VALUE));
        assertMessage("metadata TTL: PT-1S (expected: a duration >= 0)", () -> b.metadataTtl(Duration.ofSeconds(-1)));
        assertMessage("metadata TTL: null (expected: a duration >= 0)", () -> b.metadataTtl(null));
        assertMessage("read timeout: PT0S (expected: a duration > 0)", () -> b.readTimeout(Duration.ZERO));
        assertMessage("metadata capacity: 0 (expected: >= 1 objects)", () -> b.metadataCapacity(0));
        assertMessage(
                "leak detection: null (expected: one of [DISABLED, SAMPLED, PARANOID])", () -> b.leakDetection(null));
        assertMessage("tier: null (expected: a Tier such as MemoryTier.builder()...)", () -> b.tier(null));
        assertMessage("ticker: null (expected: a nanosecond clock such as System::nanoTime)", () -> b.ticker(null));
        HeapTier tier = new HeapTier(1 << 20);
        b.tier(tier);
        assertMessage("tier: 'heap' added twice (expected: each tier once)", () -> b.tier(tier));
        TieredCache built = leaks.watch(b.build());
        IllegalStateException twice = assertThrows(IllegalStateException.class, b::build);
        assertTrue(twice.getMessage().startsWith("builder already built a cache"), twice.getMessage());
        built.close();
    }

    @Test
    void leaseRules() throws Exception {
        f.data.put("lease", 1000);
        Lease lease = cache.read("lease");
        assertFalse(lease.isClosed());
        assertEquals(1, cache.stats().openLeases());
        lease.close();
        lease.close(); // idempotent, never throws
        assertTrue(lease.isClosed());
        assertEquals(0, cache.stats().openLeases());
        IllegalStateException e = assertThrows(IllegalStateException.class, lease::bytes);
        assertEquals(
                "lease of 'lease' [0, +1000) is closed (expected: an open lease; copy the bytes you need before"
                        + " close())",
                e.getMessage());
        assertThrows(IllegalStateException.class, lease::segment);
    }

    @Test
    void aClosedCacheRefusesUse() throws Exception {
        f.data.put("x", 10);
        cache.close();
        cache.close(); // idempotent
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> cache.read("x"));
        assertTrue(e.getMessage().contains("is closed"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> cache.stat("x"));
        assertThrows(IllegalStateException.class, () -> cache.invalidate("x"));
        assertTrue(f.origin.isClosed(), "the cache owns and closes its origin");
    }

    @Test
    void invalidateDropsPagesAndTheVersion() throws Exception {
        f.data.put("inv", 1000);
        try (Lease lease = cache.read("inv")) {
            assertEquals(1000, lease.length());
        }
        cache.invalidate("inv");
        byte[] replaced = f.data.put("inv", 2000);
        try (Lease lease = cache.read("inv")) {
            Bytes.assertSame(replaced, lease.bytes(), "after invalidate the new bytes are read");
        }
        assertEquals(2, cache.stats().origin().reads());
    }

    @Test
    void aHitInALowerTierIsPromotedToTheTierAbove() throws Exception {
        Path root = Files.createDirectories(temp.resolve("two-tier"));
        Dataset data = new Dataset(root, 3);
        byte[] a = data.put("a", 100_000);
        byte[] b = data.put("b", 100_000);
        HeapTier l1 = new HeapTier("l1", 128 << 10);
        HeapTier l2 = new HeapTier("l2", 1 << 20);
        TieredCache twoTier = leaks.watch(TieredCache.builder(PosixOrigin.of(root))
                .tier(l1)
                .tier(l2)
                .pageSize(1 << 20)
                .leakDetection(LeakDetection.PARANOID)
                .build());
        leaks.released("l1", l1::isReleased);
        leaks.released("l2", l2::isReleased);
        read(twoTier, "a", a);
        read(twoTier, "b", b); // l1 holds 128 KiB: one of the two 100 KB pages
        assertEquals(2, twoTier.stats().origin().reads());
        read(twoTier, "a", a);
        read(twoTier, "b", b);
        read(twoTier, "a", a);
        CacheStats stats = twoTier.stats();
        assertEquals(2, stats.origin().reads(), "every later read was a hit somewhere");
        TierStats s1 = stats.tiers().get(0);
        TierStats s2 = stats.tiers().get(1);
        assertEquals("l1", s1.name());
        assertEquals("l2", s2.name());
        assertTrue(s2.hits() >= 1, "l2 served what l1 could not hold: " + s2);
        assertEquals(1.0, (double) (s1.hits() + s2.hits()) / 3, 1e-9, "3 warm reads, 3 hits: " + stats);
        assertNotEquals(0, s1.evictions(), "l1 evicted to make room for promoted pages: " + s1);
    }

    private static void read(TieredCache cache, String key, byte[] expected) throws Exception {
        try (Lease lease = cache.read(key)) {
            Bytes.assertSame(expected, lease.bytes(), key);
        }
    }

    static void assertMessage(String expected, Executable call) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertEquals(expected, e.getMessage());
    }

    @Test
    void statReportsWhatTheOriginSays() throws Exception {
        f.data.put("s/1", 12345);
        ObjectInfo info = cache.stat("s/1");
        assertEquals("s/1", info.key());
        assertEquals(12345, info.size());
        assertFalse(info.version().isEmpty());
    }

    @Test
    void aListingTeachesVersionsSoReadsOfListedObjectsNeedNoStat() throws Exception {
        Map<String, byte[]> objects = new TreeMap<>();
        for (int i = 0; i < 20; i++) {
            objects.put(String.format("listed/%03d", i), f.data.put(String.format("listed/%03d", i), 1000 + i));
        }
        f.data.put("other/x", 10);
        List<ObjectInfo> listed;
        try (var stream = cache.list("listed/")) {
            listed = stream.toList();
        }
        assertEquals(
                List.copyOf(objects.keySet()),
                listed.stream().map(ObjectInfo::key).toList());
        for (var e : objects.entrySet()) {
            read(cache, e.getKey(), e.getValue());
        }
        assertEquals(1, cache.stats().origin().metadataRequests(), "one listing, no stat per object");
        assertEquals(20, cache.stats().origin().reads());
        assertMessage("prefix: null (expected: a key prefix, possibly empty)", () -> cache.list(null));
        assertThrows(IllegalArgumentException.class, () -> cache.list("../up"));
        try (var all = cache.list("")) {
            assertEquals(21, all.count());
        }
    }
}
