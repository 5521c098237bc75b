// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.testkit.Bytes;
import dev.granary.testkit.Gate;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Versions, changes, outages and timeouts: a changed object is never served from old pages, nothing hangs. */
@Timeout(60)
class TieredCacheVersionTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    private final AtomicLong clock = new AtomicLong();

    private CacheFixture fixture(Duration ttl) throws Exception {
        return CacheFixture.create(
                temp, leaks, 16L << 20, 4096, b -> b.metadataTtl(ttl).ticker(clock::get));
    }

    @Test
    void aChangedObjectIsReadAnewOnceItsVersionExpires() throws Exception {
        CacheFixture f = fixture(Duration.ofSeconds(10));
        byte[] original = f.data.put("obj", 10_000);
        CacheFixtureReads.read(f, "obj");
        byte[] replaced = f.data.put("obj", 10_000);
        // Within the TTL the known version is trusted: still the old bytes, from cache, no origin traffic.
        clock.addAndGet(Duration.ofSeconds(5).toNanos());
        try (Lease lease = f.cache.read("obj")) {
            Bytes.assertSame(original, lease.bytes(), "the cached version, within its TTL");
        }
        assertEquals(1, f.origin.stats());
        // After the TTL the origin is asked, the new version found, and none of the old pages served.
        clock.addAndGet(Duration.ofSeconds(6).toNanos());
        try (Lease lease = f.cache.read("obj")) {
            Bytes.assertSame(replaced, lease.bytes(), "the new version");
        }
        assertEquals(2, f.origin.stats());
        assertEquals(3 + 3, f.origin.reads(), "every page of the new version came from the origin");
    }

    @Test
    void anObjectThatChangesDuringAMultiPageReadIsNeverMixed() throws Exception {
        CacheFixture f = fixture(Duration.ofMinutes(1));
        byte[] before = f.data.put("moving", 8 * 4096);
        byte[] after = new byte[before.length];
        Arrays.fill(after, (byte) 0x5A);
        AtomicBoolean replaced = new AtomicBoolean();
        // The file is replaced while the read is in progress: as soon as the first page's origin read starts.
        f.origin.onRead((object, position, length) -> {
            if (replaced.compareAndSet(false, true)) {
                f.data.put("moving", after);
            }
        });
        try (Lease lease = f.cache.read("moving")) {
            byte[] got = Bytes.toArray(lease.bytes());
            assertArrayEquals(after, got, "retried on the new version: all new bytes, none of the old");
        } catch (ObjectChangedException e) {
            assertEquals("moving", e.key()); // also allowed: a clean failure
        }
        try (Lease lease = f.cache.read("moving")) {
            assertArrayEquals(after, Bytes.toArray(lease.bytes()), "the next read sees the new version");
        }
    }

    @Test
    void anObjectThatKeepsChangingFailsWithObjectChangedException() throws Exception {
        CacheFixture f = fixture(Duration.ofMinutes(1));
        f.data.put("flapping", 3 * 4096);
        AtomicInteger n = new AtomicInteger();
        f.origin.onRead((object, position, length) -> {
            byte[] next = new byte[3 * 4096];
            Arrays.fill(next, (byte) n.incrementAndGet());
            f.data.put("flapping", next);
        });
        ObjectChangedException e = assertThrows(ObjectChangedException.class, () -> f.cache.read("flapping"));
        assertEquals("flapping", e.key());
        assertTrue(e.getMessage().contains("is no longer version"), e.getMessage());
    }

    @Test
    void aDeletedObjectIsNoSuchObjectOnceItsVersionExpires() throws Exception {
        CacheFixture f = fixture(Duration.ZERO);
        f.data.put("gone", 100);
        CacheFixtureReads.read(f, "gone");
        f.data.delete("gone");
        assertThrows(NoSuchObjectException.class, () -> f.cache.read("gone"));
    }

    @Test
    void whenTheOriginIsDownCachedPagesOfTheLastVersionAreServedAndTheRestFailsFast() throws Exception {
        CacheFixture f = CacheFixture.create(
                temp,
                leaks,
                16L << 20,
                4096,
                b -> b.metadataTtl(Duration.ofSeconds(1)).ticker(clock::get).readTimeout(Duration.ofSeconds(5)));
        byte[] bytes = f.data.put("warm", 4 * 4096);
        try (Lease lease = f.cache.read("warm", 0, 2 * 4096)) {
            Bytes.assertSame(f.data.range("warm", 0, 2 * 4096), lease.bytes(), "warm");
        }
        f.origin.failStats(new IOException("connection refused (injected)"));
        f.origin.failReads(new IOException("connection refused (injected)"));
        clock.addAndGet(Duration.ofSeconds(2).toNanos()); // versions expired: revalidation is due and fails
        try (Lease lease = f.cache.read("warm", 0, 2 * 4096)) {
            Bytes.assertSame(Arrays.copyOf(bytes, 2 * 4096), lease.bytes(), "stale-if-error: cached pages");
        }
        CacheStats stats = f.cache.stats();
        assertEquals(1, stats.staleServes(), "the stale serve is counted");
        IOException e = assertThrows(IOException.class, () -> f.cache.read("warm", 2 * 4096, 4096));
        assertTrue(e.getMessage().contains("connection refused"), "pages not cached need the origin: " + e);
        IOException unknown = assertThrows(IOException.class, () -> f.cache.stat("never-seen"));
        assertTrue(unknown.getMessage().contains("connection refused"), unknown.toString());
        assertTrue(f.cache.stats().origin().errors() >= 2, "origin errors are counted: " + f.cache.stats());
        // The origin comes back: everything works again.
        f.origin.failStats(null);
        f.origin.failReads(null);
        clock.addAndGet(Duration.ofSeconds(2).toNanos());
        try (Lease lease = f.cache.read("warm")) {
            Bytes.assertSame(bytes, lease.bytes(), "after the outage");
        }
    }

    @Test
    void aHungOriginFailsTheReadAfterTheTimeoutNotNever() throws Exception {
        CacheFixture f = CacheFixture.create(temp, leaks, 16L << 20, 4096, b -> b.readTimeout(Duration.ofMillis(300)));
        f.data.put("slow", 4096);
        f.cache.stat("slow");
        Gate never = new Gate();
        f.origin.holdReads(never);
        IOException e = assertThrows(IOException.class, () -> f.cache.read("slow"));
        assertTrue(e.getMessage().startsWith("timed out waiting for page 0 of 'slow'"), e.getMessage());
        assertTrue(e.getMessage().contains("readTimeout"), e.getMessage());
        Gate hungStat = new Gate();
        f.origin.holdStats(hungStat);
        f.data.put("unknown", 1);
        IOException s = assertThrows(IOException.class, () -> f.cache.stat("unknown"));
        assertTrue(s.getMessage().startsWith("timed out waiting for the metadata of 'unknown'"), s.getMessage());
        never.open();
        hungStat.open();
    }

    /** Reading helpers shared by the tests above. */
    static final class CacheFixtureReads {
        static void read(CacheFixture f, String key) throws IOException {
            try (Lease lease = f.cache.read(key)) {
                Bytes.assertSame(f.data.bytes(key), lease.bytes(), key);
            }
        }
    }
}
