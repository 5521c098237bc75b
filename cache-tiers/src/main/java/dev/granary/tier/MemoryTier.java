// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.TierStats;
import dev.granary.internal.PageLocker;
import dev.granary.internal.TierCounters;
import dev.granary.spi.EvictionPolicy;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.spi.Workload;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
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
 * Which pages stay is the {@link EvictionPolicy}'s call; the default is Caffeine's W-TinyLFU weighted by bytes
 * ({@link WindowTinyLfuPolicy}). A hit is one {@link ConcurrentHashMap} lookup, a reference-count increment and the
 * policy's access record.
 *
 * <h2>Thread safety</h2>
 * All methods are safe from any thread. Hits take no lock; allocation takes the allocator's lock.
 *
 * <h2>Lifecycle</h2>
 * Built by a builder, added to one {@code TieredCache}, closed by it. After close, pages handed out stay valid until
 * released; the slabs are returned to the OS when the last one is.
 */
public final class MemoryTier implements Tier {

    private static final System.Logger LOG = System.getLogger(MemoryTier.class.getName());

    private final String name;
    private final long capacity;
    private final boolean pinnedRequested;
    private final SlabAllocator allocator;
    private final TierCounters counters = new TierCounters();
    private final EvictionPolicy policy;
    private final ConcurrentHashMap<PageKey, Slot> index = new ConcurrentHashMap<>();
    private final AtomicLong lockedBytes = new AtomicLong();
    private final AtomicBoolean oversizeLogged = new AtomicBoolean();
    private volatile String pinningFailure;
    private volatile java.util.function.Consumer<Page> evictionListener;
    private volatile Workload workload = Workload.UNDRIVEN;
    /** {@link Workload#clock()} of the current workload: the stamp for pages inserted or read now. */
    private volatile long clock;
    /** While driven: the slots found dead at the latest workload change, replaced first-come. */
    private volatile java.util.Queue<Slot> dead = new java.util.ArrayDeque<>(0);
    private volatile boolean closed;

    private MemoryTier(Builder b) {
        this.name = b.name;
        this.capacity = b.capacity;
        this.pinnedRequested = b.pinned;
        this.allocator = new SlabAllocator(b.capacity, b.slabSize, this::slabReserved);
        this.policy = b.policy.create(b.capacity, this::evict);
        if (policy == null) {
            throw new IllegalArgumentException("eviction policy factory returned null (expected: a policy)");
        }
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
        Slot slot = index.get(key);
        if (slot == null || !slot.tryRetain()) {
            counters.miss();
            return null;
        }
        counters.hit(slot.length());
        slot.stamp(clock);
        policy.recordAccess(key);
        return slot;
    }

    @Override
    public Object hint(Page page) {
        return page instanceof Slot slot && slot.tier == this ? slot.hint : null;
    }

    @Override
    public Page touch(Object hint) {
        if (!(hint instanceof Hint h)) {
            return null;
        }
        Slot slot = h.slot;
        if (slot == null || slot.tier != this || !slot.tryRetain()) {
            return null;
        }
        counters.hit(slot.length());
        slot.stamp(clock);
        policy.recordAccess(slot.key());
        return slot;
    }

