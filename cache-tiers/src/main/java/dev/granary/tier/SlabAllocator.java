// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongFunction;

/**
 * Off-heap memory for one memory tier: slabs reserved from one shared {@link Arena}, carved into contiguous runs of
 * fixed-size blocks, best fit, coalescing on free.
 *
 * <h2>The bound</h2>
 * Slabs are reserved lazily and never beyond the capacity (the last slab is cut short to fit), so the off-heap memory
 * this allocator ever holds — reserved, not just allocated — is at most the capacity. Nothing is returned to the OS
 * before {@link #close()}: a cache that filled once stays filled.
 *
 * <h2>Layout</h2>
 * Memory is addressed by global block index: block {@code b} lives in slab {@code b / blocksPerSlab}. A run never
 * crosses a slab. Free runs are indexed twice: by start (to coalesce with neighbours on free) and by (length, start)
 * (for best fit). An allocation of {@code n} bytes takes {@code ceil(n / blockSize)} blocks; the rounding is counted
 * as used, so {@link #used()} is the honest footprint.
 *
 * <h2>Thread safety</h2>
 * One lock guards the free-run indexes and the slab list. Allocation happens on fills (origin speed), never on hits;
 * measured in {@code AllocatorBenchmark} (see docs/decisions/0001-memory-allocator.md).
 *
 * <h2>Lifecycle</h2>
 * {@link #close()} marks the allocator closed; the arena is closed when the last live allocation is freed, so
 * memory readers still hold stays valid after the tier is closed.
 */
final class SlabAllocator {

    static final int BLOCK_SIZE = 512;
    private static final int BLOCK_SHIFT = 9;

    private final long capacity;
    private final int blocksPerSlab;
    private final long slabBytes;
    private final Arena arena = Arena.ofShared();
    private final ReentrantLock lock = new ReentrantLock();
    /** The reserved slabs, replaced (never mutated) under the lock when one is added; read without it. */
    private volatile MemorySegment[] slabs = new MemorySegment[0];
    /**
     * Read-only buffers over {@link #slabs}, index for index, replaced just before it: a hit's buffer is one slice of
     * one of them (decision 0021), instead of a segment slice, its buffer and that buffer's read-only copy.
     */
    private volatile ByteBuffer[] readOnlyBuffers = new ByteBuffer[0];
    /** Free runs: start block → length in blocks. Guarded by lock. */
    private final TreeMap<Long, Long> freeByStart = new TreeMap<>();
    /** Free runs: (length << 32 | start), for best fit. Guarded by lock. */
    private final TreeSet<Long> freeBySize = new TreeSet<>();

    private final SlabListener listener;
    /** A dry run's copy ({@link #phantomCopy(Runnable)}): the same bookkeeping, no memory reserved. */
    private final boolean phantom;
    /** Slabs reserved so far (for a phantom, which has no {@link #slabs}). Guarded by lock. */
    private int slabCount;

    private long reserved;
    /** Written under the lock only, read without it. */
    private volatile long used;

    /** Gives a slab as a plain direct buffer, or null to map it ({@link DirectSlabs#allocate(long)}). */
    private final LongFunction<ByteBuffer> directSlabs;
    /** Slabs reserved as plain direct buffers. Guarded by lock. */
    private int directSlabCount;

    private long liveAllocations;
    private boolean closed;
    private boolean arenaClosed;

    /** Told about each slab reserved, e.g. to page-lock it. Called under the allocator's lock. */
    interface SlabListener {
        void reserved(MemorySegment slab);
    }

    /**
     * @param capacity  the bound on reserved memory, in bytes
     * @param slabBytes the size of each reserved slab; the largest allocation possible
     */
    SlabAllocator(long capacity, long slabBytes, SlabListener listener) {
        this(capacity, slabBytes, listener, false, DirectSlabs::allocate);
    }

    /**
     * As {@link #SlabAllocator(long, long, SlabListener)}, with the source of direct slabs given (for tests).
     *
     * @param direct gives a slab of the size asked as a plain direct buffer, or null to map that slab instead
     */
    SlabAllocator(long capacity, long slabBytes, SlabListener listener, LongFunction<ByteBuffer> direct) {
        this(capacity, slabBytes, listener, false, direct);
    }

    private SlabAllocator(
            long capacity, long slabBytes, SlabListener listener, boolean phantom, LongFunction<ByteBuffer> direct) {
        this.directSlabs = direct;
        this.capacity = capacity;
        long slab = Math.min(slabBytes, capacity);
        this.blocksPerSlab = (int) (slab >>> BLOCK_SHIFT);
        this.slabBytes = (long) blocksPerSlab << BLOCK_SHIFT;
        this.listener = listener;
        this.phantom = phantom;
    }

