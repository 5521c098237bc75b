// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * Single flight of page fills: concurrent misses on one page make one fill, which runs on the {@link FillThreads};
 * every reader that missed waits on the same {@link Flight} (with {@link Deadlines#await}) and gets its own
 * reference to the page.
 *
 * <h2>Single flight and page ownership</h2>
 * A {@link Flight} is registered under the page key before the fill starts; later misses on the same key join it (an
 * atomic {@code compute} on the map bin increments its joiner count). When the fill is done, the flight first leaves
 * the map (no one can join any more), then retains the page once per joiner and drops the fill's own reference: each
 * joiner owns exactly one reference. A joiner that stops waiting (timeout, interrupt, another page of its read failed)
 * hands its reference back through {@link #abandon(Flight)}.
 *
 * <h2>Closing</h2>
 * {@link #close()} stops the fill threads, fails every flight still registered and every queued fill at once (their
 * waiters see "cache is closed", not a socket timeout), and interrupts the fills in progress.
 */
final class PageFlights {

    private final String originId;
    private final FillThreads fills;
    private final ConcurrentHashMap<PageKey, Flight> flights = new ConcurrentHashMap<>();

    /**
     * Makes the registry of one cache's fills.
     *
     * @param originId the origin's URI as text, for the coalesced-miss events
     * @param fills    the threads fills run on; closed by {@link #close()}
     */
    PageFlights(String originId, FillThreads fills) {
        this.originId = originId;
        this.fills = fills;
    }

    /** A fill in progress: completes with the page, retained once for each joiner. */
    static final class Flight extends CompletableFuture<Page> {
        private final AtomicInteger joiners = new AtomicInteger(1);
        /** Who the fill's origin read is charged to: the reader that started it. */
        private final dev.granary.internal.ReadAccount account = dev.granary.internal.ReadAccount.current();
    }

    /** What fills a page once the origin was asked: allocates, reads, seals and offers it to the tiers. */
    interface Filler {
        /** Returns the filled, sealed page with one reference owned by the caller. */
        Page fill(PageKey key) throws IOException;
    }

    /**
     * Starts the fill of a page, or joins the one in progress. The caller must {@link Deadlines#await} or
     * {@link #abandon} the returned flight exactly once.
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
            dev.granary.internal.FlightEvents.coalescedMiss(originId, key);
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
                    page = dev.granary.internal.ReadAccount.call(flight.account, () -> filler.fill(key));
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

    /** Gives up on a flight: its page, if it ever arrives, is released rather than used. */
    static void abandon(Flight flight) {
        var unused = flight.thenAccept(Page::release); // the release is the whole effect: nothing waits on it
    }

    /**
     * Stops the fill threads, fails every registered flight and every queued fill, and interrupts the fills in
     * progress.
     */
    void close() {
        List<Runnable> queued = fills.shutdownNow();
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
