// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Origin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * A read-through cache of an origin's objects, in pages held by a stack of tiers (off-heap memory, local disk).
 *
 * {@snippet :
 * TieredCache cache = TieredCache.builder(PosixOrigin.of(Path.of("/mnt/data")))
 *         .tier(MemoryTier.builder().capacity(8L << 30).build())
 *         .pageSize(1 << 20)
 *         .build();
 * try (Lease lease = cache.read("train/000001.jpg")) {
 *     ByteBuffer bytes = lease.bytes();   // read-only; valid until close()
 * }
 * }
 *
 * <h2>The read path</h2>
 * A read is cut into pages ({@link Builder#pageSize(int)}; an object smaller than a page is one page of its own
 * size). Each page is looked up in the tiers in the order they were added; a hit in a lower tier is copied into the
 * tiers above it. A page no tier holds is read from the origin — concurrent misses on one page make one origin read —
 * straight into memory the first tier allocates, and offered to every tier (with {@link Tiering#EXCLUSIVE}: moved
 * rather than copied, and kept by one tier only; see {@link Builder#tiering(Tiering)}). Every page is keyed by the object's
 * version, learned from the origin and trusted for {@link Builder#metadataTtl(Duration)}; origin reads are pinned to
 * it, so one read never mixes two versions of an object, and a changed object is never served from old pages.
 *
 * <h2>Thread safety</h2>
 * All methods may be called from any number of threads. Origin reads run on virtual threads, bounded by the origin's
 * {@link Origin#maxConcurrency()}; a caller waits at most {@link Builder#readTimeout(Duration)} for them.
 *
 * <h2>Lifecycle</h2>
 * The cache owns its origin and tiers and closes them in {@link #close()}. Leases handed out before close stay valid
 * until they are closed; their memory is freed then.
 */
public final class TieredCache implements AutoCloseable {

    private final Origin origin;
    private final String originId;
    private final URI originUri;
    private final Tier[] tiers;
    private final boolean exclusive;
    private final int pageSize;
    private final long readTimeoutNanos;
    private final OriginFetcher fetcher;
    private final MetadataCache metadata;
    private final LeaseTracker leases;
    /** The loaders' epochs: while one runs, fills go to one tier only and hits are not promoted. */
    private final EpochClock epochs;
    private final LoaderSupport loaderSupport;
    private volatile boolean closed;

    private TieredCache(Builder b) {
        this.origin = b.origin;
        this.originUri = origin.uri();
        this.originId = originUri.toString();
        this.tiers = b.tiers.toArray(Tier[]::new);
        this.exclusive = b.tiering == Tiering.EXCLUSIVE;
        if (exclusive) {
            for (int i = 0; i < tiers.length - 1; i++) {
                int below = i + 1;
                tiers[i].evictionListener(page -> offer(page, below));
            }
        }
        this.pageSize = b.pageSize;
        this.readTimeoutNanos = b.readTimeout.toNanos();
        this.fetcher = new OriginFetcher(origin);
        this.metadata = new MetadataCache(fetcher, b.metadataTtl.toNanos(), b.metadataCapacity, b.ticker,
                readTimeoutNanos);
        this.leases = new LeaseTracker(b.leakDetection);
        this.epochs = new EpochClock(tiers, originUri);
        this.loaderSupport = new LoaderSupport(this);
    }

    /**
     * Starts building a cache over an origin.
     *
     * @param origin where the bytes live; the cache will own and close it
     * @return a builder
     * @throws IllegalArgumentException if the origin is null
     */
    public static Builder builder(Origin origin) {
        if (origin == null) {
            throw new IllegalArgumentException("origin: null (expected: an Origin such as PosixOrigin.of(dir))");
        }
        return new Builder(origin);
    }

    /**
     * Reads a whole object.
     *
     * @param key the object key, relative to the origin's root
     * @return a lease on the object's bytes; close it
     * @throws IllegalArgumentException if the key is empty, absolute, or escapes the origin's root, or the object is
     *                                  larger than one buffer can hold (use {@link #readInto})
     * @throws NoSuchObjectException    if the object does not exist
     * @throws ObjectChangedException   if the object kept changing while being read
     * @throws IOException              if the origin fails or does not answer within the read timeout
     * @throws IllegalStateException    if the cache is closed
     */
    public Lease read(String key) throws IOException {
        ensureOpen();
        Checks.key(key);
        for (int attempt = 0; ; attempt++) {
            MetadataCache.Known known = metadata.get(key);
            if (known.size > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("object '" + key + "' has " + known.size
                        + " bytes (expected: at most " + (Integer.MAX_VALUE - 8)
                        + " for one lease; read it in ranges or with readInto)");
            }
            try {
                return readRange(key, known, 0, (int) known.size);
            } catch (ObjectChangedException e) {
                changed(known.info, e, attempt);
            }
        }
    }

    /**
     * Reads a byte range of an object.
     *
     * @param key    the object key, relative to the origin's root
     * @param offset the first byte, {@code >= 0}
     * @param length the number of bytes, {@code >= 0}; {@code offset + length} must not exceed the object's size
     * @return a lease on the bytes; close it
     * @throws IllegalArgumentException if the key is invalid or {@code offset} or {@code length} is negative or too
     *                                  large for one buffer
     * @throws EOFException             if the range ends past the end of the object
     * @throws NoSuchObjectException    if the object does not exist
     * @throws ObjectChangedException   if the object kept changing while being read
     * @throws IOException              if the origin fails or does not answer within the read timeout
     * @throws IllegalStateException    if the cache is closed
     */
    public Lease read(String key, long offset, long length) throws IOException {
        ensureOpen();
        Checks.key(key);
        Checks.range(key, offset, length);
        for (int attempt = 0; ; attempt++) {
            MetadataCache.Known known = metadata.get(key);
            if (offset > known.size || length > known.size - offset) {
                throw pastTheEnd(known.info, offset, length);
            }
            try {
                return readRange(key, known, offset, (int) length);
            } catch (ObjectChangedException e) {
                changed(known.info, e, attempt);
            }
        }
    }

    /** {@link LoaderSupport#readExtent(String, long, int)}. */
    Lease readExtent(String key, long offset, int length) throws IOException {
        ensureOpen();
        Checks.key(key);
        Checks.range(key, offset, length);
        for (int attempt = 0; ; attempt++) {
            MetadataCache.Known known = metadata.get(key);
            ObjectInfo info = known.info;
            checkBounds(info, offset, length);
            if (length == 0) {
                return Lease.empty(key, offset);
            }
            try {
                return Lease.ofPage(key, offset, page(info, extentKey(info, offset, length), 0), 0, length, leases);
            } catch (ObjectChangedException e) {
                changed(info, e, attempt);
            }
        }
    }

    /** An extent of one given version: looked up in the tiers, else read pinned and kept ({@code keep}) or not. */
    Lease pinnedExtent(ObjectInfo object, long offset, int length, boolean keep) throws IOException {
        ensureOpen();
        if (object == null) {
            throw new IllegalArgumentException("object: null (expected: an ObjectInfo from stat() or list())");
        }
        String key = object.key();
        Checks.key(key);
        Checks.range(key, offset, length);
        checkBounds(object, offset, length);
        if (length == 0) {
            return Lease.empty(key, offset);
        }
        OriginFetcher.Filler filler = keep ? k -> fill(object, k) : k -> load(object, new HeapPage(k));
        try {
            return Lease.ofPage(key, offset, page(object, extentKey(object, offset, length), 0, filler), 0, length,
                    leases);
        } catch (ObjectChangedException e) {
            metadata.forget(key); // other readers learn the new version; this one keeps failing on the old
            throw e;
        }
    }

    /**
     * {@return the controls a data loader needs beyond this facade} Extent reads (samples inside shards, cached as
     * units of their own), reads pinned to one version, and the {@link EpochDriver}; see {@link LoaderSupport}.
     * Applications that read objects do not need it.
     */
    public LoaderSupport loaderSupport() {
        return loaderSupport;
    }

    EpochDriver newDriver() {
        ensureOpen();
        return epochs.newDriver();
    }

    /** {@link LoaderSupport#simulation(EpochDriver)}: copies the tiers and the clock under the clock's monitor. */
    CacheSimulation simulation(EpochDriver driver) {
        ensureOpen();
        List<String> names = new ArrayList<>(tiers.length);
        for (Tier tier : tiers) {
            names.add(tier.name());
        }
        EpochClock.Snapshot snapshot = epochs.snapshot(driver, () -> {
            List<dev.granary.spi.TierSimulation> sims = new ArrayList<>(tiers.length);
            for (Tier tier : tiers) {
                sims.add(tier.simulation());
            }
            return sims;
        });
        return new CacheSimulation(this, names, snapshot);
    }

    MetadataCache metadata() {
        return metadata;
    }

    /**
     * Copies {@code dst.remaining()} bytes of an object, starting at {@code offset}, into {@code dst}, advancing its
     * position. Nothing is leased: this is the path for callers that want the bytes in their own buffer.
     *
     * @param key    the object key
     * @param offset the first byte, {@code >= 0}
     * @param dst    a writable buffer; exactly {@code dst.remaining()} bytes are written
     * @throws IllegalArgumentException if the key is invalid, the offset negative, or {@code dst} read-only
     * @throws EOFException             if the object ends before {@code offset + dst.remaining()}; {@code dst} is
     *                                  then unchanged
     * @throws NoSuchObjectException    if the object does not exist
     * @throws IOException              if the origin fails or does not answer within the read timeout
     * @throws IllegalStateException    if the cache is closed
     */
    public void readInto(String key, long offset, ByteBuffer dst) throws IOException {
        if (dst == null || dst.isReadOnly()) {
            throw new IllegalArgumentException("destination buffer: " + (dst == null ? "null" : "read-only")
                    + " (expected: a writable ByteBuffer)");
        }
        int n = dst.remaining();
        readInto(key, offset, MemorySegment.ofBuffer(dst));
        dst.position(dst.position() + n);
    }

    /**
     * Copies {@code dst.byteSize()} bytes of an object, starting at {@code offset}, into {@code dst}.
     *
     * @param key    the object key
     * @param offset the first byte, {@code >= 0}
     * @param dst    a writable segment; exactly {@code dst.byteSize()} bytes are written
     * @throws IllegalArgumentException if the key is invalid, the offset negative, or {@code dst} read-only
     * @throws EOFException             if the object ends before {@code offset + dst.byteSize()}; {@code dst} is
     *                                  then unchanged
     * @throws NoSuchObjectException    if the object does not exist
     * @throws IOException              if the origin fails or does not answer within the read timeout
     * @throws IllegalStateException    if the cache is closed
     */
    public void readInto(String key, long offset, MemorySegment dst) throws IOException {
        ensureOpen();
        Checks.key(key);
        if (dst == null || dst.isReadOnly()) {
            throw new IllegalArgumentException("destination segment: " + (dst == null ? "null" : "read-only")
                    + " (expected: a writable MemorySegment)");
        }
        long length = dst.byteSize();
        if (offset < 0) {
            throw new IllegalArgumentException("offset into '" + key + "': " + offset + " (expected: >= 0)");
        }
        for (int attempt = 0; ; attempt++) {
            ObjectInfo info = metadata.get(key).info;
            checkBounds(info, offset, length);
            try {
                copyRange(info, offset, dst);
                return;
            } catch (ObjectChangedException e) {
                changed(info, e, attempt);
            }
        }
    }

    /**
     * Returns an object's metadata: from what the cache knows within the metadata TTL, else from the origin.
     *
     * @param key the object key
     * @return the key, size and version
     * @throws IllegalArgumentException if the key is invalid
     * @throws NoSuchObjectException    if the object does not exist
     * @throws IOException              if the origin fails and no earlier version is known
     * @throws IllegalStateException    if the cache is closed
     */
    public ObjectInfo stat(String key) throws IOException {
        ensureOpen();
        Checks.key(key);
        return metadata.get(key).info;
    }

    /**
     * Lists the objects whose keys start with {@code prefix}, through the origin, lazily and in its order (UTF-8 byte
     * order for S3 and POSIX), and remembers each listed version as if it had been {@link #stat stat}ed: reading a
     * listed object within {@code metadataTtl} asks the origin for its bytes only, so a dataset of a million objects
     * costs the listing's pages, not a request per object — as long as the cache remembers that many versions
     * ({@link Builder#metadataCapacity(int)}; beyond it, some are dropped and asked for again). A
     * loader that keeps the listing itself and reads pinned to it lists through {@link LoaderSupport#list(String)}
     * instead. Close the stream.
     *
     * @param prefix a key prefix, possibly empty; not a directory name ({@code "train"} also matches
     *               {@code "training/x"})
     * @return the objects with their sizes and versions
     * @throws IllegalArgumentException if the prefix is null, absolute, or has a {@code ..} segment
     * @throws IOException              if the listing cannot be started; later failures surface as
     *                                  {@link java.io.UncheckedIOException} from the stream
     * @throws IllegalStateException    if the cache is closed
     */
    public java.util.stream.Stream<ObjectInfo> list(String prefix) throws IOException {
        return list(prefix, true);
    }

    /** {@link #list(String)}, remembering the versions listed or not ({@link LoaderSupport#list(String)}). */
    java.util.stream.Stream<ObjectInfo> list(String prefix, boolean remember) throws IOException {
        ensureOpen();
        if (prefix == null) {
            throw new IllegalArgumentException("prefix: null (expected: a key prefix, possibly empty)");
        }
        if (!prefix.isEmpty()) {
            Checks.key(prefix);
        }
        java.util.stream.Stream<ObjectInfo> listed = fetcher.list(prefix);
        return remember ? listed.peek(metadata::observe) : listed;
    }

    /**
     * Drops every cached page of an object, in every tier and every version, and forgets its version, so the next
     * read asks the origin. Leases already handed out stay valid.
     *
     * @param key the object key
     * @throws IllegalArgumentException if the key is invalid: one {@link #read(String)} would reject too
     * @throws IllegalStateException    if the cache is closed
     */
    public void invalidate(String key) {
        ensureOpen();
        Checks.key(key);
        origin.checkKey(key); // as strict as read, which the origin's stat checks
        metadata.forget(key);
        for (Tier tier : tiers) {
            tier.invalidate(originId, key);
        }
    }

    /** {@link LoaderSupport#writeObject}: the origin writes, then every cached page and version of the key is dropped. */
    ObjectInfo writeObject(String key, byte[] bytes) throws IOException {
        ensureOpen();
        Checks.key(key);
        origin.checkKey(key);
        if (bytes == null) {
            throw new IllegalArgumentException("bytes of '" + key + "': null (expected: the object's bytes)");
        }
        try {
            return origin.write(key, bytes);
        } finally {
            invalidate(key); // even after a failure: the origin may hold the new bytes all the same
        }
    }

    /** {@return a snapshot of the counters of every tier, of the origin traffic and of leases} */
    public CacheStats stats() {
        List<TierStats> tierStats = new ArrayList<>(tiers.length);
        for (Tier tier : tiers) {
            tierStats.add(tier.stats());
        }
        return new CacheStats(tierStats, fetcher.stats(), leases.open(), leases.leaked(), metadata.staleServes());
    }

    /** {@return the origin's root URI} */
    public URI originUri() {
        return originUri;
    }

    /** {@return the page size in bytes} */
    public int pageSize() {
        return pageSize;
    }

    /**
     * Closes the cache: stops origin reads in progress (their readers fail), closes the tiers and the origin. Leases
     * handed out before stay valid until closed; if any are still open, a warning names them (all of them under
     * {@link LeakDetection#PARANOID}, the sampled ones otherwise). Idempotent.
     */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        leases.warnIfOpen(originUri);
        epochs.cacheClosed();
        fetcher.close();
        for (Tier tier : tiers) {
            tier.close();
        }
        origin.close();
    }

    // ---------------------------------------------------------------------------------------------- the read path

    private Lease readRange(String key, MetadataCache.Known known, long offset, int length) throws IOException {
        if (length == 0) {
            return Lease.empty(key, offset);
        }
        long first = offset / pageSize;
        long last = (offset + length - 1) / pageSize;
        if (first == last) {
            Page page = first == 0 ? firstPage(known) : page(known.info, pageKey(known.info, first), 0);
            return Lease.ofPage(key, offset, page, (int) (offset - page.offset()), length, leases);
        }
        // The range spans pages: assemble one buffer of its own, by one copy of each page's part.
        byte[] bytes = new byte[length];
        copyRange(known.info, offset, MemorySegment.ofArray(bytes));
        return Lease.ofCopy(key, offset, ByteBuffer.wrap(bytes).asReadOnlyBuffer(), leases);
    }

    /** Copies a range into {@code dst}, fetching the missing pages of it concurrently. */
    private void copyRange(ObjectInfo info, long offset, MemorySegment dst) throws IOException {
        long length = dst.byteSize();
        if (length == 0) {
            return;
        }
        long first = offset / pageSize;
        long last = (offset + length - 1) / pageSize;
        // At most this many pages are held at once, so a huge readInto does not pin a huge part of the cache.
        int window = (int) Math.min(last - first + 1, 64);
        for (long start = first; start <= last; start += window) {
            long end = Math.min(last, start + window - 1);
            Page[] pages = pages(info, start, end);
            try {
                for (Page page : pages) {
                    long from = Math.max(offset, page.offset());
                    long to = Math.min(offset + length, page.offset() + page.length());
                    try {
                        MemorySegment.copy(page.segment(), from - page.offset(), dst, from - offset, to - from);
                    } catch (InternalError e) {
                        // A mapped page whose file was truncated, or whose device failed, after the tier checked it:
                        // the JVM reports the SIGBUS as an InternalError. Drop the page so the next read misses,
                        // and fail this one as I/O, never as an Error.
                        for (Tier tier : tiers) {
                            tier.remove(page.key());
                        }
                        throw new IOException("cannot read cached " + page + ": the cache file under it was damaged"
                                + " (truncated or failing); the page is dropped and the next read fetches it again", e);
                    }
                }
            } finally {
                for (Page page : pages) {
                    page.release();
                }
            }
        }
    }

    /** Returns pages {@code first..last} of an object, each retained once; starts every missing one at once. */
    private Page[] pages(ObjectInfo info, long first, long last) throws IOException {
        int n = (int) (last - first + 1);
        Page[] pages = new Page[n];
        OriginFetcher.Flight[] flights = new OriginFetcher.Flight[n];
        for (int i = 0; i < n; i++) {
            PageKey key = pageKey(info, first + i);
            pages[i] = lookup(key);
            if (pages[i] == null) {
                dev.granary.internal.ReadAccount.missed();
                flights[i] = fetcher.fetch(key, this::recheck, k -> fill(info, k));
            }
        }
        // The clock starts when there is something to wait for: hits never read it.
        long deadline = 0;
        int i = 0;
        try {
            for (; i < n; i++) {
                if (flights[i] != null && deadline == 0) {
                    deadline = deadline();
                }
                if (flights[i] != null) {
                    pages[i] = OriginFetcher.await(flights[i], deadline, describe(info, first + i));
                }
            }
            return pages;
        } catch (IOException | RuntimeException | Error e) {
            // Pages before the failed one are ours; from it on, flights are abandoned and looked-up pages released.
            for (int j = 0; j < n; j++) {
                if (j >= i && flights[j] != null) {
                    OriginFetcher.abandon(flights[j]);
                } else if (pages[j] != null) {
                    pages[j].release();
                }
            }
            throw e;
        }
    }

    /**
     * Page 0 of an object, through the hint its version keeps when the first tier has it: one confirmation instead
     * of a second hash lookup on the hottest path (most samples are one page).
     */
    private Page firstPage(MetadataCache.Known known) throws IOException {
        Object hint = known.hint;
        if (hint != null) {
            Page page = tiers[0].touch(hint);
            if (page != null) {
                dev.granary.internal.ReadAccount.hit(0);
                return page;
            }
        }
        PageKey key = pageKey(known.info, 0);
        if (tiers.length > 0) {
            Page page = tiers[0].get(key);
            if (page != null) {
                dev.granary.internal.ReadAccount.hit(0);
                known.hint = tiers[0].hint(page);
                return page;
            }
        }
        return page(known.info, key, 1);
    }

    /** A page, looked up from tier {@code fromTier} down, else filled from the origin. */
    private Page page(ObjectInfo info, PageKey key, int fromTier) throws IOException {
        return page(info, key, fromTier, k -> fill(info, k));
    }

    /** A page, looked up from tier {@code fromTier} down, else made by {@code filler} on a fill's virtual thread. */
    private Page page(ObjectInfo info, PageKey key, int fromTier, OriginFetcher.Filler filler) throws IOException {
        Page page = lookup(key, fromTier, false);
        if (page != null) {
            return page;
        }
        dev.granary.internal.ReadAccount.missed();
        OriginFetcher.Flight flight = fetcher.fetch(key, this::recheck, filler);
        try {
            return OriginFetcher.await(flight, deadline(), describe(info, key.offset() / pageSize));
        } catch (IOException | RuntimeException | Error e) {
            OriginFetcher.abandon(flight);
            throw e;
        }
    }

    /**
     * Looks a page up in the tiers, in order; a hit below the first tier is copied into the tiers above (inclusive),
     * or moved into the first tier above that takes it (exclusive).
     */
    private Page lookup(PageKey key) {
        return lookup(key, 0, false);
    }

    /** The fill's second look, once its flight is registered: not counted as a lookup. */
    private Page recheck(PageKey key) {
        return lookup(key, 0, true);
    }

    private Page lookup(PageKey key, int fromTier, boolean quietly) {
        Tier[] tiers = this.tiers;
        for (int i = fromTier; i < tiers.length; i++) {
            Page page = quietly ? tiers[i].peek(key) : tiers[i].get(key);
            if (page != null) {
                try {
                    for (int j = 0; j < i && !epochs.driven(); j++) {
                        if (tiers[j].put(page) && exclusive) {
                            tiers[i].remove(key);
                            break;
                        }
                    }
                } catch (java.io.UncheckedIOException e) {
                    // Copying the page up faulted: its tier's file was damaged under it (Tier.put). That tier
                    // dropped it; look further down, as for a miss.
                    page.release();
                    continue;
                }
                if (!quietly) {
                    dev.granary.internal.ReadAccount.hit(i);
                }
                return page;
            }
        }
        return null;
    }

    /**
     * Fills a page from the origin: into memory the first willing tier allocates (no extra copy), else into a heap
     * page of its own; then offers it to every tier. Runs on the fill's virtual thread.
     */
    private Page fill(ObjectInfo info, PageKey key) throws IOException {
        Page page = null;
        for (Tier tier : tiers) {
            page = tier.allocate(key);
            if (page != null) {
                break;
            }
        }
        if (page == null) {
            page = new HeapPage(key);
        }
        load(info, page);
        if (exclusive || epochs.driven()) {
            offer(page, 0);
        } else {
            for (Tier tier : tiers) {
                tier.put(page);
            }
        }
        return page;
    }

    /** Reads a page's bytes from the origin and seals it; releases it if the read fails. */
    private Page load(ObjectInfo info, Page page) throws IOException {
        try {
            fetcher.readInto(info, page);
        } catch (IOException | RuntimeException | Error e) {
            page.release();
            throw e;
        }
        page.seal();
        return page;
    }

    /** The key of an extent cached as one unit: exactly {@code [offset, offset + length)} of this version. */
    private PageKey extentKey(ObjectInfo info, long offset, int length) {
        return new PageKey(originId, info.key(), info.version(), offset, length);
    }

    /** Exclusive tiering: offers a page to the tiers from {@code from} down until one takes it. */
    private void offer(Page page, int from) {
        Tier[] tiers = this.tiers;
        for (int i = from; i < tiers.length; i++) {
            if (tiers[i].put(page)) {
                return;
            }
        }
    }

    private PageKey pageKey(ObjectInfo info, long index) {
        long offset = index * pageSize;
        int length = (int) Math.min(pageSize, info.size() - offset);
        return new PageKey(originId, info.key(), info.version(), offset, length);
    }

    private java.util.function.Supplier<String> describe(ObjectInfo info, long index) {
        return () -> "page " + index + " of '" + info.key() + "' (version " + info.version() + ", " + originUri + ")";
    }

    private void checkBounds(ObjectInfo info, long offset, long length) throws EOFException {
        if (offset > info.size() || length > info.size() - offset) {
            throw pastTheEnd(info, offset, length);
        }
    }

    private EOFException pastTheEnd(ObjectInfo info, long offset, long length) {
        return new EOFException("range [" + offset + ", " + (offset + length) + ") of '" + info.key() + "' in "
                + originUri + ": past the end (expected: within the object's " + info.size() + " bytes)");
    }

    /** After a read found its version gone: forget the version and every page of it; retry once, then give up. */
    private void changed(ObjectInfo info, ObjectChangedException e, int attempt) throws ObjectChangedException {
        metadata.forget(info.key());
        for (Tier tier : tiers) {
            tier.invalidate(originId, info.key());
        }
        if (attempt >= 1) {
            throw e;
        }
    }

    private long deadline() {
        return System.nanoTime() + readTimeoutNanos;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("cache over " + originUri + " is closed (expected: an open cache)");
        }
    }

    /** A page on the heap, for fills that no tier would allocate; garbage collected once released. */
    private static final class HeapPage extends Page {
        HeapPage(PageKey key) {
            super(key, MemorySegment.ofArray(new byte[key.length()]));
        }

        @Override
        protected void deallocate() {}
    }

    /**
     * Configures a {@link TieredCache}. Every setter validates its argument at once.
     *
     * <p>Not thread-safe; {@link #build()} may be called more than once only if each cache gets its own origin and
     * tiers, which the builder cannot check — build once.
     */
    public static final class Builder {

        private final Origin origin;
        private final List<Tier> tiers = new ArrayList<>();
        private int pageSize = 1 << 20;
        private Duration metadataTtl = Duration.ofMinutes(1);
        private Tiering tiering = Tiering.INCLUSIVE;
        private Duration readTimeout = Duration.ofSeconds(30);
        private int metadataCapacity = 1 << 20;
        private LeakDetection leakDetection = LeakDetection.SAMPLED;
        private LongSupplier ticker = System::nanoTime;
        private boolean built;

        private Builder(Origin origin) {
            this.origin = origin;
        }

        /**
         * Adds a tier below the ones added before: lookups try tiers in the order added.
         *
         * @param tier a tier not used by any other cache
         * @return this builder
         * @throws IllegalArgumentException if the tier is null or already added
         */
        public Builder tier(Tier tier) {
            if (tier == null) {
                throw new IllegalArgumentException("tier: null (expected: a Tier such as MemoryTier.builder()...)");
            }
            for (Tier t : tiers) {
                if (t == tier) {
                    throw new IllegalArgumentException("tier: '" + tier.name() + "' added twice (expected: each"
                            + " tier once)");
                }
            }
            tiers.add(tier);
            return this;
        }

        /**
         * Sets the unit of caching. Default 1 MiB.
         *
         * @param bytes the page size, in {@code [16, 1 GiB]}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder pageSize(int bytes) {
            if (bytes < 16 || bytes > (1 << 30)) {
                throw new IllegalArgumentException("page size: " + bytes + " (expected: 16..1073741824 bytes)");
            }
            this.pageSize = bytes;
            return this;
        }

        /**
         * Sets how the tiers share pages. Default {@link Tiering#INCLUSIVE}: every tier may hold a page, a disk tier
         * under memory keeps what memory evicts.
         *
         * @param tiering inclusive or exclusive
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder tiering(Tiering tiering) {
            if (tiering == null) {
                throw new IllegalArgumentException("tiering: null (expected: Tiering.INCLUSIVE or Tiering.EXCLUSIVE)");
            }
            this.tiering = tiering;
            return this;
        }

        /**
         * Sets how long an object's version, once confirmed by the origin, is trusted without asking again. Default 1
         * minute. Zero asks on every read.
         *
         * @param ttl the time to live, {@code >= 0}
         * @return this builder
         * @throws IllegalArgumentException if null or negative
         */
        public Builder metadataTtl(Duration ttl) {
            if (ttl == null || ttl.isNegative()) {
                throw new IllegalArgumentException("metadata TTL: " + ttl + " (expected: a duration >= 0)");
            }
            this.metadataTtl = ttl;
            return this;
        }

        /**
         * Sets how long a read waits for the origin before it fails with an {@link IOException}: the wait for an
         * object's metadata and the wait for its data are each bounded by it. Default 30 seconds. Hits never wait.
         *
         * @param timeout the timeout, {@code > 0}
         * @return this builder
         * @throws IllegalArgumentException if null, zero or negative
         */
        public Builder readTimeout(Duration timeout) {
            if (timeout == null || timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("read timeout: " + timeout + " (expected: a duration > 0)");
            }
            this.readTimeout = timeout;
            return this;
        }

        /**
         * Sets how many objects' versions are remembered (from reads, {@link TieredCache#stat stat}s and
         * {@link TieredCache#list list}ings), each for the metadata TTL. Beyond the bound, expired versions are dropped
         * first, then arbitrary others, and the next read of each of those asks the origin again (one stat request);
         * the first time this happens a warning is logged. Default 1 048 576; each remembered version costs about
         * 120 bytes of heap plus its version string (and its key, unless the application holds that anyway). Datasets
         * listed by Granary's loader
         * ({@code Dataset.ofObjects}) keep their versions themselves and read pinned to them, so they do not count
         * against this bound; raise it for an application that reads more distinct objects than this by key within
         * a TTL.
         *
         * @param objects the bound, {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if less than 1
         */
        public Builder metadataCapacity(int objects) {
            if (objects < 1) {
                throw new IllegalArgumentException("metadata capacity: " + objects + " (expected: >= 1 objects)");
            }
            this.metadataCapacity = objects;
            return this;
        }

        /**
         * Sets how closely unclosed leases are watched. Default {@link LeakDetection#SAMPLED}.
         *
         * @param detection the level
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder leakDetection(LeakDetection detection) {
            if (detection == null) {
                throw new IllegalArgumentException("leak detection: null (expected: one of "
                        + List.of(LeakDetection.values()) + ")");
            }
            this.leakDetection = detection;
            return this;
        }

        /**
         * Sets the time source for the metadata TTL, in nanoseconds of a monotonic clock. Default
         * {@link System#nanoTime()}; tests pass a manual clock.
         *
         * @param nanoTicker the clock
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder ticker(LongSupplier nanoTicker) {
            if (nanoTicker == null) {
                throw new IllegalArgumentException("ticker: null (expected: a nanosecond clock such as System::nanoTime)");
            }
            this.ticker = nanoTicker;
            return this;
        }

        /**
         * Builds the cache. The cache takes ownership of the origin and the tiers.
         *
         * @return a new cache
         * @throws IllegalStateException if no tier was added, or this builder already built a cache
         */
        public TieredCache build() {
            if (tiers.isEmpty()) {
                // A cache without a tier would read every byte from the origin on every read: almost always a
                // forgotten .tier(...), and nothing a cache is for. Read the origin directly instead.
                throw new IllegalStateException("cache over " + origin.uri() + " has no tier (expected: at least one"
                        + " tier, e.g. .tier(MemoryTier.builder().capacity(bytes).build()))");
            }
            if (built) {
                throw new IllegalStateException("builder already built a cache over " + origin.uri()
                        + " (expected: one build per builder; origins and tiers belong to one cache)");
            }
            built = true;
            return new TieredCache(this);
        }
    }

    @Override
    public String toString() {
        List<String> names = new ArrayList<>();
        for (Tier tier : tiers) {
            names.add(tier.name());
        }
        return "TieredCache[" + originUri + ", tiers=" + names + ", pageSize=" + pageSize + "]";
    }
}
