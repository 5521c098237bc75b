package dev.granary.bench;

import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * Wraps an origin and makes every data read and every stat wait a fixed time before it is passed on, to stand in for
 * a remote file system or an object store (a first-byte latency; bandwidth is not capped). Listings pass through
 * without delay.
 *
 * <p>The wait is real: the calling thread parks ({@link LockSupport#parkNanos}), which on a virtual thread frees its
 * carrier, so concurrent reads overlap their waits the way concurrent requests to a remote store do. A thread
 * interrupted while waiting gets an {@link InterruptedIOException} and the read is not passed on.
 *
 * <p>Thread-safe if the wrapped origin is. Closing this origin closes the wrapped one.
 */
public final class LatencyOrigin implements Origin {

    private final Origin delegate;
    private final long readNanos;
    private final long statNanos;
    private final LongAdder waits = new LongAdder();

    private LatencyOrigin(Origin delegate, long readNanos, long statNanos) {
        this.delegate = delegate;
        this.readNanos = readNanos;
        this.statNanos = statNanos;
    }

    /**
     * Wraps an origin with the same latency for reads and stats.
     *
     * @param delegate the origin that serves the bytes
     * @param latency  the wait before each read and each stat, {@code >= 0}
     * @return the wrapper
     * @throws IllegalArgumentException if an argument is null or the latency negative
     */
    public static LatencyOrigin of(Origin delegate, Duration latency) {
        return of(delegate, latency, latency);
    }

    /**
     * Wraps an origin.
     *
     * @param delegate    the origin that serves the bytes
     * @param readLatency the wait before each data read, {@code >= 0}
     * @param statLatency the wait before each stat, {@code >= 0}
     * @return the wrapper
     * @throws IllegalArgumentException if an argument is null or a latency negative
     */
    public static LatencyOrigin of(Origin delegate, Duration readLatency, Duration statLatency) {
        if (delegate == null) {
            throw new IllegalArgumentException("origin: null (expected: the origin to delay)");
        }
        if (readLatency == null || readLatency.isNegative()) {
            throw new IllegalArgumentException("read latency: " + readLatency + " (expected: a duration >= 0)");
        }
        if (statLatency == null || statLatency.isNegative()) {
            throw new IllegalArgumentException("stat latency: " + statLatency + " (expected: a duration >= 0)");
        }
        return new LatencyOrigin(delegate, readLatency.toNanos(), statLatency.toNanos());
    }

    /** {@return how many delayed calls (reads and stats) were made} */
    public long delayedCalls() {
        return waits.sum();
    }

    @Override
    public URI uri() {
        return delegate.uri();
    }

    @Override
    public ObjectInfo stat(String key) throws IOException {
        await(statNanos, "stat of '" + key + "'");
        return delegate.stat(key);
    }

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        await(readNanos, "read of '" + object.key() + "'");
        delegate.read(object, position, dst);
    }

    @Override
    public Stream<ObjectInfo> list(String prefix) throws IOException {
        return delegate.list(prefix);
    }

    @Override
    public int maxConcurrency() {
        return delegate.maxConcurrency();
    }

    @Override
    public long retries() {
        return delegate.retries();
    }

    @Override
    public void close() throws IOException {
        delegate.close();
    }

    @Override
    public String toString() {
        return String.format(java.util.Locale.ROOT, "LatencyOrigin[%s, read %.3f ms, stat %.3f ms]", delegate,
                readNanos / 1e6, statNanos / 1e6);
    }

    /** Parks until {@code nanos} have passed; parkNanos may return early (spuriously), hence the loop. */
    private void await(long nanos, String what) throws InterruptedIOException {
        if (nanos == 0) {
            return;
        }
        waits.increment();
        long deadline = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(this, left);
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted during the injected latency of the " + what + " on "
                        + delegate.uri());
            }
        }
    }
}
