// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.HeapTier;
import dev.granary.testkit.LeakCheck;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@link MapOrigin} under a real cache, over the test kit's {@link HeapTier}, without cache-tiers. */
class MapOriginCacheTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @Test
    void theSecondReadIsAHitInTheTier() throws Exception {
        MapOrigin origin = new MapOrigin("cached");
        byte[] bytes = "hello, granary".getBytes(StandardCharsets.UTF_8);
        origin.put("greeting.txt", bytes);
        HeapTier heap = new HeapTier(1 << 20); // 1 MiB of pages on the Java heap, least recently used evicted first
        TieredCache cache = leaks.watch(TieredCache.builder(origin).tier(heap).build());
        leaks.released("heap tier", heap::isReleased); // after the test: every lease closed, every page released
        for (int i = 0; i < 2; i++) {
            try (Lease lease = cache.read("greeting.txt")) {
                Bytes.assertSame(bytes, lease.bytes(), "read " + i);
            }
        }
        assertEquals(1, cache.stats().origin().reads(), "only the first read reached the origin");
        assertEquals(1, heap.stats().hits(), "the second was a hit in the heap tier");
    }
}
