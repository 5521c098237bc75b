// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.testkit.Await;
import dev.granary.testkit.LeakCheck;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** Leases left open are caught: by the test harness's leak check, and in production by the leak detector. */
@Timeout(60)
class LeaseLeakTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    @Test
    void theLeakCheckFailsATestThatLeavesALeaseOpen() throws Exception {
        LeakCheck strict = new LeakCheck(Duration.ofMillis(200));
        CacheFixture f = CacheFixture.create(temp, strict);
        f.data.put("forgotten", 1000);
        Lease forgotten = f.cache.read("forgotten");
        AssertionError e = assertThrows(AssertionError.class, strict::verify);
        assertTrue(e.getMessage().contains("1 lease(s) still open"), e.getMessage());
        assertTrue(
                e.getMessage().contains("heap tier") && e.getMessage().contains("not released"),
                "the pinned memory is reported too: " + e.getMessage());
        forgotten.close();
        Await.until(f.tier::isReleased, () -> "closing the lease frees the memory");
    }

    @Test
    void aLeaseDroppedWithoutCloseIsDetectedAndItsMemoryReleased() throws Exception {
        CacheFixture f =
                CacheFixture.create(temp, leaks, 16L << 20, 64 << 10, b -> b.leakDetection(LeakDetection.PARANOID));
        f.data.put("dropped", 1000);
        dropALease(f.cache, "dropped");
        assertEquals(1, f.cache.stats().openLeases());
        Await.until(
                () -> {
                    System.gc();
                    return f.cache.stats().leakedLeases() == 1;
                },
                () -> "the leak detector to find the dropped lease");
        assertEquals(0, f.cache.stats().openLeases(), "the leaked lease's memory was released");
    }

    private static void dropALease(TieredCache cache, String key) throws Exception {
        Lease lease = cache.read(key);
        assertEquals(1000, lease.length());
        // no close: the lease becomes unreachable when this method returns
    }
}
