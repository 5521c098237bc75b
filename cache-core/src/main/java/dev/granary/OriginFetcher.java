// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Origin;
import dev.granary.spi.Page;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;

/**
 * Every request the cache makes to its origin goes through here, metered ({@link #stats()}) and bounded: data reads by
 * the origin's concurrency limit ({@link Origin#maxConcurrency()}), metadata requests by the cache's read timeout.
 *
 * <p>The rest of the way to the origin is in classes of their own: {@link PageFlights} makes concurrent misses on one
 * page one fill, {@link FillThreads} runs the fills (which call {@link #readInto}), and {@link Deadlines} bounds every
 * wait for the origin by the read timeout.
 *
 * <h2>Threads</h2>
 * Metadata requests ({@code stat}) run on virtual threads of their own, so that they never queue behind fills; data
 * reads run on the caller's thread, a fill thread. {@link #close()} interrupts the metadata requests in progress.
 */
final class OriginFetcher implements AutoCloseable {

    private final Origin origin;
    private final URI originUri;
    /** Runs metadata requests: a virtual thread each. */
    private final ExecutorService executor;

    private final int maxConcurrency;
    private final Semaphore permits;
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
    }

    URI originUri() {
        return originUri;
    }

    /**
     * Reads bytes of one object version from the origin into {@code page}'s writable memory, metered and bounded by
     * the concurrency limit. Runs on the fill's thread.
     */
    void readInto(dev.granary.ObjectInfo info, Page page) throws IOException {
        try {
            permits.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted waiting for a read slot of origin " + originUri);
        }
        try {
            reads.increment();
            long start = System.nanoTime();
            dev.granary.internal.FlightEvents.originRead(
                    origin, info, page.key().offset(), page.writableSegment());
            bytes.add(page.length());
            dev.granary.internal.ReadAccount.originRead(page.length(), System.nanoTime() - start);
        } catch (IOException | RuntimeException e) {
            errors.increment();
            throw e;
        } finally {
            permits.release();
        }
    }

    /** Asks the origin for an object's metadata on a virtual thread, waiting until the deadline. */
    dev.granary.ObjectInfo stat(String key, long deadlineNanos) throws IOException {
        CompletableFuture<dev.granary.ObjectInfo> result = new CompletableFuture<>();
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
        return Deadlines.await(result, deadlineNanos, () -> "the metadata of '" + key + "'");
    }

    /** Lists through the origin, counting the request. */
    Stream<dev.granary.ObjectInfo> list(String prefix) throws IOException {
        metadataRequests.increment();
        try {
            return origin.list(prefix);
        } catch (IOException | UncheckedIOException e) {
            errors.increment();
            throw e;
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

    /** Stops accepting metadata requests and interrupts those in progress. */
    @Override
    public void close() {
        executor.shutdownNow();
    }
}
