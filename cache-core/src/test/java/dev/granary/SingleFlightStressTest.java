// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.testkit.Bytes;
import dev.granary.testkit.Concurrently;
import dev.granary.testkit.LeakCheck;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A seeded stress test of single flight: in every round, the object is rewritten at the origin and invalidated in the
 * cache, then eight threads released together by a barrier read it at once — whole, in random ranges, or with
 * {@code readInto} — so they miss on the same pages together. Each round must ask the origin for the object's
 * metadata exactly once and read each page that any thread touched exactly once, and every thread must get that
 * round's bytes.
 */
@Timeout(120)
class SingleFlightStressTest {

    private static final long SEED = 0x16_0B;
    private static final int THREADS = 8;
    private static final int MAX_ROUNDS = 1000;
    private static final long BUDGET_NANOS = 8_000_000_000L;
    private static final int PAGE = 4096;
    private static final String KEY = "hot/object.bin";

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    @Test
    void everyRoundMakesOneOriginReadPerTouchedPage() throws Exception {
        // 16 MiB of memory for objects of at most 10 pages: nothing is evicted, so a second read of a page within a
        // round could only come from a broken single flight.
        CacheFixture f = CacheFixture.create(temp, leaks, 16L << 20, PAGE, b -> {});
        SplittableRandom sizes = new SplittableRandom(SEED);
        Set<Long> touched = ConcurrentHashMap.newKeySet();
        AtomicInteger round = new AtomicInteger();
        byte[][] expected = {f.data.put(KEY, size(sizes))};
        int[] before = {f.origin.reads(), f.origin.stats()};
        long start = System.nanoTime();
        boolean[] stop = {false};
        f.cache.invalidate(KEY);
        Runnable betweenRounds = () -> {
            int reads = f.origin.reads() - before[0];
            int stats = f.origin.stats() - before[1];
            assertEquals(1, stats, "metadata requests in round " + round);
            assertEquals(touched.size(), reads, "origin reads in round " + round + " for pages " + touched);
            assertEquals(0, f.cache.stats().openLeases(), "open leases after round " + round);
            int next = round.incrementAndGet();
            if (next >= MAX_ROUNDS || System.nanoTime() - start > BUDGET_NANOS) {
                stop[0] = true;
                return;
            }
            // A new size every round, so the new version differs from the last whatever inode the file gets.
            expected[0] = f.data.put(KEY, size(sizes));
            f.cache.invalidate(KEY);
            touched.clear();
            before[0] = f.origin.reads();
            before[1] = f.origin.stats();
        };
        CyclicBarrier barrier = new CyclicBarrier(THREADS, betweenRounds);
        CountDownLatch ready = new CountDownLatch(THREADS);
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        try {
            Concurrently.run(THREADS, thread -> {
                try {
                    SplittableRandom random = new SplittableRandom(SEED * 31 + thread);
                    ready.countDown(); // the first round starts together too
                    ready.await();
                    while (!stop[0]) {
                        readOnce(f, expected[0], random, touched);
                        // Bounded, so that a thread that failed breaks the barrier instead of hanging the others.
                        barrier.await(20, TimeUnit.SECONDS);
                    }
                } catch (Throwable t) {
                    failures.add(t);
                    throw t;
                }
            });
        } catch (Exception | AssertionError e) {
            // The others see only the broken barrier that a failing thread (or the check between rounds) left.
            Throwable first = failures.stream()
                    .filter(t -> !(t instanceof BrokenBarrierException || t instanceof TimeoutException))
                    .findFirst()
                    .orElse(e);
            throw new AssertionError("single-flight round " + round.get() + " failed: " + first, first);
        }
        System.out.printf(
                "single flight: %d rounds x %d threads in %d ms, %d origin reads, %d metadata requests%n",
                round.get(), THREADS, (System.nanoTime() - start) / 1_000_000, f.origin.reads(), f.origin.stats());
        assertTrue(round.get() > 0, "rounds run");
        assertEquals(f.origin.reads(), f.cache.stats().origin().reads(), "the cache counts what the origin served");
    }

    /** Sizes from just under one page to ten pages, never a multiple of the page so the last page is short. */
    private static int size(SplittableRandom random) {
        return (1 + random.nextInt(10 * PAGE - 1)) | 1;
    }

    /** One thread's read of this round: whole, a random range, or readInto; records the pages it touched. */
    private static void readOnce(CacheFixture f, byte[] bytes, SplittableRandom random, Set<Long> touched)
            throws Exception {
        int size = bytes.length;
        int offset;
        int length;
        switch (random.nextInt(3)) {
            case 0 -> {
                try (Lease lease = f.cache.read(KEY)) {
                    Bytes.assertSame(bytes, lease.bytes(), "whole " + KEY);
                }
                offset = 0;
                length = size;
            }
            case 1 -> {
                offset = random.nextInt(size);
                length = 1 + random.nextInt(size - offset);
                try (Lease lease = f.cache.read(KEY, offset, length)) {
                    Bytes.assertSame(slice(bytes, offset, length), lease.bytes(), KEY + " @" + offset + "+" + length);
                }
            }
            default -> {
                offset = random.nextInt(size);
                length = 1 + random.nextInt(size - offset);
                ByteBuffer dst = ByteBuffer.allocate(length);
                f.cache.readInto(KEY, offset, dst);
                Bytes.assertSame(slice(bytes, offset, length), dst.flip(), "readInto " + KEY + " @" + offset);
            }
        }
        for (long page = offset / PAGE; page <= (offset + length - 1) / PAGE; page++) {
            touched.add(page);
        }
    }

    private static byte[] slice(byte[] bytes, int offset, int length) {
        byte[] out = new byte[length];
        System.arraycopy(bytes, offset, out, 0, length);
        return out;
    }
}
