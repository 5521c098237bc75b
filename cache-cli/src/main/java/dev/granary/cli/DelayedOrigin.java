// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.time.Duration;
import java.util.stream.Stream;

/**
 * An origin that answers every data read {@code delayNanos} late: the injected latency of {@code granary bench}'s
 * second sweep (the seeds' "add artificial latency with tc"), in process, without root. The delay is a sleep on the
 * reading virtual thread, as a network round trip would be: it holds a concurrency slot, not a core. Thread-safe.
 */
final class DelayedOrigin implements Origin {

    private final Origin delegate;
    private final long delayNanos;

    DelayedOrigin(Origin delegate, long delayNanos) {
        this.delegate = delegate;
        this.delayNanos = delayNanos;
    }

    @Override
    public URI uri() {
        return delegate.uri();
    }

    @Override
    public ObjectInfo stat(String key) throws IOException {
        return delegate.stat(key);
    }

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        if (delayNanos > 0) {
            try {
                Thread.sleep(Duration.ofNanos(delayNanos));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted in the injected latency of " + object.key());
            }
        }
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
    public void close() throws IOException {
        delegate.close();
    }
}
