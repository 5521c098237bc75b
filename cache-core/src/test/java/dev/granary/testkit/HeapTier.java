// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import dev.granary.TierStats;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.spi.Workload;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * A test tier: pages in byte arrays on the Java heap, bounded by bytes, least recently used evicted first. For origin
 * and loader authors who want a real {@code TieredCache} in their tests without the {@code cache-tiers} module,
 * and for Granary's own tests of the cache itself.
 *
 * {@snippet :
 * // in a test with a LeakCheck registered as an extension, leaks
 * HeapTier heap = new HeapTier(16 << 20); // 16 MiB
 * TieredCache cache = leaks.watch(TieredCache.builder(new MyOrigin()).tier(heap).build());
 * leaks.released("heap tier", heap::isReleased); // fails the test if a page reference leaks
 * try (Lease lease = cache.read("some/key")) {
 *     // ...
 * }
 * }
 *
 * <h2>What it is and is not</h2>
 * It keeps the whole {@link Tier} contract (it passes {@link TierContractTest}): exact bytes or a miss, counted hits
 * and misses, reference-counted pages, a hard capacity that includes pages readers still hold after eviction, fills
 * in place through {@link #allocate(PageKey)}, and {@link #remove(PageKey)} and an {@link
 * #evictionListener(Consumer) eviction listener} for exclusive tiering. It is not built for speed: one lock guards
 * everything, hits included, and the policy is plain LRU. It is not durable, not shared between processes, offers no
 * hints, ignores a loader's {@code workload}, and has no dry run ({@code simulation()} is {@code null}, so a loader's
 * plan refuses over it). Its memory is the heap, so leases over it are heap buffers ({@code bytes().isDirect()} is
 * false) and {@code LeakDetection.PARANOID} cannot make a buffer kept past {@code close()} fail; use
 * {@code MemoryTier} to test that.
 *
 * <h2>Memory discipline</h2>
 * {@link #stats()}{@code .usedBytes()} counts the bytes of every page this tier made that is still referenced: pages in
 * its index, pages evicted or invalidated that readers still hold, and allocated pages still being filled. It never
 * exceeds the capacity: when a page does not fit, the tier evicts the least recently used pages, and if readers hold
 * so much that evicting frees too little, it refuses the page (the cache then serves the read from memory of its
 * own). {@link #isReleased()} says whether the tier is closed and every page it made has been released: register it
 * with {@link LeakCheck#released(String, java.util.function.BooleanSupplier)} so a test that leaks a lease fails.
 *
 * <h2>Thread safety</h2>
 * Every method may be called from any thread; one lock guards the index and the counters. The eviction listener runs
 * on the evicting thread under that lock (it must not call back into this tier, as the {@code Tier} contract says).
 */
public final class HeapTier implements Tier, Tier.Eviction {

    private final String name;
    private final long capacity;
    private final Object lock = new Object();

    /** The pages put, least recently used first; each holds one reference of the index's own. */
    private final LinkedHashMap<PageKey, HeapPage> index = new LinkedHashMap<>();

    // Guarded by lock.
    private long used;
    private long hits;
    private long misses;
    private long hitBytes;
    private long evictions;
    private long rejections;
    private boolean closed;
    private Consumer<Page> evictionListener;

    /**
     * Creates a tier named {@code "heap"}.
     *
     * @param capacityBytes the bound on the bytes of its pages, {@code > 0}
     * @throws IllegalArgumentException if the capacity is not positive
     */
    public HeapTier(long capacityBytes) {
        this("heap", capacityBytes);
    }

    /**
     * Creates a tier.
     *
     * @param name          the name shown in stats, non-blank (give two tiers of one cache different names)
     * @param capacityBytes the bound on the bytes of its pages, {@code > 0}
     * @throws IllegalArgumentException if the name is blank or the capacity not positive
     */
    public HeapTier(String name, long capacityBytes) {
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException(
                    "tier name: " + (name == null ? "null" : "'" + name + "'") + " (expected: a non-blank name)");
        }
        if (capacityBytes <= 0) {
            throw new IllegalArgumentException("heap tier capacity: " + capacityBytes + " bytes (expected: > 0)");
        }
        this.name = name;
        this.capacity = capacityBytes;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Page get(PageKey key) {
        synchronized (lock) {
            HeapPage page = index.get(key);
            if (page == null) {
                misses++;
                return null;
            }
            index.putLast(key, page); // most recently used
            page.retain(1); // the index holds a reference, so the page is alive
            hits++;
            hitBytes += page.length();
            return page;
        }
    }

    /** Looks a page up without counting it and without changing the eviction order. */
    @Override
    public Page peek(PageKey key) {
        synchronized (lock) {
            HeapPage page = index.get(key);
            if (page == null) {
                return null;
            }
            page.retain(1);
            return page;
        }
    }

    @Override
    public Page allocate(PageKey key) {
        synchronized (lock) {
            if (closed || !makeRoom(key.length())) {
                return null;
            }
            used += key.length();
        }
        return new HeapPage(this, key, new byte[key.length()]);
    }

    @Override
    public boolean put(Page page) {
        if (!page.isSealed()) {
            throw new IllegalArgumentException(
                    "page " + page.key() + " is not sealed (expected: a filled, sealed page)");
        }
        PageKey key = page.key();
        if (page instanceof HeapPage own && own.tier == this) {
            // Allocated here and filled, or handed out and offered again: its bytes are counted already.
            synchronized (lock) {
                if (closed) {
                    return false;
                }
                if (!index.containsKey(key)) {
                    own.retain(1); // the index's reference; the caller holds one, so the page is alive
                    index.put(key, own);
                }
                return true;
            }
        }
        synchronized (lock) {
            if (closed) {
                return false;
            }
            if (index.containsKey(key)) {
                return true;
            }
            if (!makeRoom(page.length())) {
                return false;
            }
            used += page.length();
        }
        // Copy outside the lock; the bytes are reserved, and released again by the copy's last release.
        HeapPage copy = new HeapPage(this, key, new byte[page.length()]);
        try {
            MemorySegment.copy(page.segment(), 0, copy.writableSegment(), 0, page.length());
        } catch (InternalError e) {
            // A page over a mapped file that was truncated under it (the JVM reports the SIGBUS as an InternalError).
            copy.release();
            throw new UncheckedIOException(
                    new IOException("cannot copy " + page + " into heap tier '" + name + "': its memory failed", e));
        }
        copy.seal();
        try {
            return put(copy);
        } finally {
            copy.release(); // the copy's own reference; the index holds another if it was stored
        }
    }

    /**
     * Makes room for {@code bytes} more, evicting least recently used pages; counts a rejection if it cannot (the page
     * is larger than the capacity, or readers hold too much). Called under the lock.
     */
    private boolean makeRoom(long bytes) {
        if (bytes > capacity) {
            rejections++;
            return false;
        }
        while (used + bytes > capacity && !index.isEmpty()) {
            HeapPage evicted = index.pollFirstEntry().getValue();
            evictions++;
            Consumer<Page> listener = evictionListener;
            if (listener != null) {
                try {
                    listener.accept(evicted); // valid during the call: the index's reference is dropped after it
                } catch (RuntimeException e) {
                    // The listener's failure (a tier below that refuses) only loses the demotion, never the page.
                }
            }
            evicted.release(); // frees the bytes now, unless a reader (or the listener) still holds the page
        }
        if (used + bytes > capacity) {
            rejections++;
            return false;
        }
        return true;
    }

    @Override
    public boolean remove(PageKey key) {
        synchronized (lock) {
            HeapPage page = index.remove(key);
            if (page == null) {
                return false;
            }
            page.release();
            return true;
        }
    }

    /** Its eviction view: the listener exclusive tiering demotes through; the loader's workload is not used. */
    @Override
    public Optional<Tier.Eviction> eviction() {
        return Optional.of(this);
    }

    @Override
    public void evictionListener(Consumer<Page> listener) {
        synchronized (lock) {
            this.evictionListener = listener;
        }
    }

    /** Ignored: this tier evicts the least recently used page whatever the loader plans to read. */
    @Override
    public void workload(Workload workload) {}

    @Override
    public void invalidate(String origin, String key) {
        synchronized (lock) {
            for (Iterator<Map.Entry<PageKey, HeapPage>> it = index.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<PageKey, HeapPage> e = it.next();
                if (e.getKey().origin().equals(origin) && e.getKey().key().equals(key)) {
                    it.remove();
                    e.getValue().release();
                }
            }
        }
    }

    @Override
    public TierStats stats() {
        synchronized (lock) {
            return new TierStats(name, hits, misses, hitBytes, evictions, used, capacity, rejections, 0, 0);
        }
    }

    /** {@return the number of pages in the index now} */
    public int pageCount() {
        synchronized (lock) {
            return index.size();
        }
    }

    /**
     * {@return whether the tier is closed and every page it made has been released} False while a reader holds a page
     * (a lease still open) or a fill still holds the page it allocated.
     */
    public boolean isReleased() {
        synchronized (lock) {
            return closed && used == 0;
        }
    }

    /** Drops every page from the index; pages readers hold stay valid until released. Idempotent. */
    @Override
    public void close() {
        List<HeapPage> dropped;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            dropped = new ArrayList<>(index.values());
            index.clear();
        }
        dropped.forEach(Page::release);
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "HeapTier[" + name + ", used=" + used + "/" + capacity + ", pages=" + index.size()
                    + (closed ? ", closed" : "") + "]";
        }
    }

    /** Called once per page, by its last release. */
    private void freed(int bytes) {
        synchronized (lock) {
            used -= bytes;
        }
    }

    /** A page in a byte array of its own; its last release gives its bytes back to the tier's capacity. */
    private static final class HeapPage extends Page {

        final HeapTier tier;

        HeapPage(HeapTier tier, PageKey key, byte[] bytes) {
            super(key, MemorySegment.ofArray(bytes));
            this.tier = tier;
        }

        @Override
        protected void deallocate() {
            tier.freed(length());
        }
    }
}
