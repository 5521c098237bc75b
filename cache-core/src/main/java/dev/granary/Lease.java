// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Page;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;

/**
 * The bytes of one read, held for the reader until {@link #close()}.
 *
 * <p>While a lease is open, the memory it views cannot be freed or reused: eviction only drops the cache's own
 * reference. A read that lies within one cached page is a zero-copy view of the cache's memory; a read that spans
 * pages is assembled by one copy into a buffer of its own.
 *
 * <h2>Rules</h2>
 * <ul>
 *   <li>{@link #bytes()} and {@link #segment()} are valid until {@code close()}. Do not keep them, or views of them,
 *       beyond it: after close the memory may hold another page's bytes. Copy what you keep.</li>
 *   <li>{@code close()} may be called more than once, from any thread, and never throws.</li>
 *   <li>{@code bytes()} or {@code segment()} after close throws {@link IllegalStateException}.</li>
 *   <li>A lease that is dropped without close pins its memory; leak detection ({@link LeakDetection}) reports it.</li>
 *   <li>Under {@link LeakDetection#PARANOID} (for tests), a zero-copy buffer or segment used after its lease closed
 *       throws {@link IllegalStateException} instead of showing bytes the memory holds by then.</li>
 * </ul>
 *
 * <h2>Thread safety</h2>
 * A lease may be handed to and closed by another thread. The buffer returned by {@code bytes()} is one shared instance
 * per lease: its position and limit are the caller's to move, so do not share it between threads without
 * {@link ByteBuffer#duplicate()}.
 */
public final class Lease implements AutoCloseable {

    private static final VarHandle CLOSED;
    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0).asReadOnlyBuffer();

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(Lease.class, "closed", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String key;
    private final long offset;
    private final ByteBuffer view;
    private final Page page;
    private final LeaseTracker tracker;
    private final LeaseTracker.TrackedRelease tracked;

    @SuppressWarnings("unused") // accessed through CLOSED
    private volatile int closed;

    private Lease(String key, long offset, ByteBuffer view, Page page, LeaseTracker tracker) {
        LeaseTracker.Guard guard =
                tracker != null && page != null && tracker.paranoid() ? LeaseTracker.guard(view) : null;
        this.key = key;
        this.offset = offset;
        this.view = guard == null ? view : guard.view();
        this.page = page;
        this.tracker = tracker;
        this.tracked = tracker == null ? null : tracker.opened(this, page, guard);
    }

    /** A zero-copy lease on part of one page; takes over one reference the caller holds on the page. */
    static Lease ofPage(String key, long offset, Page page, int pageOffset, int length, LeaseTracker tracker) {
        return new Lease(key, offset, page.slice(pageOffset, length), page, tracker);
    }

    /** A lease over bytes the cache assembled into a buffer of their own; holds no page. */
    static Lease ofCopy(String key, long offset, ByteBuffer readOnly, LeaseTracker tracker) {
        return new Lease(key, offset, readOnly, null, tracker);
    }

    /** An empty lease for a zero-length read; holds nothing and is not counted. */
    static Lease empty(String key, long offset) {
        return new Lease(key, offset, EMPTY, null, null);
    }

    /**
     * {@return the bytes: a read-only buffer positioned at 0 with limit {@link #length()}}
     *
     * @throws IllegalStateException if the lease is closed
     */
    public ByteBuffer bytes() {
        ensureOpen();
        return view;
    }

    /**
     * {@return the bytes as a read-only memory segment of {@link #length()} bytes}
     *
     * @throws IllegalStateException if the lease is closed
     */
    public MemorySegment segment() {
        ensureOpen();
        return MemorySegment.ofBuffer(view.duplicate().clear());
    }

    /** {@return the object key this lease reads} */
    public String key() {
        return key;
    }

    /** {@return the position of the first byte within the object} */
    public long offset() {
        return offset;
    }

    /** {@return the number of bytes} */
    public int length() {
        return view.capacity();
    }

    /** {@return whether {@link #close()} was called} */
    public boolean isClosed() {
        return (int) CLOSED.getVolatile(this) != 0;
    }

    /** Releases the bytes. Idempotent; never throws. */
    @Override
    public void close() {
        if (CLOSED.compareAndSet(this, 0, 1)) {
            if (tracked != null) {
                tracked.closeExplicitly();
            } else if (tracker != null) {
                LeaseTracker.release(page, tracker);
            }
        }
    }

    private void ensureOpen() {
        if ((int) CLOSED.getOpaque(this) != 0) {
            throw new IllegalStateException("lease of '" + key + "' [" + offset + ", +" + view.capacity()
                    + ") is closed (expected: an open lease; copy the bytes you need before close())");
        }
    }

    @Override
    public String toString() {
        return "Lease['" + key + "' [" + offset + ", +" + view.capacity() + ")" + (isClosed() ? ", closed]" : "]");
    }
}
