// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.TierStats;
import dev.granary.internal.ByteSizes;
import dev.granary.internal.FlightEvents;
import dev.granary.internal.PageLocker;
import dev.granary.internal.TierCounters;
import dev.granary.spi.EvictionPolicy;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.spi.TierSimulation;
import dev.granary.spi.Workload;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The off-heap memory tier (L1/L2): pages in FFM slabs outside the Java heap, served to readers as zero-copy views.
 *
 * {@snippet :
 * Tier memory = MemoryTier.builder()
 *         .capacity(8L << 30)      // 8 GiB, a hard bound
 *         .pinned(true)            // mlock the slabs; reported, not fatal, if the OS refuses
 *         .build();
 * }
 *
 * <h2>Capacity</h2>
 * The capacity bounds the off-heap memory the tier ever reserves, not only what its index holds: slabs are reserved
 * lazily up to the capacity and never beyond, so evicted pages that readers still hold count too. When a fill finds
 * no room, the tier asks its policy to evict, and if readers hold so much that nothing can be freed, it refuses the
 * page (the read is still served, from memory of its own).
 *
 * <p>With {@link Builder#preTouch(boolean) preTouch(true)} the whole capacity is reserved and written once at
 * {@code build()}, so the kernel's first-touch cost is paid at start instead of during the first epoch.
 *
 * <h2>Policy</h2>
 * Which pages stay is the {@link EvictionPolicy}'s call; the default is W-TinyLFU weighted by bytes
 * ({@link WindowTinyLfuPolicy#sampling}), which runs inside the tier over its slot ids (window, probation and
 * protected lists in {@code int} columns, a 4-bit count-min sketch). A custom policy is told about pages by
 * {@link PageKey}, made for it per call where the tier has none at hand.
 *
 * <h2>Memory per page</h2>
 * The index keeps no object per cached page (decision 0011): rows of primitives per slot, a lease word per slot
 * changed by compare-and-set, an open-addressing table, and each object's names once ({@code MemorySlots}); about
 * 60 bytes of heap a page with the default policy. A page object is made per lease, as the disk tier does. A hit is
 * one table probe under an optimistic read, one compare-and-set on the slot's lease word, that page object, and one
 * access record in eight.
 *
 * <h2>Thread safety</h2>
 * All methods are safe from any thread. Hits take no lock; allocation takes the allocator's lock.
 *
 * <h2>Lifecycle</h2>
 * Built by a builder, added to one {@code TieredCache}, closed by it. After close, pages handed out stay valid until
 * released; the slabs are returned to the OS when the last one is.
 */
public final class MemoryTier implements Tier, Tier.Hints, Tier.Eviction, Tier.Durability {

    private static final System.Logger LOG = System.getLogger(MemoryTier.class.getName());

    /** What a dry run asks when the default policy runs inside the tier: it admits every page, as W-TinyLFU does. */
    private static final EvictionPolicy ADMIT_ALL = new EvictionPolicy() {
        @Override
        public void recordAccess(PageKey key) {}

        @Override
        public void recordInsert(PageKey key, long weight) {}

        @Override
        public void recordRemoval(PageKey key) {}

        @Override
        public long evict(long bytes) {
            return 0;
        }
    };

    /** The sequence of a page object handed to the eviction listener: no hint, no put back. */
    private static final int EVICTED = -1;

    private final String name;
    private final long capacity;
    private final boolean pinnedRequested;
    private final SlabAllocator allocator;
    private final TierCounters counters = new TierCounters();
    /** A custom policy, told about pages by key; {@code null} when the default runs inside {@link #slots}. */
    private final EvictionPolicy policy;
    /** The default policy records one hit in {@code sampleMask + 1}. */
    private final int sampleMask;

    private final MemorySlots slots;
    private final AtomicLong lockedBytes = new AtomicLong();
    private final AtomicBoolean oversizeLogged = new AtomicBoolean();
    private volatile String pinningFailure;
    private volatile Consumer<Page> evictionListener;
    private volatile Workload workload = Workload.UNDRIVEN;
    /** {@link Workload#clock()} of the current workload, clamped: the stamp for pages inserted or read now. */
    private volatile int clock;
    /** While driven: the pages found dead at the latest workload change, replaced first-come. */
    private volatile Dead dead = new Dead(new long[0]);

    private volatile boolean closed;

    private MemoryTier(Builder b) {
        this.name = b.name;
        this.capacity = b.capacity;
        this.pinnedRequested = b.pinned;
        this.allocator = new SlabAllocator(b.capacity, b.slabSize, this::slabReserved);
        if (b.policy instanceof WindowTinyLfuPolicy.SlotIndexed slotIndexed) {
            this.policy = null;
            this.sampleMask = slotIndexed.oneIn() - 1;
        } else {
            EvictionPolicy custom = b.policy.create(b.capacity, this::evict);
            if (custom == null) {
                throw new IllegalArgumentException("eviction policy factory returned null (expected: a policy)");
            }
            this.policy = custom;
            this.sampleMask = 0;
        }
        this.slots = new MemorySlots(allocator, b.capacity, policy == null);
        if (b.preTouch) {
            allocator.reserveAndTouchAll();
        }
    }

    /** {@return a builder; {@link Builder#capacity(long)} is required} */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Page get(PageKey key) {
        long lease = slots.lease(key);
        if (lease == MemorySlots.NONE) {
            counters.miss();
            return null;
        }
        return hit((int) lease, (int) (lease >>> 32), key);
    }

    /** A page object for a lease just taken, with the hit counted and recorded. */
    private Page hit(int slot, int sequence, PageKey key) {
        SlotPage page = page(slot, sequence, key);
        counters.hit(page.length());
        slots.stamp(slot, clock);
        if (policy == null) {
            if ((ThreadLocalRandom.current().nextInt() & sampleMask) == 0) {
                slots.recordRead(slot);
            }
        } else {
            policy.recordAccess(key);
        }
        return page;
    }

    /**
     * A sealed page object over a slot's memory: a read-only view of the slab that holds it, sliced per lease
     * (decision 0021: one buffer object per hit, no segment unless asked for).
     */
    private SlotPage page(int slot, int sequence, PageKey key) {
        long block = slots.blockAndLength(slot) >>> 32;
        return new SlotPage(this, slot, sequence, key, allocator.readOnlyBuffer(block), allocator.offsetInSlab(block));
    }

    /** {@return this tier: it hands out hints to its pages} */
    @Override
    public Optional<Tier.Hints> hints() {
        return Optional.of(this);
    }

    @Override
    public Object hint(Page page) {
        return page instanceof SlotPage p && p.tier == this && (p.sequence & 1) != 0 && p.sequence != EVICTED
                ? new Hint(this, p.slot, p.sequence, p.key())
                : null;
    }

    @Override
    public Page touch(Object hint) {
        if (!(hint instanceof Hint h) || h.tier != this || !slots.retainHint(h.slot, h.sequence)) {
            return null;
        }
        return hit(h.slot, h.sequence, h.key);
    }

    @Override
    public Page peek(PageKey key) {
        long lease = slots.lease(key);
        if (lease == MemorySlots.NONE) {
            return null;
        }
        return page((int) lease, (int) (lease >>> 32), key);
    }

    @Override
    public Page allocate(PageKey key) {
        if (closed) {
            return null;
        }
        int length = key.length();
        if (length > allocator.maxAllocation()) {
            counters.rejected();
            if (oversizeLogged.compareAndSet(false, true)) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "memory tier '" + name + "': a page of " + length
                                + " bytes is larger than a slab (" + allocator.maxAllocation()
                                + " bytes) and is not cached"
                                + " here; set MemoryTier.builder().slabSize(...) to at least the cache's page size");
            }
            return null;
        }
        long weight = SlabAllocator.footprint(length);
        if (policy != null && !policy.admit(key, weight)) {
            counters.rejected();
            return null;
        }
        long block = allocator.allocate(length);
        if (workload.driven()) {
            // A loader drives: make room only from dead pages, never from the stable resident set.
            while (block < 0 && !closed && evictDead(weight) > 0) {
                block = allocator.allocate(length);
            }
        } else {
            // No run fits: make room. Evicting frees memory only for pages no reader holds, and a freed run may not
            // be contiguous with its neighbours, hence a few rounds.
            for (int round = 0; block < 0 && round < 8 && !closed; round++) {
                long evicted = evictForRoom(weight);
                block = allocator.allocate(length);
                if (block < 0 && evicted == 0) {
                    break;
                }
            }
        }
        if (block < 0) {
            counters.rejected();
            return null;
        }
        long taken = slots.allocate(key, block);
        if (taken == MemorySlots.NONE) {
            allocator.free(block, length);
            return null;
        }
        return new SlotPage(this, (int) taken, (int) (taken >>> 32), key, allocator.segment(block, length));
    }

    /** Asks the policy for {@code bytes} of room; {@return the footprint it evicted} */
    private long evictForRoom(long bytes) {
        if (policy != null) {
            return policy.evict(bytes);
        }
        MemorySlots.Removed out = new MemorySlots.Removed();
        long evicted = slots.evict(bytes, out);
        letGo(out, true);
        return evicted;
    }

    @Override
    public boolean put(Page page) {
        if (!page.isSealed()) {
            throw new IllegalArgumentException(
                    "page " + page.key() + " is not sealed (expected: a filled, sealed" + " page)");
        }
        if (closed) {
            return false;
        }
        if (page instanceof SlotPage p && p.tier == this) {
            if (p.sequence == EVICTED) {
                return false; // handed to the eviction listener: it left the index
            }
            if ((p.sequence & 1) != 0) {
                return slots.inIndex(p.slot, p.sequence); // a page leased from the index
            }
            return publish(p);
        }
        PageKey key = page.key();
        if (slots.contains(key)) {
            return true;
        }
        Page copy = allocate(key);
        if (copy == null) {
            return false;
        }
        SlotPage slot = (SlotPage) copy;
        try {
            MemorySegment.copy(page.segment(), 0, slot.writableSegment(), 0, page.length());
        } catch (InternalError e) {
            // The source is a mapped file that was truncated or whose device failed under it (the JVM reports the
            // SIGBUS as an InternalError): tell a disk tier to drop it, and fail as I/O, never as an Error.
            slot.release();
            if (page instanceof DiskPage disk) {
                disk.tier.faulted(disk, e);
            }
            throw new UncheckedIOException(new IOException(
                    "cannot copy " + page + " into memory: the cache"
                            + " file under it was damaged (truncated or failing); the page is dropped",
                    e));
        }
        slot.seal();
        boolean stored = publish(slot);
        slot.release(); // the allocation's reference; the index holds its own
        return stored;
    }

    /** Makes a filled page visible, with a reference of the index's own. */
    private boolean publish(SlotPage page) {
        MemorySlots.Removed out = new MemorySlots.Removed();
        MemorySlots.Published published = slots.publish(page.slot, page.sequence, clock, out);
        letGo(out, true);
        if (published == MemorySlots.Published.STORED && policy != null) {
            policy.recordInsert(page.key(), SlabAllocator.footprint(page.length()));
        }
        return published != MemorySlots.Published.REFUSED;
    }

    /**
     * Lets go of pages that left the index, each still holding the index's reference: counts and reports evictions
     * (and hands them to the eviction listener) if {@code evicted}, then drops the reference.
     */
    private void letGo(MemorySlots.Removed out, boolean evicted) {
        Consumer<Page> listener = evicted && !closed ? evictionListener : null;
        for (int i = 0; i < out.count; i++) {
            int slot = out.slots[i];
            PageKey key = out.keys[i];
            if (evicted) {
                counters.evicted();
                FlightEvents.evicted(name, key);
            }
            if (listener != null) {
                SlotPage page = page(slot, EVICTED, key); // takes over the index's reference
                try {
                    listener.accept(page);
                } catch (RuntimeException e) {
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "memory tier '" + name + "': eviction listener failed on " + key,
                            e);
                } finally {
                    page.release();
                }
            } else {
                slots.unlease(slot);
            }
        }
    }

    /** {@return this tier: its policy evicts single pages, and follows a loader's workload} */
    @Override
    public Optional<Tier.Eviction> eviction() {
        return Optional.of(this);
    }

    @Override
    public void workload(Workload workload) {
        this.clock = clampStamp(workload.clock());
        this.workload = workload;
        this.dead = new Dead(workload.driven() ? slots.dead(workload) : new long[0]);
    }

    static int clampStamp(long clock) {
        return (int) Math.min(clock, Integer.MAX_VALUE);
    }

    /**
     * While driven: drops dead pages (not read by the loader in its previous epoch nor this one) until {@code bytes}
     * of footprint are freed. Dropped, not demoted: a dead page is not worth a place in the tier below either.
     *
     * @return the footprint dropped, 0 if no dead page is left
     */
    private long evictDead(long bytes) {
        Workload w = workload;
        Dead queue = dead;
        long freed = 0;
        int i;
        while (freed < bytes && (i = queue.next.getAndIncrement()) < queue.found.length) {
            MemorySlots.Removed out = new MemorySlots.Removed();
            if (slots.removeIfDead(queue.found[i], w, out)) {
                if (policy != null) {
                    policy.recordRemoval(out.keys[0]);
                }
                freed += out.weights[0];
                letGo(out, false);
                counters.evicted();
                FlightEvents.evicted(name, out.keys[0]);
            }
        }
        return freed;
    }

    /** The custom policy's eviction callback. Never calls back into the policy. */
    private boolean evict(PageKey key) {
        MemorySlots.Removed out = new MemorySlots.Removed();
        boolean removed = slots.remove(key, out);
        letGo(out, true);
        return removed;
    }

    @Override
    public boolean remove(PageKey key) {
        MemorySlots.Removed out = new MemorySlots.Removed();
        boolean removed = slots.remove(key, out);
        letGo(out, false);
        if (removed && policy != null) {
            policy.recordRemoval(key);
        }
        return removed;
    }

    @Override
    public void evictionListener(Consumer<Page> listener) {
        this.evictionListener = listener;
    }

    /** {@return this tier: not durable, it gives its pages to a durable tier below at close} */
    @Override
    public Optional<Tier.Durability> durability() {
        return Optional.of(this);
    }

    /** {@return {@code false}: the tier's memory goes with the process} */
    @Override
    public boolean durable() {
        return false;
    }

    @Override
    public void forEachPage(Consumer<Page> action) {
        for (MemorySlots.Entry e : slots.entries()) {
            if (slots.retainHint(e.slot(), e.sequence())) {
                SlotPage page = page(e.slot(), e.sequence(), e.key());
                try {
                    action.accept(page);
                } finally {
                    page.release();
                }
            }
        }
    }

    @Override
    public void invalidate(String origin, String key) {
        MemorySlots.Removed out = new MemorySlots.Removed();
        slots.removeObject(origin, key, out);
        letGo(out, false);
        if (policy != null) {
            for (int i = 0; i < out.count; i++) {
                policy.recordRemoval(out.keys[i]);
            }
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>The memory tier's copy runs its own allocator's bookkeeping without memory, so slab cuts and the 512-byte
     * block rounding count exactly; a custom policy's {@code admit} is asked, nothing is recorded in it (the default
     * policy admits every page).
     */
    @Override
    public Optional<TierSimulation> simulation() {
        List<MemorySlots.Entry> entries = new ArrayList<>();
        SlabAllocator phantom = allocator.phantomCopy(() -> entries.addAll(slots.entries()));
        MemoryTierSimulation sim = new MemoryTierSimulation(phantom, policy == null ? ADMIT_ALL : policy, workload);
        for (MemorySlots.Entry e : entries) {
            sim.add(e.key(), e.block(), e.stamp());
        }
        return Optional.of(sim);
    }

    @Override
    public TierStats stats() {
        return counters.snapshot(name, allocator.used(), capacity);
    }

    /**
     * {@return how much of the tier's memory is page-locked, and why not all of it if it is not}
     */
    public Pinning pinning() {
        return new Pinning(
                pinnedRequested, lockedBytes.get(), allocator.reserved(), Optional.ofNullable(pinningFailure));
    }

    /** {@return the number of pages in the index; for tests} */
    int pageCount() {
        return slots.size();
    }

    /** {@return the index, for tests} */
    MemorySlots slots() {
        return slots;
    }

    /**
     * {@return whether the tier is closed and every byte of its memory has been returned to the OS; for tests} Outside
     * this package, {@code stats().usedBytes() == 0} after close says the same.
     */
    boolean isReleased() {
        return allocator.isReleased();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        MemorySlots.Removed out = new MemorySlots.Removed();
        slots.close(out);
        letGo(out, false);
        allocator.close();
    }

    @Override
    public String toString() {
        return "MemoryTier[" + name + ", used=" + allocator.used() + "/" + capacity + ", pages=" + slots.size() + "]";
    }

    private void slabReserved(MemorySegment slab) {
        if (!pinnedRequested) {
            return;
        }
        PageLocker.Outcome outcome = PageLocker.lock(slab);
        if (outcome.locked()) {
            lockedBytes.addAndGet(slab.byteSize());
        } else {
            counters.failed();
            if (pinningFailure == null) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "memory tier '" + name + "': pinned(true) but " + outcome.message()
                                + "; the tier works unpinned (pages may be swapped out); see MemoryTier.pinning()");
            }
            pinningFailure = outcome.message();
        }
    }

    /**
     * How much of the tier's memory is page-locked.
     *
     * @param requested     whether {@link Builder#pinned(boolean)} asked for it
     * @param lockedBytes   bytes locked so far
     * @param reservedBytes bytes reserved so far (slabs are reserved as the tier fills)
     * @param failure       the OS's answer when a lock was refused, if one was
     */
    public record Pinning(boolean requested, long lockedBytes, long reservedBytes, Optional<String> failure) {

        /** {@return whether every reserved byte is locked, as requested} */
        public boolean complete() {
            return requested && lockedBytes == reservedBytes && failure.isEmpty();
        }
    }

    /** The pages found dead at a workload change, taken first-come by fills that need room. */
    private record Dead(long[] found, AtomicInteger next) {
        Dead(long[] found) {
            this(found, new AtomicInteger());
        }
    }

    /**
     * What the cache keeps per object to reach its first page without a lookup ({@link #hint(Page)}): the page's slot
     * and the sequence number of its stay in the index, so it pins neither memory nor a page object, and a stale hint
     * (the page left, the slot was reused) fails its compare-and-set.
     */
    private record Hint(MemoryTier tier, int slot, int sequence, PageKey key) {}

    /**
     * A page object for one lease of a slot (or for the filler of a slot not yet in the index): made per hit, garbage
     * once released; its last release drops its reference on the slot.
     */
    private static final class SlotPage extends Page {

        final MemoryTier tier;
        final int slot;
        /** The slot's sequence when leased: odd from the index, even while being filled, {@link #EVICTED}. */
        final int sequence;

        SlotPage(MemoryTier tier, int slot, int sequence, PageKey key, MemorySegment memory) {
            super(key, memory);
            this.tier = tier;
            this.slot = slot;
            this.sequence = sequence;
        }

        /** A sealed page over the slot's bytes in a read-only view of their slab. */
        SlotPage(MemoryTier tier, int slot, int sequence, PageKey key, ByteBuffer slab, int offsetInSlab) {
            super(key, slab, offsetInSlab);
            this.tier = tier;
            this.slot = slot;
            this.sequence = sequence;
        }

        @Override
        protected void deallocate() {
            tier.slots.unlease(slot);
        }
    }

    /** Configures a {@link MemoryTier}. Setters validate at once. Not thread-safe. */
    public static final class Builder {

        private static final long MAX_CAPACITY = 1L << 40;
        private String name = "memory";
        private long capacity = -1;
        private boolean pinned;
        private long slabSize = 64L << 20;
        private EvictionPolicy.Factory policy = WindowTinyLfuPolicy.sampling(WindowTinyLfuPolicy.DEFAULT_SAMPLING);
        private boolean preTouch;

        private Builder() {}

        /**
         * Sets the bound on the off-heap memory the tier reserves. Required.
         *
         * @param bytes at least 64 KiB, at most 1 TiB
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder capacity(long bytes) {
            if (bytes < (64 << 10) || bytes > MAX_CAPACITY) {
                throw new IllegalArgumentException("memory tier capacity: " + bytes + " bytes (expected: "
                        + ByteSizes.range(64 << 10, MAX_CAPACITY) + ")");
            }
            this.capacity = bytes;
            return this;
        }

        /**
         * Page-locks the tier's memory with {@code mlock}, so it is never swapped out and can be copied to a device
         * without staging. If the OS refuses, the tier works unpinned and reports why ({@link #pinning()}, a log
         * warning, {@link TierStats#failures()}). Default false.
         *
         * @param pinned whether to lock
         * @return this builder
         */
        public Builder pinned(boolean pinned) {
            this.pinned = pinned;
            return this;
        }

        /**
         * Reserves every slab of the capacity at {@link #build()} and touches it (writes one byte in every 4 KiB), as
         * {@code -XX:+AlwaysPreTouch} does for the Java heap. Default false: slabs are reserved as pages arrive and
         * the kernel backs each 4 KiB (or 2 MiB with transparent huge pages) at its first write, by the fill from
         * the origin; that first touch costs system CPU during the first epoch (measured 0.55-0.64 CPU-s per
         * 256 MiB on a 2-vCPU VM, docs/benchmarks.md), which pre-touching moves to start.
         *
         * <p>What it costs: {@code build()} takes that CPU time at once,
         * and the whole capacity is resident from the start ({@code pinning().reservedBytes()} equals the capacity,
         * rounded down to 512 bytes), whether or not the cache ever fills it: size the capacity to what the host
         * can give. With {@link #pinned(boolean) pinned(true)} every slab is also locked at {@code build()} ({@code
         * mlock} faults the memory in itself, so pinned tiers pay the same cost at start either way; pre-touching
         * then only reserves early); a refused lock is reported as usual.
         *
         * @param preTouch whether to reserve and touch the whole capacity at build time
         * @return this builder
         */
        public Builder preTouch(boolean preTouch) {
            this.preTouch = preTouch;
            return this;
        }

        /**
         * Sets the size of the slabs memory is reserved in; also the largest page the tier can hold. Default 64 MiB
         * (or the capacity, if smaller).
         *
         * @param bytes at least 64 KiB, at most 1 GiB
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder slabSize(long bytes) {
            if (bytes < (64 << 10) || bytes > (1L << 30)) {
                throw new IllegalArgumentException(
                        "slab size: " + bytes + " bytes (expected: " + ByteSizes.range(64 << 10, 1 << 30) + ")");
            }
            this.slabSize = bytes;
            return this;
        }

        /**
         * Sets the eviction policy. Default {@code WindowTinyLfuPolicy.sampling(8)}: W-TinyLFU run inside the tier
         * over slot ids, with no state per page beyond a few columns; so is any other
         * {@link WindowTinyLfuPolicy#sampling(int)} factory. Any other factory (including
         * {@code WindowTinyLfuPolicy::new}, the Caffeine-backed policy) creates a policy the tier tells about pages by
         * key: it keeps its own state per page.
         *
         * @param factory creates the tier's policy
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder policy(EvictionPolicy.Factory factory) {
            if (factory == null) {
                throw new IllegalArgumentException(
                        "eviction policy: null (expected: a factory such as" + " WindowTinyLfuPolicy::new)");
            }
            this.policy = factory;
            return this;
        }

        /**
         * Sets the name shown in stats and logs. Default {@code "memory"}.
         *
         * @param name a non-blank name
         * @return this builder
         * @throws IllegalArgumentException if null or blank
         */
        public Builder name(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException(
                        "tier name: " + (name == null ? "null" : "'" + name + "'") + " (expected: a non-blank name)");
            }
            this.name = name;
            return this;
        }

        /**
         * Builds the tier. No memory is reserved until pages arrive, unless {@link #preTouch(boolean) pre-touched}.
         *
         * @return a new tier
         * @throws IllegalStateException if no capacity was set
         */
        public MemoryTier build() {
            if (capacity < 0) {
                throw new IllegalStateException(
                        "memory tier capacity not set (expected: capacity(bytes) before" + " build())");
            }
            return new MemoryTier(this);
        }
    }
}