    /**
     * {@return a copy of this allocator's bookkeeping that reserves no memory} For a tier's dry run
     * ({@link MemoryTier#simulation()}): the copy runs this class's own best fit, slab cuts and coalescing on the same
     * free runs, so what it says fits is what would fit; {@link #segment} must not be called on it.
     *
     * @param underLock runs while no allocation or free can happen, so that what it copies of the tier's index (whose
     *                  blocks are allocated before, and freed after, they are in it) agrees with the free runs: a page
     *                  copied is never one whose block the copy holds as free
     */
    SlabAllocator phantomCopy(Runnable underLock) {
        SlabAllocator copy = new SlabAllocator(capacity, slabBytes, slab -> {}, true, bytes -> null);
        lock.lock();
        try {
            underLock.run();
            copy.freeByStart.putAll(freeByStart);
            copy.freeBySize.addAll(freeBySize);
            copy.slabCount = slabs.length;
            copy.reserved = reserved;
            copy.used = used;
            copy.liveAllocations = liveAllocations;
            copy.closed = closed;
        } finally {
            lock.unlock();
        }
        return copy;
    }

    static long blocks(long length) {
        return (length + BLOCK_SIZE - 1) >>> BLOCK_SHIFT;
    }

    /** {@return the bytes an allocation of {@code length} occupies: its blocks} */
    static long footprint(long length) {
        return blocks(length) << BLOCK_SHIFT;
    }

    long maxAllocation() {
        return slabBytes;
    }

    /**
     * Allocates {@code length} contiguous bytes.
     *
     * @return the first block of the run, or {@code -1} if no run fits (full, fragmented, closed, or larger than a
     *     slab)
     */
    @SuppressWarnings("NonAtomicVolatileUpdate") // used: written under the lock only, so no update is lost
    long allocate(int length) {
        long n = Math.max(1, blocks(length));
        if (n > blocksPerSlab) {
            return -1;
        }
        lock.lock();
        try {
            if (closed) {
                return -1;
            }
            Long fit = freeBySize.ceiling(n << 32);
            if (fit == null && reserveSlab(n)) {
                fit = freeBySize.ceiling(n << 32);
            }
            if (fit == null) {
                return -1;
            }
            long runLength = fit >>> 32;
            long start = fit & 0xFFFF_FFFFL;
            removeFree(start, runLength);
            if (runLength > n) {
                addFree(start + n, runLength - n);
            }
            used += n << BLOCK_SHIFT;
            liveAllocations++;
            return start;
        } finally {
            lock.unlock();
        }
    }

    /** {@return the memory of an allocation} */
    MemorySegment segment(long start, int length) {
        MemorySegment slab = slabs[(int) (start / blocksPerSlab)];
        return slab.asSlice((start % blocksPerSlab) << BLOCK_SHIFT, length);
    }

    /** {@return a read-only buffer over the whole slab that holds the allocation at {@code start}} */
    ByteBuffer readOnlyBuffer(long start) {
        return readOnlyBuffers[(int) (start / blocksPerSlab)];
    }

    /** {@return where the allocation at {@code start} begins in {@link #readOnlyBuffer(long)}} */
    int offsetInSlab(long start) {
        return (int) ((start % blocksPerSlab) << BLOCK_SHIFT);
    }

