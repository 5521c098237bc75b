// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.granary.testkit.Await;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Concurrently;
import dev.granary.testkit.Gate;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Many threads on one cache: single flight, bounded memory, close while reading. Every test has a timeout. */
@Timeout(120)
class TieredCacheConcurrencyTest {

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @TempDir
    Path temp;

    /**
     * 64 threads miss on the same uncached object at once; the origin is held until every one of them has missed in
     * the tier, so all 64 are in flight together. Exactly one origin read per page, and everyone gets the bytes.
     */
    @ParameterizedTest(name = "{0} pages")
    @ValueSource(ints = {1, 5})
    void sixtyFourThreadsMissingOneKeyMakeOneOriginReadPerPage(int pages) throws Exception {
        CacheFixture f = CacheFixture.create(temp, leaks, 16L << 20, 4096, b -> {});
        byte[] bytes = f.data.put("hot.bin", pages * 4096 - 100);
        f.cache.stat("hot.bin"); // the version is known: this test is about data reads
        Gate gate = new Gate();
        f.origin.holdReads(gate);
        int threads = 64;
        CountDownLatch started = new CountDownLatch(threads);
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            List<Future<byte[]>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                results.add(pool.submit(() -> {
                    started.countDown();
                    try (Lease lease = f.cache.read("hot.bin")) {
                        return Bytes.toArray(lease.bytes());
                    }
                }));
            }
            started.await();
            // Every thread has looked up every page and missed (one miss per thread and page, plus the fills' own
            // second look before they go to the origin).
            Await.until(
                    () -> f.tier.stats().misses() >= (long) threads * pages,
                    () -> "64 threads to miss: " + f.tier.stats());
            Await.until(
                    () -> gate.waiting() == pages,
                    () -> "one origin read per page to be waiting, not " + gate.waiting());
            gate.open();
            for (Future<byte[]> result : results) {
                Bytes.assertSame(bytes, result.get(), "bytes one of the 64 threads got");
            }
        }
        assertEquals(pages, f.origin.reads(), "origin reads for " + pages + " page(s) and 64 threads");
        assertEquals(pages, f.cache.stats().origin().reads());
    }

    @Test
    void concurrentStatsOfOneKeyMakeOneMetadataRequest() throws Exception {
        CacheFixture f = CacheFixture.create(temp, leaks);
        f.data.put("meta", 10);
        Gate gate = new Gate();
        f.origin.holdStats(gate);
        int threads = 32;
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            List<Future<Long>> sizes = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                sizes.add(pool.submit(() -> f.cache.stat("meta").size()));
            }
            Await.until(() -> gate.waiting() == 1, () -> "the one stat to reach the origin");
            gate.open();
            for (Future<Long> size : sizes) {
                assertEquals(10L, size.get());
            }
        }
        // Threads that arrived after the stat finished found the fresh version and asked nothing.
        assertEquals(1, f.origin.stats(), "stat requests to the origin");
        assertEquals(1, f.cache.stats().origin().metadataRequests());
    }

    /**
     * Eight threads read random ranges of a dataset four times larger than the tier, while a sampler reads the
     * tier's used bytes continuously: the capacity is never exceeded, and every byte is right.
     */
    @Test
    void usedBytesStayWithinCapacityWhileEightThreadsReadRandomRanges() throws Exception {
        long capacity = 2L << 20;
        CacheFixture f = CacheFixture.create(temp, leaks, capacity, 16 << 10, b -> {});
        int objects = 32;
        for (int i = 0; i < objects; i++) {
            f.data.put("d/" + i, 256 * 1024 + i * 1000); // 8 MiB in all
        }
        AtomicBoolean done = new AtomicBoolean();
        AtomicLong maxUsed = new AtomicLong();
        AtomicLong samples = new AtomicLong();
        Thread sampler = Thread.ofPlatform().start(() -> {
            while (!done.get()) {
                maxUsed.accumulateAndGet(f.tier.stats().usedBytes(), Math::max);
                samples.incrementAndGet();
                Thread.onSpinWait();
            }
        });
        try {
            Concurrently.run(8, thread -> {
                SplittableRandom r = new SplittableRandom(thread);
                for (int i = 0; i < 400; i++) {
                    String key = "d/" + r.nextInt(objects);
                    int size = f.data.bytes(key).length;
                    int offset = r.nextInt(size);
                    int length = r.nextInt(Math.min(size - offset, 100_000) + 1);
                    try (Lease lease = f.cache.read(key, offset, length)) {
                        Bytes.assertSame(f.data.range(key, offset, length), lease.bytes(), key + "@" + offset);
                    }
                }
            });
        } finally {
            done.set(true);
            sampler.join();
        }
        assertTrue(maxUsed.get() <= capacity, "used bytes peaked at " + maxUsed + " > capacity " + capacity);
        assertTrue(samples.get() > 100, "the sampler must have run: " + samples);
        assertTrue(f.tier.stats().evictions() > 0, "the dataset is 4x the tier: " + f.tier.stats());
        assertTrue(f.tier.stats().hits() > 0, "and some reads hit: " + f.tier.stats());
    }

    /**
     * Readers hammer the cache; it is closed under them. Every read either returns the right bytes or fails with
     * "closed" (IllegalStateException) or an IOException; none returns wrong bytes or hangs, every lease handed out
     * stays readable until closed, and all memory is returned once the last lease is closed.
     */
    @Test
    void closeWhileReading() throws Exception {
        CacheFixture f = CacheFixture.create(temp, leaks, 1L << 20, 16 << 10, b -> {});
        int objects = 16;
        for (int i = 0; i < objects; i++) {
            f.data.put("c/" + i, 100_000);
        }
        AtomicInteger reads = new AtomicInteger();
        ConcurrentLinkedQueue<Throwable> unexpected = new ConcurrentLinkedQueue<>();
        ConcurrentLinkedQueue<Lease> heldAcrossClose = new ConcurrentLinkedQueue<>();
        AtomicInteger closedFailures = new AtomicInteger();
        List<Future<?>> readers = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            for (int t = 0; t < 8; t++) {
                long seed = t;
                readers.add(pool.submit(() -> {
                    SplittableRandom r = new SplittableRandom(seed);
                    while (true) {
                        String key = "c/" + r.nextInt(objects);
                        int offset = r.nextInt(100_000);
                        int length = r.nextInt(100_000 - offset + 1);
                        Lease lease;
                        try {
                            lease = f.cache.read(key, offset, length);
                        } catch (IllegalStateException e) {
                            closedFailures.incrementAndGet();
                            return; // closed: the expected end
                        } catch (IOException e) {
                            continue; // an origin read interrupted by close: a clean failure
                        } catch (Throwable e) {
                            unexpected.add(e);
                            return;
                        }
                        try {
                            Bytes.assertSame(f.data.range(key, offset, length), lease.bytes(), key);
                        } catch (Throwable e) {
                            unexpected.add(e);
                        }
                        if (r.nextInt(50) == 0) {
                            heldAcrossClose.add(lease); // keep some leases open across close
                        } else {
                            lease.close();
                        }
                        reads.incrementAndGet();
                    }
                }));
            }
            Await.until(() -> reads.get() > 2000, () -> "readers to get going: " + reads.get() + " reads");
            f.cache.close();
        }
        for (Future<?> reader : readers) {
            reader.get(); // done (the pool's close waited): rethrows what escaped a reader
        }
        if (!unexpected.isEmpty()) {
            fail("unexpected failure while closing under readers", unexpected.peek());
        }
        assertEquals(8, closedFailures.get(), "every reader ends on 'closed'");
        for (Lease lease : heldAcrossClose) {
            // Memory a lease holds stays valid after the cache is closed, until the lease is closed.
            assertTrue(lease.bytes().remaining() == lease.length());
            Bytes.assertSame(f.data.range(lease.key(), lease.offset(), lease.length()), lease.bytes(), "held lease");
            lease.close();
        }
        assertEquals(0, f.cache.stats().openLeases());
        Await.until(f.tier::isReleased, () -> "all memory returned once the last lease closed");
    }

    /** A lease pins its memory: however much is read after it, its bytes do not change. */
    @Test
    void evictionNeverFreesMemoryALeaseHolds() throws Exception {
        CacheFixture f = CacheFixture.create(temp, leaks, 256 << 10, 64 << 10, b -> {});
        byte[] pinned = f.data.put("pinned", 60_000);
        for (int i = 0; i < 40; i++) {
            f.data.put("churn/" + i, 60_000);
        }
        try (Lease lease = f.cache.read("pinned")) {
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 40; i++) {
                    try (Lease other = f.cache.read("churn/" + i)) {
                        Bytes.assertSame(f.data.bytes("churn/" + i), other.bytes(), "churn");
                    }
                }
            }
            assertTrue(f.tier.stats().evictions() > 0);
            Bytes.assertSame(pinned, lease.bytes(), "the leased page after heavy eviction");
        }
    }

    /**
     * Fill the tier with leased pages: new reads are still served (from memory of their own), nothing exceeds capacity.
     */
    @Test
    void whenReadersHoldTheWholeTierReadsStillSucceed() throws Exception {
        long capacity = 256 << 10;
        CacheFixture f = CacheFixture.create(temp, leaks, capacity, 64 << 10, b -> {});
        List<Lease> held = new ArrayList<>();
        try {
            for (int i = 0; i < 12; i++) {
                byte[] bytes = f.data.put("h/" + i, 64 << 10);
                Lease lease = f.cache.read("h/" + i);
                Bytes.assertSame(bytes, lease.bytes(), "h/" + i);
                held.add(lease);
                assertTrue(f.tier.stats().usedBytes() <= capacity);
            }
            assertTrue(f.tier.stats().rejections() > 0, "the tier refused pages it had no room for: " + f.tier.stats());
        } finally {
            held.forEach(Lease::close);
        }
    }

    static void readAll(TieredCache cache, String key, byte[] expected) throws IOException {
        try (Lease lease = cache.read(key)) {
            Bytes.assertSame(expected, lease.bytes(), key);
        }
    }
}
