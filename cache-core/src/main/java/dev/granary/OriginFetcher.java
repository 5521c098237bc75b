// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.internal.FlightEvents;
import dev.granary.internal.ReadAccount;
import dev.granary.spi.Origin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * Every request the cache makes to its origin goes through here: metered, bounded in concurrency, bounded in time,
 * and — for page fills — coalesced, so concurrent misses on one page make one origin read.
 *
 * <h2>Threads</h2>
 * Page fills run on a bounded pool of <em>platform</em> threads, one thread per allowed origin read
 * ({@link Origin#maxConcurrency()}, at most {@value #MAX_FILL_THREADS}), started on demand and ended after
 * {@value #IDLE_SECONDS} s idle; fills beyond that wait in the pool's queue. Metadata requests ({@code stat}) run on
 * virtual threads of their own, so that they never queue behind fills. Why platform threads for fills: an origin read
 * through an HTTP client parks in socket reads under a deep stack, and parking and resuming a virtual thread there
 * costs CPU a platform thread does not spend (docs/decisions/0010-fills-on-platform-threads.md: in a profile, the
 * fills' work was 1.15 times a plain SDK loop's on platform threads, 1.35 times on virtual threads). The system property {@code granary.fillThreads=virtual} puts fills back on a
 * virtual thread each (read when a cache is built), for measuring the two side by side.
 * <p>
 * Callers wait on the result with the cache's read timeout, so a hung origin costs a caller an {@link IOException}
 * after the timeout, never a hang; its fill goes on until the origin gives up (its own socket timeout).
 * {@link #close()} fails every flight still registered and every queued fill at once, and interrupts the fills in
 * progress (a platform thread blocked in a socket read ends when the origin closes its connections).
 *
 * <h2>Single flight and page ownership</h2>
 * A {@link Flight} is registered under the page key before the fill starts; later misses on the same key join it (an
 * atomic {@code compute} on the map bin increments its joiner count). When the fill is done, the flight first leaves
 * the map (no one can join any more), then retains the page once per joiner and drops the fill's own reference: each
 * joiner owns exactly one reference. A joiner that stops waiting (timeout, interrupt, another page of its read failed)
 * hands its reference back through {@link #abandon(Flight)}.
 */
final class OriginFetcher implements AutoCloseable {

    private final Origin origin;
    private final URI originUri;
    /** The most platform threads one cache's fills use, whatever an origin's concurrency limit says. */
    static final int MAX_FILL_THREADS = 1024;

    private static final int IDLE_SECONDS = 30;

    /** Runs fills: a bounded platform-thread pool, or a virtual thread per fill ({@code granary.fillThreads}). */
    private final ExecutorService fills;
    /** Runs metadata requests: a virtual thread each. */
    private final ExecutorService executor;

    private final int maxConcurrency;
    private final Semaphore permits;
    private final ConcurrentHashMap<PageKey, Flight> flights = new ConcurrentHashMap<>();
    private final LongAdder reads = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final LongAdder metadataRequests = new LongAdder();
    private final LongAdder errors = new LongAdder();

    OriginFetcher(Origin origin) {
        this.origin = origin;
        this.originUri = origin.uri();
        this.executor = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("granary-origin-", 0).factory());
        this.maxConcurrency = origin.maxConcurrency();
        this.permits = new Semaphore(maxConcurrency);
        if ("virtual".equals(System.getProperty("granary.fillThreads"))) {
            this.fills = executor;
        } else {
            int threads = Math.max(1, Math.min(maxConcurrency, MAX_FILL_THREADS));
            ThreadPoolExecutor pool = new ThreadPoolExecutor(
                    threads,
                    threads,
                    IDLE_SECONDS,
                    TimeUnit.SECONDS,
                    new LinkedBlockingQueue<>(),
                    Thread.ofPlatform().daemon().name("granary-fill-", 0).factory());
            pool.allowCoreThreadTimeOut(true);
            this.fills = pool;
        }
    }

    URI originUri() {
        return originUri;
    }

    /** A fill in progress: completes with the page, retained once for each joiner. */
    static final class Flight extends CompletableFuture<Page> {
        private final AtomicInteger joiners = new AtomicInteger(1);
        /** Who the fill's origin read is charged to: the reader that started it. */
        private final ReadAccount account = ReadAccount.current();
    }

    /** What fills a page once the origin was asked: allocates, reads, seals and offers it to the tiers. */
    interface Filler {
        /** Returns the filled, sealed page with one reference owned by the caller. */
        Page fill(PageKey key) throws IOException;
    }

    /**
     * Starts the fill of a page, or joins the one in progress. The caller must {@link #await} or {@link #abandon} the
     * returned flight exactly once.
     *
     * @param recheck looks the page up again once the flight is registered, so a fill that finished just before is
     *                not repeated; returns a retained page or null
     */
    Flight fetch(PageKey key, Function<PageKey, Page> recheck, Filler filler) {
        Flight mine = new Flight();
        Flight flight = flights.compute(key, (k, current) -> {
            if (current == null) {
                return mine;
            }
            current.joiners.incrementAndGet();
            return current;
        });
        if (flight != mine) {
            FlightEvents.coalescedMiss(originUri.toString(), key);
            return flight;
        }
        try {
            fills.execute(new Fill(mine, key, recheck, filler));
        } catch (RejectedExecutionException e) {
            flights.remove(key, mine);
            mine.completeExceptionally(closed(e));
        }
        return mine;
    }

    private static IllegalStateException closed(Throwable cause) {
        return new IllegalStateException("cache is closed (expected: an open cache)", cause);
    }

    /** One fill as a task: a named type, so that {@link #close()} can fail the flights of fills still queued. */
    private final class Fill implements Runnable {
        final Flight flight;
        final PageKey key;
        final Function<PageKey, Page> recheck;
        final Filler filler;

        Fill(Flight flight, PageKey key, Function<PageKey, Page> recheck, Filler filler) {
            this.flight = flight;
            this.key = key;
            this.recheck = recheck;
            this.filler = filler;
        }

        @Override
        public void run() {
            Page page;
            try {
                page = recheck.apply(key);
                if (page == null) {
                    page = ReadAccount.call(flight.account, () -> filler.fill(key));
                }
            } catch (Throwable t) {
                flights.remove(key, flight);
                flight.completeExceptionally(t);
                return;
            }
            flights.remove(key, flight);
            // No one can join any more: hand one reference to each joiner, then drop the fill's own.
            int joiners = flight.joiners.get();
            page.retain(joiners);
            page.release();
            if (!flight.complete(page)) {
                // close() failed the flight meanwhile: no joiner takes its reference, so hand them back here.
                for (int i = 0; i < joiners; i++) {
                    page.release();
                }
            }
        }
    }

    /**
     * Reads bytes of one object version from the origin into {@code page}'s writable memory, metered and bounded by
     * the concurrency limit. Runs on the fill's thread.
     */
    void readInto(ObjectInfo info, Page page) throws IOException {
        try {
            permits.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted waiting for a read slot of origin " + originUri);
        }
        try {
            reads.increment();
            long start = System.nanoTime();
            FlightEvents.originRead(origin, info, page.key().offset(), page.writableSegment());
            bytes.add(page.length());
            ReadAccount.originRead(page.length(), System.nanoTime() - start);
        } catch (IOException | RuntimeException e) {
            errors.increment();
            throw e;
        } finally {
            permits.release();
        }
    }

    /** Asks the origin for an object's metadata on a virtual thread, waiting until the deadline. */
    ObjectInfo stat(String key, long deadlineNanos) throws IOException {
        CompletableFuture<ObjectInfo> result = new CompletableFuture<>();
        try {
            executor.execute(() -> {
                metadataRequests.increment();
                try {
                    result.complete(origin.stat(key));
                } catch (Throwable t) {
                    if (!(t instanceof NoSuchObjectException)) {
                        errors.increment();
                    }
                    result.completeExceptionally(t);
                }
            });
        } catch (RejectedExecutionException e) {
            throw new IllegalStateException("cache is closed (expected: an open cache)", e);
        }
        return await(result, deadlineNanos, () -> "the metadata of '" + key + "'");
    }

    /** Lists through the origin, counting the request. */
    Stream<ObjectInfo> list(String prefix) throws IOException {
        metadataRequests.increment();
        try {
            return origin.list(prefix);
        } catch (IOException | UncheckedIOException e) {
            errors.increment();
            throw e;
        }
    }

    /** Gives up on a flight: its page, if it ever arrives, is released rather than used. */
    static void abandon(Flight flight) {
        var _ = flight.thenAccept(Page::release); // fire and forget: nobody waits for an abandoned flight
    }

    /**
     * Waits for a result until the deadline, unwrapping failures to the exception the origin threw.
     *
     * @throws IOException after the deadline, naming what was awaited and the origin
     */
    static <T> T await(CompletableFuture<T> future, long deadlineNanos, Supplier<String> what) throws IOException {
        try {
            long remaining = deadlineNanos - System.nanoTime();
            return future.get(Math.max(0, remaining), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new IOException(
                    "timed out waiting for " + what.get()
                            + " from the origin (the cache's readTimeout elapsed; is the origin reachable?)",
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted waiting for " + what.get() + " from the origin");
        } catch (ExecutionException e) {
            throw rethrow(e.getCause());
        }
    }

    private static IOException rethrow(Throwable cause) {
        switch (cause) {
            case IOException io -> {
                return io;
            }
            case RuntimeException re -> throw re;
            case Error err -> throw err;
            default -> {
                return new IOException(cause);
            }
        }
    }

    OriginStats stats() {
        return new OriginStats(
                reads.sum(),
                bytes.sum(),
                metadataRequests.sum(),
                errors.sum(),
                origin.retries(),
                maxConcurrency - permits.availablePermits());
    }

    /**
     * Stops accepting work, fails every registered flight (its waiters see "cache is closed" at once, not after a
     * socket timeout) and every queued fill, and interrupts the fills in progress.
     */
    @Override
    public void close() {
        List<Runnable> queued = fills.shutdownNow();
        executor.shutdownNow();
        IllegalStateException closed = closed(null);
        for (Runnable task : queued) {
            if (task instanceof Fill fill) {
                flights.remove(fill.key, fill.flight);
                fill.flight.completeExceptionally(closed);
            }
        }
        for (Flight flight : flights.values()) {
            flight.completeExceptionally(closed);
        }
    }
}