    /** Frees an allocation, coalescing it with free neighbours in the same slab. */
    @SuppressWarnings("NonAtomicVolatileUpdate") // used: written under the lock only, so no update is lost
    void free(long start, int length) {
        long n = Math.max(1, blocks(length));
        lock.lock();
        try {
            used -= n << BLOCK_SHIFT;
            liveAllocations--;
            long slab = start / blocksPerSlab;
            long runStart = start;
            long runLength = n;
            Map.Entry<Long, Long> before = freeByStart.lowerEntry(start);
            if (before != null
                    && before.getKey() + before.getValue() == start
                    && before.getKey() / blocksPerSlab == slab) {
                removeFree(before.getKey(), before.getValue());
                runStart = before.getKey();
                runLength += before.getValue();
            }
            Long after = freeByStart.get(start + n);
            if (after != null && (start + n) / blocksPerSlab == slab) {
                removeFree(start + n, after);
                runLength += after;
            }
            addFree(runStart, runLength);
            maybeCloseArena();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Reserves every slab of the capacity now and writes one byte in every 4 KiB of each, so the kernel backs the
     * whole capacity with memory before the first page arrives (the slab listener, e.g. {@code mlock}, runs for each
     * as usual). Call before any allocation: the bytes written are zeros over memory no page holds yet.
     *
     * @return the bytes reserved, now equal to the capacity rounded down to the block size
     */
    long reserveAndTouchAll() {
        lock.lock();
        try {
            if (closed) {
                return reserved;
            }
            int first = slabs.length;
            while (reserveSlab(1)) {
                // reserve until the capacity is reached
            }
            for (MemorySegment slab : Arrays.copyOfRange(slabs, first, slabs.length)) {
                for (long at = 0; at < slab.byteSize(); at += 4096) {
                    slab.set(ValueLayout.JAVA_BYTE, at, (byte) 0);
                }
            }
            return reserved;
        } finally {
            lock.unlock();
        }
    }

    /** {@return bytes allocated now, rounded to blocks} */
    long used() {
        return used;
    }

    /** {@return bytes reserved from the OS so far; never more than the capacity} */
    long reserved() {
        lock.lock();
        try {
            return reserved;
        } finally {
            lock.unlock();
        }
    }

    /** {@return the largest free run, in bytes, including memory not yet reserved} */
    long largestFree() {
        lock.lock();
        try {
            long largest = freeBySize.isEmpty() ? 0 : (freeBySize.last() >>> 32) << BLOCK_SHIFT;
            return Math.max(largest, Math.min(slabBytes, capacity - reserved));
        } finally {
            lock.unlock();
        }
    }

    /** Refuses new allocations; the arena closes once every live allocation is freed. */
    void close() {
        lock.lock();
        try {
            closed = true;
            maybeCloseArena();
        } finally {
            lock.unlock();
        }
    }

    /** {@return whether the arena has been closed, i.e. all memory returned to the OS} */
    boolean isReleased() {
        lock.lock();
        try {
            return arenaClosed;
        } finally {
            lock.unlock();
        }
    }

    private boolean reserveSlab(long blocksNeeded) {
        long size = Math.min(slabBytes, capacity - reserved) & ~((long) BLOCK_SIZE - 1);
        if ((size >>> BLOCK_SHIFT) < blocksNeeded) {
            return false;
        }
        long first = (long) slabCount * blocksPerSlab;
        MemorySegment slab = null;
        if (!phantom) {
            long bytes = slabBytes > size ? size : slabBytes;
            ByteBuffer plain = directSlabs.apply(bytes);
            ByteBuffer readOnly;
            if (plain != null) { // a plain direct buffer: hits read as fast as a user's own (DirectSlabs)
                slab = MemorySegment.ofBuffer(plain);
                NativeMemory.adviseHugePages(slab);
                readOnly = plain.asReadOnlyBuffer();
                directSlabCount++;
            } else {
                slab = NativeMemory.map(bytes, arena);
                if (slab == null) {
                    slab = arena.allocate(bytes, 4096);
                }
                readOnly = slab.asReadOnly().asByteBuffer(); // a slab is at most 1 GiB
            }
            MemorySegment[] grown = Arrays.copyOf(slabs, slabs.length + 1);
            grown[slabs.length] = slab;
            ByteBuffer[] buffers = Arrays.copyOf(readOnlyBuffers, slabs.length + 1);
            buffers[slabs.length] = readOnly;
            readOnlyBuffers = buffers;
            slabs = grown;
        }
        slabCount++;
        reserved += size;
        addFree(first, size >>> BLOCK_SHIFT);
        if (slab != null) {
            listener.reserved(slab);
        }
        return true;
    }

    private void addFree(long start, long length) {
        freeByStart.put(start, length);
        freeBySize.add(length << 32 | start);
    }

    private void removeFree(long start, long length) {
        freeByStart.remove(start);
        freeBySize.remove(length << 32 | start);
    }

    private void maybeCloseArena() {
        if (closed && liveAllocations == 0 && !arenaClosed) {
            arenaClosed = true;
            arena.close();
            // direct slabs are freed by the collector once unreachable: drop the allocator's references
            slabs = new MemorySegment[0];
            readOnlyBuffers = new ByteBuffer[0];
        }
    }

    /** {@return how many of the slabs reserved so far are plain direct buffers ({@link DirectSlabs})} */
    int directSlabs() {
        lock.lock();
        try {
            return directSlabCount;
        } finally {
            lock.unlock();
        }
    }
}
