// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Await;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.FaultyOrigin;
import dev.granary.testkit.HeapTier;
import dev.granary.testkit.LeakCheck;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fills run on a bounded pool of platform threads (decision 0010), where an interrupt does not end a blocking socket
 * read. So closing the cache must not leave its readers waiting for such a read: the reader of a fill in progress and
 * the reader of a fill still queued behind it both fail at once, and the page of the fill that ends after the close
 * is released, not leaked.
 */
@Timeout(60)
class FillThreadsCloseTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    @Test
    void closeFailsReadersOfAnUninterruptibleFillAndOfAQueuedOneAtOnce() throws Exception {
        Path root = Files.createDirectories(temp.resolve("data"));
        Dataset data = new Dataset(root, 7);
        data.put("a", 1000);
        data.put("b", 1000);
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        // One read at a time (so "b"'s fill queues behind "a"'s), and a read that ignores interrupts, as a socket
        // read on a platform thread does.
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(root, 1)).onRead((object, position, length) -> {
            entered.countDown();
            boolean interrupted = false;
            while (true) {
                try {
                    release.await();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        });
        HeapTier tier = new HeapTier(16L << 20);
        TieredCache cache = leaks.watch(TieredCache.builder(origin)
                .tier(tier)
                .pageSize(4096)
                .readTimeout(Duration.ofMinutes(5))
                .leakDetection(LeakDetection.PARANOID)
                .build());
        leaks.released("heap tier of " + cache, tier::isReleased);
        cache.stat("a");
        cache.stat("b");
        try (ExecutorService readers = Executors.newFixedThreadPool(2)) {
            Future<?> first = readers.submit(() -> read(cache, "a"));
            assertTrue(entered.await(30, TimeUnit.SECONDS), "the first fill reached the origin");
            Thread[] second = new Thread[1];
            Future<?> queued = readers.submit(() -> {
                second[0] = Thread.currentThread();
                return read(cache, "b");
            });
            // The second reader waits on its flight (timed, with the read timeout) once its fill is queued.
            Await.until(
                    () -> second[0] != null && second[0].getState() == Thread.State.TIMED_WAITING,
                    () -> "the second reader to wait for its queued fill");
            long start = System.nanoTime();
            cache.close();
            for (Future<?> reader : new Future<?>[] {first, queued}) {
                ExecutionException e = assertThrows(ExecutionException.class, () -> reader.get(30, TimeUnit.SECONDS));
                assertTrue(
                        e.getCause() instanceof IllegalStateException
                                && e.getCause().getMessage().startsWith("cache is closed"),
                        e.getCause().toString());
            }
            // Far below the 5-minute read timeout: the readers did not wait for the blocked read.
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "readers failed at close");
            assertEquals(1, origin.reads(), "the queued fill never reached the origin");
            release.countDown();
            // The blocked fill ends after the close: its page goes back, with no reader left to take it.
            Await.until(tier::isReleased, () -> "heap tier released after the late fill: " + tier);
        }
    }

    private static Void read(TieredCache cache, String key) throws Exception {
        try (Lease lease = cache.read(key)) {
            throw new AssertionError("read of '" + key + "' succeeded across close: " + lease);
        }
    }
}
