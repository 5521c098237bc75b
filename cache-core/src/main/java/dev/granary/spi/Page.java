// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * The bytes of one page in some tier's memory (or on the heap), with a reference count.
 *
 * <h2>Lifecycle</h2>
 * A page is created with a count of one, owned by its creator. Whoever keeps a reference beyond the call that gave it
 * {@linkplain #tryRetain() retains} it and {@linkplain #release() releases} it when done; when the count reaches zero
 * the page {@linkplain #deallocate() deallocates} its memory, exactly once. A tier holds one reference for as long as
 * the page is in its index; every {@code Lease} handed to a reader holds another. Eviction drops only the tier's
 * reference, so memory a reader still holds is never freed or reused underneath it.
 *
 * <h2>Filling</h2>
 * A freshly {@linkplain Tier#allocate(PageKey) allocated} page is unsealed: its filler writes the bytes through
 * {@link #writableSegment()} and then {@linkplain #seal() seals} it, before publishing it to any other thread. After
 * sealing, the page is immutable and only read-only views of it exist.
 *
 * <h2>Thread safety</h2>
 * Reference counting is lock-free and safe from any thread. Filling is single-threaded by contract (one filler).
 * Reads of a sealed page need no synchronisation beyond the safe publication that handed the page over (a concurrent
 * map, a future). A page object must only reach other threads that way: its initial count and state are written
 * without a fence of their own (a tier makes a page object per hit; docs/decisions/0021-hit-path-as-users-read-it.md).
 */
public abstract class Page {

    private static final VarHandle REF_CNT;
    private static final VarHandle BUFFER;
    private static final VarHandle READ_ONLY;
    private static final VarHandle SEALED;

    static {
        try {
            REF_CNT = MethodHandles.lookup().findVarHandle(Page.class, "refCnt", int.class);
            BUFFER = MethodHandles.lookup().findVarHandle(Page.class, "buffer", ByteBuffer.class);
            READ_ONLY = MethodHandles.lookup().findVarHandle(Page.class, "readOnly", MemorySegment.class);
            SEALED = MethodHandles.lookup().findVarHandle(Page.class, "sealed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final PageKey key;
    /** Copies of {@code key.offset()} and {@code key.length()}: the hit path reads them without touching the key. */
    private final long offset;

    private final int length;
    /** The page's memory; null for a page over part of a read-only region ({@link #Page(PageKey, ByteBuffer, int)}). */
    private final MemorySegment memory;
    /** A read-only buffer whose bytes from {@link #regionOffset} are the page's, or null: views are its slices. */
    private final ByteBuffer region;

    private final int regionOffset;
    /*
     * Made on first use (tiers make a page object per lease; many are read through one view only). This field, the
     * count and the seal are written plainly by the constructors only (a volatile store there would be a full fence on
     * every page object made, that is on every hit), and otherwise accessed through their VarHandles.
     */
    @SuppressWarnings("unused") // read through READ_ONLY
    private MemorySegment readOnly;

    private volatile ByteBuffer buffer;

    @SuppressWarnings("unused") // accessed through REF_CNT
    private int refCnt = 1;

    @SuppressWarnings("unused") // read through SEALED
    private boolean sealed;

    /**
     * Creates an unsealed page over the given memory, with a reference count of one.
     *
     * @param key    the page's identity
     * @param memory exactly {@code key.length()} bytes that this page owns until {@link #deallocate()}; read-only
     *     memory
     *               is served as the page's read-only view itself (for a page sealed at once)
     * @throws IllegalArgumentException if the memory's size is not the key's length
     */
    protected Page(PageKey key, MemorySegment memory) {
        if (memory.byteSize() != key.length()) {
            throw new IllegalArgumentException(
                    "page memory: " + memory.byteSize() + " bytes (expected: " + key.length() + ", the key's length)");
        }
        this.key = key;
        this.offset = key.offset();
        this.length = key.length();
        this.memory = memory;
        this.region = null;
        this.regionOffset = 0;
        if (memory.isReadOnly()) {
            this.readOnly = memory; // a tier that leases sealed pages over read-only memory: no second view
        }
    }

    /**
     * Creates a sealed page over {@code key.length()} bytes of a read-only buffer, with a reference count of one: the
     * cheapest page object for a tier that makes one per hit. Its {@link #slice(int, int)} and {@link #buffer()} are
     * each one slice of {@code region}; its {@link #segment()} is made only if asked for.
     *
     * @param key          the page's identity
     * @param region       a read-only direct buffer (for example a tier's view of a whole slab) whose bytes from
     *                     {@code regionOffset} are this page's, until {@link #deallocate()}
     * @param regionOffset where the page's bytes start in {@code region}
     * @throws IllegalArgumentException if {@code region} is writable or not direct, or too small for the page there
     */
    protected Page(PageKey key, ByteBuffer region, int regionOffset) {
        if (!region.isReadOnly()
                || !region.isDirect()
                || regionOffset < 0
                || regionOffset > region.capacity() - key.length()) {
            throw new IllegalArgumentException("page region: " + region + " at " + regionOffset + " (expected: a"
                    + " read-only direct buffer holding the key's " + key.length() + " bytes there)");
        }
        this.key = key;
        this.offset = key.offset();
        this.length = key.length();
        this.memory = null;
        this.region = region;
        this.regionOffset = regionOffset;
        this.sealed = true;
    }

    /** {@return the identity of the bytes this page holds} */
    public final PageKey key() {
        return key;
    }

    /** {@return the number of bytes, equal to {@code key().length()}} */
    public final int length() {
        return length;
    }

    /** {@return the position of the page's first byte in its object, equal to {@code key().offset()}} */
    public final long offset() {
        return offset;
    }

    /** {@return a read-only view of the page's bytes; valid while the caller holds a reference} */
    public final MemorySegment segment() {
        MemorySegment view = (MemorySegment) READ_ONLY.getAcquire(this);
        if (view == null) {
            // racing callers may each make one: equal views, one kept
            view = memory != null
                    ? memory.asReadOnly()
                    : MemorySegment.ofBuffer(region).asSlice(regionOffset, length); // read-only, as the region
            READ_ONLY.setRelease(this, view);
        }
        return view;
    }

    /**
     * Returns a read-only buffer over the page's bytes, shared by every caller: {@link ByteBuffer#slice(int, int)} or
     * {@link ByteBuffer#duplicate()} it before changing position or limit. Valid while the caller holds a reference.
     *
     * @return the shared read-only buffer
     */
    public final ByteBuffer buffer() {
        ByteBuffer view = buffer;
        if (view == null) {
            view = region != null
                    ? region.slice(regionOffset, length)
                    : segment().asByteBuffer();
            ByteBuffer witness = (ByteBuffer) BUFFER.compareAndExchange(this, null, view); // one shared buffer
            if (witness != null) {
                view = witness;
            }
        }
        return view;
    }

    /**
     * Returns a new read-only buffer over part of the page's bytes, positioned at 0 with limit {@code length}: the
     * caller's own (unlike {@link #buffer()}, not shared), valid while the caller holds a reference. For a page over a
     * region this is one slice of it, with no shared buffer or segment made; otherwise a slice of {@link #buffer()}.
     *
     * @param offset the first byte, within the page
     * @param length the number of bytes
     * @return the new buffer
     * @throws IndexOutOfBoundsException if the range is not within the page
     */
    public final ByteBuffer slice(int offset, int length) {
        Objects.checkFromIndexSize(offset, length, this.length);
        ByteBuffer r = region;
        return r != null ? r.slice(regionOffset + offset, length) : buffer().slice(offset, length);
    }

    /**
     * Returns the writable memory, for the page's single filler, until the page is sealed.
     *
     * @return the page's memory, writable
     * @throws IllegalStateException if the page is already sealed
     */
    public final MemorySegment writableSegment() {
        if ((boolean) SEALED.getAcquire(this) || memory == null) {
            throw new IllegalStateException("page " + key + " is sealed (expected: an unsealed page being filled)");
        }
        return memory;
    }

    /**
     * Marks the page as filled: from now on it is immutable. Idempotent. A release store: every write of the filler
     * before it is visible to a thread that sees the page sealed (no full fence, as the page is handed over safely).
     */
    public final void seal() {
        SEALED.setRelease(this, true);
    }

    /** {@return whether the page has been sealed} */
    public final boolean isSealed() {
        return (boolean) SEALED.getAcquire(this);
    }

    /**
     * Adds one reference, unless the page was already freed.
     *
     * @return {@code true} if the caller now holds a reference; {@code false} if the count had reached zero, in which
     *     case the page must not be used
     */
    public final boolean tryRetain() {
        int count = (int) REF_CNT.getVolatile(this);
        while (count > 0) {
            int witness = (int) REF_CNT.compareAndExchange(this, count, count + 1);
            if (witness == count) {
                return true;
            }
            count = witness;
        }
        return false;
    }

    /**
     * Adds {@code n} references on behalf of callers who will each release one. The caller must hold a reference.
     *
     * @param n the number of references to add, {@code >= 0}
     * @throws IllegalArgumentException if {@code n} is negative
     * @throws IllegalStateException    if the page was already freed
     */
    public final void retain(int n) {
        if (n < 0) {
            throw new IllegalArgumentException("references to add: " + n + " (expected: >= 0)");
        }
        if (n == 0) {
            return;
        }
        // A compare-and-set loop, not getAndAdd: adding to a freed page and undoing it would let a concurrent
        // tryRetain see a positive count in between and bring the page back from the dead.
        int count = (int) REF_CNT.getVolatile(this);
        while (true) {
            if (count <= 0) {
                throw new IllegalStateException(
                        "page " + key + " retained after it was freed (reference count " + count + ")");
            }
            int witness = (int) REF_CNT.compareAndExchange(this, count, count + n);
            if (witness == count) {
                return;
            }
            count = witness;
        }
    }

    /**
     * Drops one reference; the last one frees the memory.
     *
     * @return {@code true} if this call freed the page
     * @throws IllegalStateException if the page was already freed (a double release: a bug in the caller)
     */
    public final boolean release() {
        int after = (int) REF_CNT.getAndAdd(this, -1) - 1;
        if (after > 0) {
            return false;
        }
        if (after < 0) {
            REF_CNT.getAndAdd(this, 1);
            throw new IllegalStateException("page " + key + " released more often than retained");
        }
        deallocate();
        return true;
    }

    /** {@return the current reference count; for diagnostics and tests} */
    public final int refCnt() {
        return (int) REF_CNT.getVolatile(this);
    }

    /** Returns this page's memory to its owner. Called exactly once, by the release that drops the count to zero. */
    protected abstract void deallocate();

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + key + ", refCnt=" + refCnt() + "]";
    }
}
