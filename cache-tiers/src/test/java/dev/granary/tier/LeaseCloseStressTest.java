// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheStats;
import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Await;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Concurrently;
import dev.granary.testkit.Dataset;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A seeded stress test of lease reference counts across threads and across {@code close()}. In every round a fresh
 * cache (a memory tier and a disk tier reopened over the same directory, 4 KiB pages) is read by three threads, which
 * hand their leases to two closer threads — some once, some twice so that both closers race to close the same lease —
 * close some themselves twice, and keep some open across the cache's close, while a sixth thread closes the cache at a
 * random moment under them. Run in every {@link LeakDetection} mode: untracked and tracked leases release differently.
 *
 * <p>Checked: every lease shows the right bytes until it is closed, also after the cache closed; a read fails only
 * once the cache is closing, and then with "closed" or an I/O error; no page is released twice ({@code Page.release}
 * throws {@link IllegalStateException} on a double release, which would surface from a read or {@code cache.close()};
 * inside {@code Lease.close()} the lease tracker logs it instead, but counts the lease closed twice, so the open-lease
 * count would end below zero, and the page's other holder would lose its reference); once every lease is closed,
 * no lease is open or leaked, the memory tier's used bytes are back to zero and both tiers have returned all their
 * memory and mappings.
 */
@Timeout(120)
class LeaseCloseStressTest {

    private static final long SEED = 0x16_0C;
    private static final int READERS = 3;
    private static final int CLOSERS = 2;
    private static final int MAX_ROUNDS = 300;
    private static final long BUDGET_NANOS = 5_000_000_000L;
    private static final int PAGE = 4096;
    private static final int OBJECTS = 12;

    @TempDir
    Path temp;

    /** A lease on its way to a closer, with the bytes it must show until then. */
    record Handed(Lease lease, byte[] expected) {}

    /** Every mode: untracked leases release their page directly, tracked ones through a cleaner (run at most once). */
    @ParameterizedTest
    @EnumSource(LeakDetection.class)
    void leasesClosedAnywhereReleaseEachPageOnceAndEverythingIsReturned(LeakDetection detection) throws Exception {
        Dataset data = new Dataset(Files.createDirectories(temp.resolve("data")), SEED);
        for (int i = 0; i < OBJECTS; i++) {
            data.put("o/" + i, i == 0 ? 0 : 100 + i * 1777); // 0 bytes to 19.6 KiB: 1 to 5 pages
        }
        Path diskDir = Files.createDirectories(temp.resolve("disk"));
        AtomicLong handedOff = new AtomicLong();
        AtomicLong secondCloses = new AtomicLong();
        AtomicLong heldAcrossClose = new AtomicLong();
        AtomicLong failedByClose = new AtomicLong();
        AtomicLong reads = new AtomicLong();
        long start = System.nanoTime();
        int rounds = 0;
        while (rounds < MAX_ROUNDS && System.nanoTime() - start < BUDGET_NANOS) {
            SplittableRandom roundRandom = new SplittableRandom(SEED + rounds);
            MemoryTier memory =
                    MemoryTier.builder().capacity(128 << 10).slabSize(64 << 10).build();
            DiskTier disk = DiskTier.builder()
                    .directory(diskDir)
                    .capacity(128 << 10)
                    .segmentSize(16 << 10)
                    .build();
            TieredCache cache = TieredCache.builder(PosixOrigin.of(data.root()))
                    .tier(memory)
                    .tier(disk)
                    .pageSize(PAGE)
                    .leakDetection(detection)
                    .build();
            ConcurrentLinkedQueue<Handed> queue = new ConcurrentLinkedQueue<>();
            AtomicInteger readersDone = new AtomicInteger();
            AtomicInteger opened = new AtomicInteger();
            AtomicBoolean closing = new AtomicBoolean();
            AtomicBoolean closed = new AtomicBoolean();
            int closeAfter = roundRandom.nextInt(READERS * 60);
            CountDownLatch go = new CountDownLatch(READERS + CLOSERS + 1);
            int round = rounds;
            try {
                Concurrently.run(READERS + CLOSERS + 1, thread -> {
                    SplittableRandom random = new SplittableRandom((SEED + round) * 64 + thread);
                    go.countDown();
                    go.await();
                    if (thread < READERS) {
                        List<Handed> kept;
                        try {
                            kept = read(cache, data, random, queue, opened, closing, handedOff, failedByClose, reads);
                        } finally {
                            readersDone.incrementAndGet();
                        }
                        // Kept leases outlive the cache: their bytes stay valid after close, until they are closed.
                        Await.until(closed::get, () -> "the cache to be closed");
                        for (Handed h : kept) {
                            Bytes.assertSame(h.expected(), h.lease().bytes(), "held across close: " + h.lease());
                            h.lease().close();
                            heldAcrossClose.incrementAndGet();
                        }
                    } else if (thread < READERS + CLOSERS) {
                        closeHandedLeases(queue, readersDone, secondCloses);
                    } else {
                        // Closes the cache once the readers have opened a random number of leases (or are done).
                        Await.until(
                                () -> opened.get() >= closeAfter || readersDone.get() == READERS,
                                () -> "readers to open " + closeAfter + " leases");
                        closing.set(true);
                        cache.close();
                        closed.set(true);
                        cache.close(); // idempotent
                    }
                });
            } finally {
                cache.close();
            }
            CacheStats stats = cache.stats();
            assertEquals(0, stats.openLeases(), "open leases after round " + round);
            assertEquals(0, stats.leakedLeases(), "leaked leases after round " + round);
            // A fill that close interrupted releases its page on its own thread as it ends.
            Await.until(memory::isReleased, () -> "memory tier released after round " + round + ": " + memory);
            assertEquals(0, memory.stats().usedBytes(), "memory tier used bytes after round " + round);
            Await.until(disk::isReleased, () -> "disk tier released after round " + round + ": " + disk);
            rounds++;
        }
        System.out.printf(
                "lease close stress, %s: %d rounds in %d ms; %d reads, %d leases handed to closers, %d closed"
                        + " a second time, %d held across the cache's close, %d reads failed by close%n",
                detection,
                rounds,
                (System.nanoTime() - start) / 1_000_000,
                reads.get(),
                handedOff.get(),
                secondCloses.get(),
                heldAcrossClose.get(),
                failedByClose.get());
        assertTrue(handedOff.get() > 0, "leases closed by another thread: " + handedOff);
        assertTrue(secondCloses.get() > 0, "leases a closer found already closed: " + secondCloses);
        assertTrue(heldAcrossClose.get() > 0, "leases held across the cache's close: " + heldAcrossClose);
    }

    /** Reads, checks and disposes of leases; {@return the leases to close only after the cache is closed} */
    private static List<Handed> read(
            TieredCache cache,
            Dataset data,
            SplittableRandom random,
            ConcurrentLinkedQueue<Handed> queue,
            AtomicInteger opened,
            AtomicBoolean closing,
            AtomicLong handedOff,
            AtomicLong failedByClose,
            AtomicLong reads) {
        List<Handed> kept = new ArrayList<>();
        int ops = 20 + random.nextInt(60);
        for (int i = 0; i < ops; i++) {
            String key = "o/" + random.nextInt(OBJECTS);
            byte[] all = data.bytes(key);
            int offset = all.length == 0 ? 0 : random.nextInt(all.length);
            int length = random.nextInt(4) == 0
                    ? all.length - offset
                    : random.nextInt(Math.min(all.length - offset, 2 * PAGE) + 1);
            Lease lease;
            try {
                lease = random.nextInt(5) == 0 ? cache.read(key) : cache.read(key, offset, length);
            } catch (IllegalStateException | IOException e) {
                assertTrue(closing.get(), () -> "a read failed before the cache was closed: " + e);
                for (Throwable t = e; t != null; t = t.getCause()) {
                    if (String.valueOf(t.getMessage()).contains("released more often than retained")) {
                        throw new AssertionError("a page was released twice", e);
                    }
                }
                failedByClose.incrementAndGet();
                break;
            }
            reads.incrementAndGet();
            byte[] expected = lease.offset() == 0 && lease.length() == all.length
                    ? all
                    : Arrays.copyOfRange(all, offset, offset + length);
            Bytes.assertSame(expected, lease.bytes(), lease.toString());
            opened.incrementAndGet();
            switch (random.nextInt(4)) {
                case 0 -> {
                    lease.close();
                    lease.close();
                }
                case 1 -> {
                    queue.add(new Handed(lease, expected));
                    handedOff.incrementAndGet();
                }
                case 2 -> {
                    // Both closers may take it at once: only one of them may release the page.
                    queue.add(new Handed(lease, expected));
                    queue.add(new Handed(lease, expected));
                    handedOff.incrementAndGet();
                }
                default -> kept.add(new Handed(lease, expected));
            }
        }
        return kept;
    }

    // Thread.yield on purpose: an idle closer hands the core to the readers on a 2-core machine; nothing relies on
    // the scheduler for correctness.
    @SuppressWarnings("ThreadPriorityCheck")
    private static void closeHandedLeases(
            ConcurrentLinkedQueue<Handed> queue, AtomicInteger readersDone, AtomicLong secondCloses) {
        int idle = 0;
        while (true) {
            Handed h = queue.poll();
            if (h == null) {
                if (readersDone.get() == READERS && queue.isEmpty()) {
                    return;
                }
                if (++idle % 64 == 0) {
                    Thread.yield();
                } else {
                    Thread.onSpinWait();
                }
                continue;
            }
            try {
                Bytes.assertSame(h.expected(), h.lease().bytes(), "handed " + h.lease());
            } catch (IllegalStateException e) {
                // Only if the other closer closed it first.
                assertTrue(h.lease().isClosed(), () -> "bytes() refused on an open lease: " + e);
                secondCloses.incrementAndGet();
            }
            h.lease().close();
        }
    }
}