    @Override
    public Page peek(PageKey key) {
        Slot slot = index.get(key);
        return slot != null && slot.tryRetain() ? slot : null;
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
                LOG.log(System.Logger.Level.WARNING, "memory tier '" + name + "': a page of " + length
                        + " bytes is larger than a slab (" + allocator.maxAllocation() + " bytes) and is not cached"
                        + " here; set MemoryTier.builder().slabSize(...) to at least the cache's page size");
            }
            return null;
        }
        long weight = SlabAllocator.footprint(length);
        if (!policy.admit(key, weight)) {
            counters.rejected();
            return null;
        }
        long block = allocator.allocate(length);
        if (workload.driven()) {
            // A loader drives: make room only from dead pages, never from the stable resident set.
            while (block < 0 && !closed && evictDead(weight) > 0) {
                block = allocator.allocate(length);
            }
            if (block < 0) {
                counters.rejected();
                return null;
            }
            return new Slot(this, key, allocator.segment(block, length), block);
        }
        // No run fits: make room. Evicting frees memory only for pages no reader holds, and a freed run may not be
        // contiguous with its neighbours, hence a few rounds.
        for (int round = 0; block < 0 && round < 8 && !closed; round++) {
            long evicted = policy.evict(weight);
            block = allocator.allocate(length);
            if (block < 0 && evicted == 0) {
                break;
            }
        }
        if (block < 0) {
            counters.rejected();
            return null;
        }
        return new Slot(this, key, allocator.segment(block, length), block);
    }

    @Override
    public boolean put(Page page) {
        if (!page.isSealed()) {
            throw new IllegalArgumentException("page " + page.key() + " is not sealed (expected: a filled, sealed"
                    + " page)");
        }
        if (closed) {
            return false;
        }
        if (page instanceof Slot slot && slot.tier == this) {
            if (!slot.published.compareAndSet(false, true)) {
                return index.get(slot.key()) == slot;
            }
            return publish(slot);
        }
        PageKey key = page.key();
        if (index.containsKey(key)) {
            return true;
        }
        Page copy = allocate(key);
        if (copy == null) {
            return false;
        }
        Slot slot = (Slot) copy;
        try {
            MemorySegment.copy(page.segment(), 0, slot.writableSegment(), 0, page.length());
        } catch (InternalError e) {
            // The source is a mapped file that was truncated or whose device failed under it (the JVM reports the
            // SIGBUS as an InternalError): tell a disk tier to drop it, and fail as I/O, never as an Error.
            slot.release();
            if (page instanceof DiskTier.DiskPage disk) {
                disk.tier.faulted(disk, e);
            }
            throw new java.io.UncheckedIOException(new IOException("cannot copy " + page + " into memory: the cache"
                    + " file under it was damaged (truncated or failing); the page is dropped", e));
        }
        slot.seal();
        slot.published.set(true);
        boolean stored = publish(slot);
        slot.release(); // the allocation's reference; the index holds its own
        return stored;
    }

    /** Makes a filled slot visible, with a reference of the index's own. */
    private boolean publish(Slot slot) {
        PageKey key = slot.key();
        slot.retain(1);
        Slot previous = index.putIfAbsent(key, slot);
        if (previous != null) {
            slot.release();
            return true;
        }
        slot.hint.slot = slot;
        slot.stamp = clock;
        if (closed) {
            if (index.remove(key, slot)) {
                slot.hint.slot = null;
                slot.release();
            }
            return false;
        }
        policy.recordInsert(key, SlabAllocator.footprint(slot.length()));
        return true;
    }

    @Override
    public void workload(Workload workload) {
        this.clock = workload.clock();
        this.workload = workload;
        java.util.Queue<Slot> found = new java.util.concurrent.ConcurrentLinkedQueue<>();
        if (workload.driven()) {
            for (Slot slot : index.values()) {
                if (workload.isDead(slot.stamp)) {
                    found.add(slot);
                }
            }
        }
        this.dead = found;
    }

    /**
     * While driven: drops dead pages (not read by the loader in its previous epoch nor this one) until {@code bytes}
     * of footprint are freed. Dropped, not demoted: a dead page is not worth a place in the tier below either.
     *
     * @return the footprint dropped, 0 if no dead page is left
     */
    private long evictDead(long bytes) {
        Workload w = workload;
        java.util.Queue<Slot> queue = dead;
        long freed = 0;
        Slot slot;
        while (freed < bytes && (slot = queue.poll()) != null) {
            if (w.isDead(slot.stamp) && index.remove(slot.key(), slot)) {
                slot.hint.slot = null;
                policy.recordRemoval(slot.key());
                counters.evicted();
                dev.granary.internal.FlightEvents.evicted(name, slot.key());
                freed += SlabAllocator.footprint(slot.length());
                slot.release();
            }
        }
        return freed;
    }

    /** The policy's eviction callback. Never calls back into the policy. */
    private boolean evict(PageKey key) {
        Slot slot = index.remove(key);
        if (slot == null) {
            return false;
        }
        slot.hint.slot = null;
        counters.evicted();
        dev.granary.internal.FlightEvents.evicted(name, key);
        java.util.function.Consumer<Page> listener = evictionListener;
        if (listener != null && !closed) {
            try {
                listener.accept(slot);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "memory tier '" + name + "': eviction listener failed on "
                        + key, e);
            }
        }
        slot.release();
        return true;
    }

    @Override
    public boolean remove(PageKey key) {
        Slot slot = index.remove(key);
        if (slot == null) {
            return false;
        }
        slot.hint.slot = null;
        policy.recordRemoval(key);
        slot.release();
        return true;
    }

    @Override
    public void evictionListener(java.util.function.Consumer<Page> listener) {
        this.evictionListener = listener;
    }

    @Override
    public void forEachPage(Consumer<Page> action) {
        for (Slot slot : index.values()) {
            if (slot.tryRetain()) {
                try {
                    action.accept(slot);
                } finally {
                    slot.release();
                }
            }
        }
    }

    @Override
    public void invalidate(String origin, String key) {
        for (PageKey pageKey : index.keySet()) {
            if (pageKey.isOf(origin, key)) {
                Slot slot = index.remove(pageKey);
                if (slot != null) {
                    slot.hint.slot = null;
                    policy.recordRemoval(pageKey);
                    slot.release();
                }
            }
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>The memory tier's copy runs its own allocator's bookkeeping without memory, so slab cuts and the 512-byte
     * block rounding count exactly; the policy's {@code admit} is asked, nothing is recorded in it.
     */
    @Override
    public dev.granary.spi.TierSimulation simulation() {
        List<Slot> slots = new ArrayList<>(index.size());
        SlabAllocator phantom = allocator.phantomCopy(() -> slots.addAll(index.values()));
        MemoryTierSimulation sim = new MemoryTierSimulation(phantom, policy, workload);
        for (Slot slot : slots) {
            sim.add(slot.key(), slot.block, slot.stamp);
        }
        return sim;
    }

    @Override
    public TierStats stats() {
        return counters.snapshot(name, allocator.used(), capacity);
    }

    /**
     * {@return how much of the tier's memory is page-locked, and why not all of it if it is not}
     */
    public Pinning pinning() {
        return new Pinning(pinnedRequested, lockedBytes.get(), allocator.reserved(),
                Optional.ofNullable(pinningFailure));
    }

    /** {@return the number of pages in the index; for tests} */
    int pageCount() {
        return index.size();
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
        for (PageKey key : index.keySet()) {
            Slot slot = index.remove(key);
            if (slot != null) {
                slot.hint.slot = null;
                slot.release();
            }
        }
        allocator.close();
    }

    @Override
    public String toString() {
        return "MemoryTier[" + name + ", used=" + allocator.used() + "/" + capacity + ", pages=" + index.size() + "]";
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
                LOG.log(System.Logger.Level.WARNING, "memory tier '" + name + "': pinned(true) but " + outcome.message()
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

    /**
     * What the cache keeps per object to reach its first page without a lookup ({@link #hint(Page)}): a pointer the
     * tier clears when the page leaves the index, so a stale hint costs 16 bytes, not a page.
     */
    private static final class Hint {
        volatile Slot slot;
    }

    /** A page in a slab. Deallocation returns its blocks to the allocator. */
    private static final class Slot extends Page {

        final MemoryTier tier;
        final long block;
        final AtomicBoolean published = new AtomicBoolean();
        /** Points back at this slot while the index holds it; cleared on removal so a stale hint pins nothing. */
        final Hint hint = new Hint();
        /** The workload clock when the page was last inserted or read (racy: a lost update only delays a stamp). */
        long stamp;

        Slot(MemoryTier tier, PageKey key, MemorySegment memory, long block) {
            super(key, memory);
            this.tier = tier;
            this.block = block;
        }

        void stamp(long clock) {
            if (stamp != clock) {
                stamp = clock;
            }
        }

        @Override
        protected void deallocate() {
            tier.allocator.free(block, length());
        }
    }

    /** Configures a {@link MemoryTier}. Setters validate at once. Not thread-safe. */
    public static final class Builder {

        private static final long MAX_CAPACITY = 1L << 40;
        private String name = "memory";
        private long capacity = -1;
        private boolean pinned;
        private long slabSize = 64L << 20;
        private EvictionPolicy.Factory policy = WindowTinyLfuPolicy::new;
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
                throw new IllegalArgumentException("memory tier capacity: " + bytes + " bytes (expected: 65536.."
                        + MAX_CAPACITY + ")");
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
                throw new IllegalArgumentException("slab size: " + bytes + " bytes (expected: 65536..1073741824)");
            }
            this.slabSize = bytes;
            return this;
        }

        /**
         * Sets the eviction policy. Default {@code WindowTinyLfuPolicy::new}.
         *
         * @param factory creates the tier's policy
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder policy(EvictionPolicy.Factory factory) {
            if (factory == null) {
                throw new IllegalArgumentException("eviction policy: null (expected: a factory such as"
                        + " WindowTinyLfuPolicy::new)");
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
                throw new IllegalArgumentException("tier name: " + (name == null ? "null" : "'" + name + "'")
                        + " (expected: a non-blank name)");
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
                throw new IllegalStateException("memory tier capacity not set (expected: capacity(bytes) before"
                        + " build())");
            }
            return new MemoryTier(this);
        }
    }
}
