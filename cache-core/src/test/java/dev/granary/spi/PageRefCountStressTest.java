// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.testkit.Concurrently;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A randomized, seeded stress test of {@link Page}'s reference count: in each round, worker threads retain, read and
 * release one page over and over while another thread drops the owner's reference at a random moment. The page's
 * memory is a shared {@link Arena} of its own that {@code deallocate()} closes, so a read after free throws instead of
 * reading stale bytes.
 *
 * <p>Checked in every round: {@code deallocate()} runs exactly once, never while a worker holds a reference (workers
 * count themselves in and out around their hold), a successful {@code tryRetain} never sees freed memory, a failed
 * one sees a count of zero, and once freed the page refuses {@code tryRetain} and reports a further release as a
 * double release without disturbing the count.
 *
 * <p>Lincheck (org.jetbrains.kotlinx:lincheck-jvm 2.39) was tried first and does not run on JDK 25: its ASM cannot
 * read class files of major version 69 ("Unsupported class file major version 69"), and it fails on {@link PageKey}
 * with "can't get field offset on a record class" (it reads object fields through {@code Unsafe}); hence this harness.
 */
@Timeout(120)
class PageRefCountStressTest {

    private static final long SEED = 0x16_05L;
    private static final int WORKERS = 4;
    private static final int MAX_ROUNDS = 600;
    private static final long BUDGET_NANOS = 8_000_000_000L;
    private static final long PATTERN = 0x0123_4567_89AB_CDEFL;

    /** A page whose memory is an arena of its own; records how and when it was freed. */
    static final class ArenaPage extends Page {

        final Arena arena;
        final AtomicInteger deallocations = new AtomicInteger();
        /** Workers holding a reference now: incremented after a successful retain, decremented before release. */
        final AtomicInteger holders = new AtomicInteger();

        final ConcurrentLinkedQueue<String> problems;
        volatile boolean freed;
        /** Set once the owner has dropped its reference: workers then stop after a few more holds. */
        volatile boolean ownerGone;

        ArenaPage(PageKey key, Arena arena, ConcurrentLinkedQueue<String> problems) {
            super(key, arena.allocate(key.length()));
            this.arena = arena;
            this.problems = problems;
            writableSegment().set(ValueLayout.JAVA_LONG_UNALIGNED, 0, PATTERN);
            seal();
        }

        @Override
        protected void deallocate() {
            int n = deallocations.incrementAndGet();
            if (n != 1) {
                problems.add(key() + " deallocated " + n + " times");
            }
            if (refCnt() != 0) {
                problems.add(key() + " deallocated with reference count " + refCnt());
            }
            int held = holders.get();
            if (held != 0) {
                problems.add(key() + " deallocated while " + held + " worker(s) held a reference");
            }
            freed = true;
            arena.close();
        }
    }

    @Test
    void deallocateRunsExactlyOnceAndNeverUnderAHolder() throws Exception {
        ConcurrentLinkedQueue<String> problems = new ConcurrentLinkedQueue<>();
        AtomicInteger round = new AtomicInteger();
        AtomicLong failedRetains = new AtomicLong();
        AtomicLong freedByWorker = new AtomicLong();
        AtomicLong freedByOwner = new AtomicLong();
        List<ArenaPage> current = new ArrayList<>(List.of(newPage(0, problems)));
        long start = System.nanoTime();
        boolean[] stop = {false};
        // Runs on the last thread to arrive once every thread has finished the round: checks that round's page and
        // sets up the next. The barrier publishes both to every thread.
        Runnable betweenRounds = () -> {
            ArenaPage page = current.getFirst();
            assertEquals(1, page.deallocations.get(), "deallocations of " + page.key());
            assertEquals(0, page.refCnt(), "count of a freed page");
            assertFalse(page.arena.scope().isAlive(), "the freed page's memory is returned");
            assertFalse(page.tryRetain(), "tryRetain after free");
            IllegalStateException e = assertThrows(IllegalStateException.class, page::release, "double release");
            assertTrue(e.getMessage().contains("released more often than retained"), e.getMessage());
            assertEquals(0, page.refCnt(), "a refused release leaves the count at zero");
            assertThrows(IllegalStateException.class, () -> page.retain(1), "retain after free");
            assertEquals(0, page.refCnt(), "a refused retain leaves the count at zero");
            assertEquals(1, page.deallocations.get(), "deallocations after the refused calls");
            assertTrue(problems.isEmpty(), () -> String.join("; ", problems));
            int next = round.incrementAndGet();
            if (next >= MAX_ROUNDS || System.nanoTime() - start > BUDGET_NANOS) {
                stop[0] = true;
            } else {
                current.set(0, newPage(next, problems));
            }
        };
        CyclicBarrier barrier = new CyclicBarrier(WORKERS + 1, betweenRounds);
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        try {
            Concurrently.run(WORKERS + 1, thread -> {
                try {
                    runRounds(thread, barrier, current, stop, failedRetains, freedByOwner, freedByWorker);
                } catch (Throwable t) {
                    failures.add(t);
                    throw t;
                }
            });
        } catch (Exception | AssertionError e) {
            // A thread that failed leaves the others at the barrier until its timeout breaks it: report the first
            // real failure, not the broken barrier it caused.
            Throwable first = failures.isEmpty() ? e : failures.peek();
            throw new AssertionError("stress round " + round.get() + " failed: " + first, first);
        }
        int rounds = round.get();
        System.out.printf(
                "page stress: %d rounds in %d ms; freed by owner %d, by a worker %d; failed tryRetain %d%n",
                rounds,
                (System.nanoTime() - start) / 1_000_000,
                freedByOwner.get(),
                freedByWorker.get(),
                failedRetains.get());
        assertEquals(rounds, freedByOwner.get() + freedByWorker.get(), "exactly one release freed each page");
        // The races this test is about happened: some pages were freed by a worker after the owner let go, and some
        // workers found a page already freed.
        assertTrue(freedByWorker.get() > 0, "pages freed by a worker's release: " + freedByWorker);
        assertTrue(freedByOwner.get() > 0, "pages freed by the owner's release: " + freedByOwner);
        assertTrue(failedRetains.get() > 0, "tryRetain calls that found the page freed: " + failedRetains);
    }

