// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * A fault-injecting wrapper around a real origin: counts calls, can hold calls at a {@link Gate}, fail them, or run
 * a hook before a read. Everything not injected goes to the real origin (Alluxio's {@code HangingPageStore} idea).
 */
public final class FaultyOrigin implements Origin {

    /** Runs before a data read reaches the real origin; may throw to fail it. */
    @FunctionalInterface
    public interface ReadHook {
        void beforeRead(ObjectInfo object, long position, long length) throws IOException, InterruptedException;
    }

    private final Origin delegate;
    private final AtomicInteger reads = new AtomicInteger();
    private final AtomicInteger stats = new AtomicInteger();
    private volatile Gate readGate;
    private volatile Gate statGate;
    private volatile IOException statFailure;
    private volatile IOException readFailure;
    private volatile ReadHook readHook;
    private volatile boolean closed;

    public FaultyOrigin(Origin delegate) {
        this.delegate = delegate;
    }

    public FaultyOrigin holdReads(Gate gate) {
        this.readGate = gate;
        return this;
    }

    public FaultyOrigin holdStats(Gate gate) {
        this.statGate = gate;
        return this;
    }

    /** Makes every stat fail with this exception (null to heal). */
    public FaultyOrigin failStats(IOException failure) {
        this.statFailure = failure;
        return this;
    }

    /** Makes every data read fail with this exception (null to heal). */
    public FaultyOrigin failReads(IOException failure) {
        this.readFailure = failure;
        return this;
    }

    public FaultyOrigin onRead(ReadHook hook) {
        this.readHook = hook;
        return this;
    }

    public int reads() {
        return reads.get();
    }

    public int stats() {
        return stats.get();
    }

    public boolean isClosed() {
        return closed;
    }

    @Override
    public URI uri() {
        return delegate.uri();
    }

    @Override
    public ObjectInfo stat(String key) throws IOException {
        stats.incrementAndGet();
        pass(statGate);
        IOException failure = statFailure;
        if (failure != null) {
            throw failure;
        }
        return delegate.stat(key);
    }

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        reads.incrementAndGet();
        pass(readGate);
        IOException failure = readFailure;
        if (failure != null) {
            throw failure;
        }
        ReadHook hook = readHook;
        if (hook != null) {
            try {
                hook.beforeRead(object, position, dst.byteSize());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted in read hook");
            }
        }
        delegate.read(object, position, dst);
    }

    @Override
    public Stream<ObjectInfo> list(String prefix) throws IOException {
        return delegate.list(prefix);
    }

    @Override
    public ObjectInfo write(String key, byte[] bytes) throws IOException {
        return delegate.write(key, bytes);
    }

    @Override
    public int maxConcurrency() {
        return delegate.maxConcurrency();
    }

    @Override
    public void close() throws IOException {
        closed = true;
        delegate.close();
    }

    private static void pass(Gate gate) throws IOException {
        if (gate == null) {
            return;
        }
        try {
            gate.pass();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted at a test gate");
        }
    }
}
