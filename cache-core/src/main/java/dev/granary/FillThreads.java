// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The threads page fills run on: a bounded pool of <em>platform</em> threads, one per allowed origin read
 * ({@link dev.granary.spi.Origin#maxConcurrency()}, at most {@value #MAX_FILL_THREADS}), started on demand and ended
 * after {@value #IDLE_SECONDS} s idle; fills beyond that wait in the pool's queue. Why platform threads: an origin read
 * through an HTTP client parks in socket reads under a deep stack, and parking and resuming a virtual thread there
 * costs CPU a platform thread does not spend (docs/decisions/0010-fills-on-platform-threads.md: in a profile, the
 * fills' work was 1.15 times a plain SDK loop's on platform threads, 1.35 times on virtual threads). The system
 * property {@code granary.fillThreads=virtual} puts fills back on a virtual thread each (read when a cache is built),
 * for measuring the two side by side.
 *
 * <p>Only runs fills: which fills to start, and who waits for them, is {@link PageFlights}'s.
 */
final class FillThreads {

    /** The most platform threads one cache's fills use, whatever an origin's concurrency limit says. */
    static final int MAX_FILL_THREADS = 1024;

    private static final int IDLE_SECONDS = 30;

    /** A bounded platform-thread pool, or a virtual thread per fill ({@code granary.fillThreads}). */
    private final ExecutorService pool;

    /**
     * Makes the threads for an origin that allows {@code maxConcurrency} reads at once.
     *
     * @param maxConcurrency the origin's concurrency limit
     */
    FillThreads(int maxConcurrency) {
        if ("virtual".equals(System.getProperty("granary.fillThreads"))) {
            this.pool = Executors.newThreadPerTaskExecutor(
                    Thread.ofVirtual().name("granary-origin-", 0).factory());
        } else {
            int threads = Math.max(1, Math.min(maxConcurrency, MAX_FILL_THREADS));
            ThreadPoolExecutor executor = new ThreadPoolExecutor(
                    threads,
                    threads,
                    IDLE_SECONDS,
                    TimeUnit.SECONDS,
                    new LinkedBlockingQueue<>(),
                    Thread.ofPlatform().daemon().name("granary-fill-", 0).factory());
            executor.allowCoreThreadTimeOut(true);
            this.pool = executor;
        }
    }

    /**
     * Runs a fill on a fill thread, at once or once one is free.
     *
     * @throws RejectedExecutionException after {@link #shutdownNow()}
     */
    void execute(Runnable fill) {
        pool.execute(fill);
    }

    /**
     * Stops: takes no more fills, interrupts those running (a platform thread blocked in a socket read ends when the
     * origin closes its connections) and returns those still queued, which never run.
     */
    List<Runnable> shutdownNow() {
        return pool.shutdownNow();
    }
}
