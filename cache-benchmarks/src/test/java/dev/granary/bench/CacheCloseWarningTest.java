// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Closing a cache while leases are open logs one warning naming them. (Here rather than beside the cache's other
 * tests because it reads the JDK logger's records, and this module's tests compile off the module path, where
 * {@code java.logging} is readable; the library modules log through {@code System.Logger} and do not require it.)
 */
class CacheCloseWarningTest {

    @TempDir
    Path temp;

    @Test
    void closingWithLeasesOpenWarnsNamingThem() throws Exception {
        Files.write(temp.resolve("held.bin"), new byte[5_000]);
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                records.add(record);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        Logger logger = Logger.getLogger("dev.granary.LeaseTracker");
        logger.addHandler(handler);
        try {
            MemoryTier memory = MemoryTier.builder().capacity(1 << 20).build();
            TieredCache cache = TieredCache.builder(PosixOrigin.of(temp))
                    .tier(memory)
                    .leakDetection(LeakDetection.PARANOID)
                    .build();
            Lease held = cache.read("held.bin", 100, 200);
            try (Lease closedInTime = cache.read("held.bin", 0, 10)) {
                assertEquals(10, closedInTime.length());
            }
            cache.close();
            String warnings =
                    records.stream().map(LogRecord::getMessage).toList().toString();
            assertTrue(
                    warnings.contains("closed with 1 lease(s) still open")
                            && warnings.contains("lease of 'held.bin' [100, +200)")
                            && !warnings.contains("[0, +10)"),
                    warnings);
            assertTrue(memory.stats().usedBytes() > 0, "the held page stays valid after the cache closed");
            held.close();
            assertEquals(0, memory.stats().usedBytes(), "closing the last lease frees the memory");
            records.clear();
            cache.close(); // idempotent: no second warning
            assertEquals(List.of(), records);
        } finally {
            logger.removeHandler(handler);
        }
    }
}