    /** One thread's part of every round: the owner's ({@code thread == WORKERS}) or a worker's. */
    private static void runRounds(
            int thread,
            CyclicBarrier barrier,
            List<ArenaPage> current,
            boolean[] stop,
            AtomicLong failedRetains,
            AtomicLong freedByOwner,
            AtomicLong freedByWorker)
            throws Exception {
        SplittableRandom random = new SplittableRandom(SEED + thread);
        while (true) {
            ArenaPage page = current.getFirst();
            if (thread == WORKERS) {
                // The owner: drops its reference after a random head start of the workers.
                int spins = random.nextInt(4) == 0 ? 0 : random.nextInt(5_000);
                for (int i = 0; i < spins; i++) {
                    Thread.onSpinWait();
                }
                page.ownerGone = true;
                if (page.release()) {
                    freedByOwner.incrementAndGet();
                }
            } else if (work(page, random, failedRetains)) {
                freedByWorker.incrementAndGet();
            }
            // Bounded, so that a thread that failed breaks the barrier for the others instead of hanging them.
            barrier.await(20, TimeUnit.SECONDS);
            if (stop[0]) {
                return;
            }
        }
    }

    /**
     * Retains, reads and releases until the page is found freed, or a few holds after the owner let go; holds each
     * reference for a random moment, so that the owner's release often lands while workers hold the page.
     *
     * @return whether this worker's release freed the page
     */
    private static boolean work(ArenaPage page, SplittableRandom random, AtomicLong failedRetains) {
        int after = random.nextInt(8);
        while (!page.ownerGone || after-- > 0) {
            if (!page.tryRetain()) {
                failedRetains.incrementAndGet();
                if (page.refCnt() != 0) {
                    page.problems.add("tryRetain failed with reference count " + page.refCnt());
                }
                return false;
            }
            page.holders.incrementAndGet();
            if (page.freed) {
                page.problems.add(page.key() + " freed while a worker holds a reference");
            }
            // Throws IllegalStateException if the arena was closed: a read after free.
            long value = page.segment().get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
            if (value != PATTERN) {
                page.problems.add(page.key() + " read " + Long.toHexString(value));
            }
            int extra = random.nextInt(3);
            page.retain(extra); // on behalf of callees that each release one
            for (int spins = random.nextInt(64); spins > 0; spins--) {
                Thread.onSpinWait();
            }
            for (int j = 0; j < extra; j++) {
                if (page.release()) {
                    page.problems.add(page.key() + " freed by an extra release while the worker holds one");
                }
            }
            page.holders.decrementAndGet();
            if (page.release()) {
                return true;
            }
        }
        return false;
    }

    private static ArenaPage newPage(int round, ConcurrentLinkedQueue<String> problems) {
        return new ArenaPage(new PageKey("stress://", "round-" + round, "v1", 0, 64), Arena.ofShared(), problems);
    }

    @Test
    void heapPagesUseTheSameCount() {
        // The sequential contract the stress test relies on, on the smallest page there is.
        AtomicInteger freed = new AtomicInteger();
        Page page = new Page(new PageKey("o", "k", "v", 0, 1), MemorySegment.ofArray(new byte[1])) {
            @Override
            protected void deallocate() {
                freed.incrementAndGet();
            }
        };
        assertEquals(1, page.refCnt());
        assertTrue(page.tryRetain());
        page.retain(2);
        assertEquals(4, page.refCnt());
        assertFalse(page.release());
        assertFalse(page.release());
        assertFalse(page.release());
        assertEquals(0, freed.get());
        assertTrue(page.release());
        assertEquals(1, freed.get());
        assertFalse(page.tryRetain());
    }
}
