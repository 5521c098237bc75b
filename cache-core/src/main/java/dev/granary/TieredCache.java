// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.internal.ByteSizes;
import dev.granary.internal.ReadAccount;
import dev.granary.spi.Origin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.spi.TierSimulation;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.stream.Stream;

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
 * rather than copied, and kept by one tier only; see {@link Builder#tiering(Tiering)}). Which tier takes a page —
 * on a fill, a hit below the first tier, an eviction, a prestage, at close — is one rule, in {@code Placement}. Every
 * page is keyed by the object's version, learned from the origin and trusted for
 * {@link Builder#metadataTtl(Duration)}; origin reads are pinned to it, so one read never mixes two versions of an
 * object, and a changed object is never served from old pages.
 *
 * <h2>Thread safety</h2>
 * All methods may be called from any number of threads. Origin reads run on a pool of platform threads as large as the
 * origin's {@link Origin#maxConcurrency()}; a caller waits at most {@link Builder#readTimeout(Duration)} for them.
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
    /** The first tier's hints, or null: the fast path to an object's first page. */
    private final Tier.Hints hints;
    /** Where pages go: fills, copies up, demotion, prestage, carry-on-close, the dry run's rule. */
    private final Placement placement;

    private final int pageSize;
    private final long readTimeoutNanos;
    private final OriginFetcher fetcher;
    /** Concurrent misses on one page: one fill, on the fill threads. */
    private final PageFlights pageFlights;

    private final MetadataCache metadata;
    private final LeaseTracker leases;
    /** The loaders' epochs: while one runs, fills go to one tier only and hits are not promoted. */
    private final EpochClock epochs;

    private final LoaderSupport loaderSupport;
    private final boolean carryOnClose;
    private volatile boolean closed;

    private TieredCache(Builder b) {
        this.origin = b.origin;
        this.originUri = origin.uri();
        this.originId = originUri.toString();
        this.tiers = b.tiers.toArray(Tier[]::new);
        this.hints = tiers[0].hints().orElse(null);
        this.pageSize = b.pageSize;
        this.readTimeoutNanos = b.readTimeout.toNanos();
        this.fetcher = new OriginFetcher(origin);
        this.pageFlights = new PageFlights(originId, new FillThreads(origin.maxConcurrency()));
        this.metadata =
                new MetadataCache(fetcher, b.metadataTtl.toNanos(), b.metadataCapacity, b.ticker, readTimeoutNanos);
        this.leases = new LeaseTracker(b.leakDetection);
        this.epochs = new EpochClock(tiers, originUri);
        this.placement = new Placement(tiers, b.tiering, epochs);
        this.loaderSupport = new LoaderSupport(this);
        this.carryOnClose = b.carryOnClose;
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
                return extent(info, offset, length, k -> fill(info, k));
            } catch (ObjectChangedException e) {
                changed(info, e, attempt);
            }
        }
    }

    /** {@link LoaderSupport#wrap}. */
    Lease wrap(String key, long offset, ByteBuffer readOnly) {
        ensureOpen();
        return Lease.ofCopy(key, offset, readOnly, leases);
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
        PageFlights.Filler filler = keep ? k -> fill(object, k) : k -> load(object, new Placement.HeapPage(k));
        try {
            return extent(object, offset, length, filler);
        } catch (ObjectChangedException e) {
            metadata.forget(key); // other readers learn the new version; this one keeps failing on the old
            throw e;
        }
    }

    // ------------------------------------------------------------------ extents, and extents served from pages

    /**
     * An extent: the unit itself if a tier holds it; else assembled from the cache's pages of that version if every
     * one of them is held (what {@link #prestage} staged, or what {@link #read} cached); else read from the origin by
     * {@code filler} as one unit. See docs/decisions/0008-staged-pages-serve-extents.md.
     */
    private Lease extent(ObjectInfo info, long offset, int length, PageFlights.Filler filler) throws IOException {
        PageKey unit = extentKey(info, offset, length);
        Page page = lookup(unit);
        if (page == null) {
            Lease staged = fromPages(info, offset, length);
            if (staged != null) {
                return staged;
            }
            page = page(info, unit, tiers.length, filler); // looked up already: straight to the fill
        }
        return Lease.ofPage(info.key(), offset, page, 0, length, leases);
    }

    /**
     * Serves an extent from the pages that hold it, or returns null if a tier lacks one of them (then nothing was
     * counted, and the caller reads the extent as one unit). Every page is probed first without being counted or
     * touched, so a cold extent costs one quiet look per tier and counts no page miss; once all are there, each is
     * looked up for real — a hit counted in its tier and in the reader's account, and stamped for the eviction
     * policy, as any hit. An extent inside one page is a zero-copy view of it; one that spans pages is assembled by
     * one copy into a buffer of its own, as {@link #read(String, long, long)} assembles ranges. A page gone between
     * probe and lookup (evicted), or found damaged under its mapping while copied, makes the whole extent a miss:
     * never partial or wrong bytes.
     */
    private Lease fromPages(ObjectInfo info, long offset, int length) {
        long first = offset / pageSize;
        long last = (offset + length - 1) / pageSize;
        for (long i = first; i <= last; i++) {
            if (!held(pageKey(info, i))) {
                return null;
            }
        }
        if (first == last) {
            Page page = lookup(pageKey(info, first));
            return page == null
                    ? null
                    : Lease.ofPage(info.key(), offset, page, (int) (offset - page.offset()), length, leases);
        }
        byte[] bytes = new byte[length];
        MemorySegment dst = MemorySegment.ofArray(bytes);
        for (long i = first; i <= last; i++) {
            Page page = lookup(pageKey(info, i));
            if (page == null) {
                return null;
            }
            try {
                long from = Math.max(offset, page.offset());
                long to = Math.min(offset + length, page.offset() + page.length());
                MemorySegment.copy(page.segment(), from - page.offset(), dst, from - offset, to - from);
            } catch (InternalError e) {
                // A mapped page whose file was truncated or whose device failed after its tier checked it (the JVM
                // reports the SIGBUS as an InternalError): drop it, and read the extent from the origin instead.
                for (Tier tier : tiers) {
                    tier.remove(page.key());
                }
                return null;
            } finally {
                page.release();
            }
        }
        return Lease.ofCopy(info.key(), offset, ByteBuffer.wrap(bytes).asReadOnlyBuffer(), leases);
    }

    /** {@link LoaderSupport#holdsPages}: the object's first and last pages, probed quietly. */
    boolean holdsPages(ObjectInfo info) {
        ensureOpen();
        if (info == null) {
            throw new IllegalArgumentException("object: null (expected: an ObjectInfo from stat() or list())");
        }
        long pages = (info.size() + pageSize - 1) / pageSize;
        return pages > 0 && held(pageKey(info, 0)) && held(pageKey(info, pages - 1));
    }

    /** {@return whether some tier holds the page}: neither counted, nor promoted, nor told to the eviction policy */
    private boolean held(PageKey key) {
        for (Tier tier : tiers) {
            Page page = tier.peek(key);
            if (page != null) {
                page.release();
                return true;
            }
        }
        return false;
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
            List<TierSimulation> sims = new ArrayList<>(tiers.length);
            for (Tier tier : tiers) {
                sims.add(tier.simulation().orElse(null));
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
    public Stream<ObjectInfo> list(String prefix) throws IOException {
        return list(prefix, true);
    }

    /** {@link #list(String)}, remembering the versions listed or not ({@link LoaderSupport#list(String)}). */
    Stream<ObjectInfo> list(String prefix, boolean remember) throws IOException {
        ensureOpen();
        if (prefix == null) {
            throw new IllegalArgumentException("prefix: null (expected: a key prefix, possibly empty)");
        }
        if (!prefix.isEmpty()) {
            Checks.key(prefix);
        }
        Stream<ObjectInfo> listed = fetcher.list(prefix);
        return remember ? listed.peek(metadata::observe) : listed;
    }

    /**
     * Pulls every object under a prefix into the staging tiers, so that later reads find them there: the operator's
     * pre-stage before a training job (the {@code granary prestage} command runs it). The staging tiers are every tier
     * below the first when there are several (a disk tier under memory: staging a dataset through memory would only
     * churn it), else the only one. Pages are the cache's own ({@link Builder#pageSize(int)}), keyed by the version
     * the listing reports: what {@link #read(String)} looks up, and what a loader's extents are served from when no
     * tier holds them as units ({@link LoaderSupport}) — so a disk tier staged here and reopened by a later cache with
     * the same page size serves whole objects, {@code Dataset.ofObjects} samples, and a WebDataset's shard parts,
     * samples and indexes without an origin data read. A WebDataset is staged by its prefix: the shards whole, and
     * their {@code .gidx} index files beside them.
     *
     * <ul>
     *   <li><b>Lazy and bounded:</b> the prefix is listed lazily, page by page of the origin's listing, while objects
     *       are staged; memory stays bounded by the origin's concurrency limit in pages, whatever the dataset's size.
     *       A second listing that only counts runs beside it, so {@link Progress#objectsTotal()} and
     *       {@link Progress#bytesTotal()} become known early (one more listing: a LIST request per 1 000 objects on
     *       S3).</li>
     *   <li><b>Parallel:</b> pages are fetched concurrently, at most {@link dev.granary.spi.Origin#maxConcurrency()}
     *       at a time, through the same single-flight fetcher as reads (a page a reader is fetching is not fetched
     *       twice).</li>
     *   <li><b>Resumable:</b> a page a staging tier holds already is not fetched again, so a prestage run again after
     *       an interruption reads only what is missing ({@link PrestageResult#alreadyCached()}).</li>
     *   <li><b>Progress:</b> {@code listener} gets a {@link Progress} about every 200 ms and once at the end, always on
     *       the calling thread, never concurrently.</li>
     *   <li><b>Cancellable:</b> call {@link Progress#cancel()} (from the listener, or from any thread on a snapshot it
     *       kept), or interrupt the calling thread: no new page is started, pages in flight finish (each within the
     *       read timeout), and the result says {@link PrestageResult#cancelled()}; after an interrupt the thread's
     *       interrupt flag is set again.</li>
     *   <li><b>Room:</b> the staging tiers may replace what they held before, never what this prestage staged or
     *       found: once they are full of it, the prestage stops fetching and counts every object it reaches after
     *       that in {@link PrestageResult#notStaged()}, with its bytes, so a second run finds the first run's objects
     *       {@linkplain PrestageResult#alreadyCached() already cached} instead of fetching them again.</li>
     *   <li><b>Failures</b> of single objects (an object deleted since the listing, a page a failing medium refused,
     *       an origin error after its retries) do not stop the prestage: they are counted and named in
     *       {@link PrestageResult#failed()}.</li>
     * </ul>
     *
     * @param prefix   a key prefix, possibly empty (the whole origin)
     * @param listener receives progress; {@code p -> {}} for none
     * @return what was staged, found, and what failed
     * @throws IllegalArgumentException if the prefix is null, absolute or has a {@code ..} segment, lists no object,
     *                                  or the listener is null
     * @throws IOException              if the listing cannot be started (a missing bucket or directory)
     * @throws IllegalStateException    if the cache is closed
     * @throws RuntimeException         what the listener threw (the prestage is cancelled first)
     */
    public PrestageResult prestage(String prefix, Consumer<Progress> listener) throws IOException {
        ensureOpen();
        if (prefix == null) {
            throw new IllegalArgumentException("prefix: null (expected: a key prefix, possibly empty)");
        }
        if (!prefix.isEmpty()) {
            Checks.key(prefix);
        }
        checkListener(listener);
        Stream<ObjectInfo> listing = fetcher.list(prefix);
        Stream<ObjectInfo> counting;
        try {
            counting = fetcher.list(prefix);
        } catch (IOException | RuntimeException e) {
            listing.close();
            throw e;
        }
        try (listing) {
            Iterator<ObjectInfo> items = listing.iterator();
            if (!items.hasNext()) { // the first page of the listing: a typo in a prefix is not "0 objects staged"
                counting.close();
                throw new IllegalArgumentException("prefix '" + prefix + "': no object under it at " + originUri
                        + " (expected: a prefix that lists at least one object)");
            }
            Prestage run = new Prestage(
                    this,
                    stagingFrom(),
                    items,
                    () -> fetcher.list(prefix),
                    "listing of '" + prefix + "'",
                    -1,
                    listener,
                    prestageConcurrency(),
                    readTimeoutNanos);
            return run.run(counting);
        }
    }

    /**
     * Pulls the given objects into the staging tiers: {@link #prestage(String, java.util.function.Consumer)} for a
     * list of keys, each asked for its current version first (a metadata request unless the cache knows it).
     * {@link Progress#objectsTotal()} is the list's size from the start; {@link Progress#bytesTotal()} stays unknown.
     *
     * @param keys     object keys; read once, in order (copy a list that others change)
     * @param listener receives progress; {@code p -> {}} for none
     * @return what was staged, found, and what failed (a missing key is a failure, not an exception)
     * @throws IllegalArgumentException if the list or the listener is null, the list is empty, or a key is invalid
     * @throws IllegalStateException    if the cache is closed
     * @throws RuntimeException         what the listener threw (the prestage is cancelled first)
     */
    public PrestageResult prestage(List<String> keys, Consumer<Progress> listener) {
        ensureOpen();
        if (keys == null || keys.isEmpty()) {
            throw new IllegalArgumentException(
                    "keys: " + (keys == null ? "null" : "empty") + " (expected: a list of at least one object key)");
        }
        List<String> copy =
                List.copyOf(keys.stream().map(k -> k == null ? "" : k).toList());
        for (String key : copy) {
            Checks.key(key);
        }
        checkListener(listener);
        return new Prestage(
                        this,
                        stagingFrom(),
                        copy.iterator(),
                        copy::stream,
                        "keys",
                        copy.size(),
                        listener,
                        prestageConcurrency(),
                        readTimeoutNanos)
                .run(null);
    }

    private static void checkListener(Consumer<Progress> listener) {
        if (listener == null) {
            throw new IllegalArgumentException(
                    "progress listener: null (expected: a Consumer<Progress>, p -> {} for" + " none)");
        }
    }

    /** The first staging tier ({@link Placement#stagingFrom()}). */
    private int stagingFrom() {
        return placement.stagingFrom();
    }

    private int prestageConcurrency() {
        return Math.max(1, Math.min(origin.maxConcurrency(), 1024));
    }

    /** Starts a prestage's driver: only what the prestage touches from now on is protected ({@link EpochClock}). */
    void startStaging(EpochDriver driver) {
        epochs.startStaging(driver);
    }

    /** The staging tiers' medium failures, evictions and used bytes, summed: what a prestage compares. */
    record StagingCounts(long failures, long evictions, long usedBytes) {}

    StagingCounts stagingCounts(int from) {
        long failures = 0;
        long evictions = 0;
        long used = 0;
        for (int i = from; i < tiers.length; i++) {
            TierStats s = tiers[i].stats();
            failures += s.failures();
            evictions += s.evictions();
            used += s.usedBytes();
        }
        return new StagingCounts(failures, evictions, used);
    }

    /** {@return whether no staging tier has room for a page of {@code length} bytes more, by its own stats} */
    boolean stagingFull(int from, int length) {
        for (int i = from; i < tiers.length; i++) {
            TierStats s = tiers[i].stats();
            if (s.usedBytes() + length <= s.capacityBytes()) {
                return false;
            }
        }
        return true;
    }

    /**
     * {@return whether a staging tier (from {@code from} down) holds the page}; a page found is read once more as a
     * read would (the tier counts a hit and stamps it with the epoch clock), so a prestage's driver protects what it
     * found; a page not found is not counted as a miss
     */
    boolean findStaged(PageKey key, int from) {
        for (int i = from; i < tiers.length; i++) {
            Page page = tiers[i].peek(key);
            if (page != null) {
                page.release();
                Page touched = tiers[i].get(key);
                if (touched != null) {
                    touched.release();
                }
                return true;
            }
        }
        return false;
    }

    /** {@return whether a staging tier (from {@code from} down) holds the page}; neither counted nor promoted */
    boolean staged(PageKey key, int from) {
        for (int i = from; i < tiers.length; i++) {
            Page page = tiers[i].peek(key);
            if (page != null) {
                page.release();
                return true;
            }
        }
        return false;
    }

    String stagingTierNames(int from) {
        List<String> names = new ArrayList<>();
        for (int i = from; i < tiers.length; i++) {
            names.add("'" + tiers[i].name() + "'");
        }
        return String.join(", ", names);
    }

    /** Starts (or joins) the fill of a page into the staging tiers; the caller releases the flight's page. */
    PageFlights.Flight stageFetch(ObjectInfo info, PageKey key, int from) {
        ensureOpen();
        return pageFlights.fetch(
                key,
                k -> {
                    for (int i = from; i < tiers.length; i++) {
                        Page page = tiers[i].peek(k);
                        if (page != null) {
                            return page;
                        }
                    }
                    return null;
                },
                k -> placement.stage(k, from, page -> load(info, page)));
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

    /**
     * {@link LoaderSupport#writeObject}: the origin writes, then every cached page and version of the key is dropped.
     */
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
     * Closes the cache: stops origin reads in progress (their readers fail), carries the pages held only in memory into
     * the free room of a durable tier below (a disk tier), so that the next process on the same directory starts warm
     * (see {@link Builder#carryOnClose(boolean)}), and closes the tiers and the origin. Leases handed out before stay
     * valid until closed; if any are still open, a warning names them (all of them under {@link
     * LeakDetection#PARANOID},
     * the sampled ones otherwise). Idempotent.
     */
    @Override
    public void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        leases.warnIfOpen(originUri);
        epochs.cacheClosed();
        pageFlights.close();
        fetcher.close();
        if (carryOnClose) {
            placement.carryOnClose(originUri);
        }
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
                        throw new IOException(
                                "cannot read cached " + page + ": the cache file under it was damaged"
                                        + " (truncated or failing); the page is dropped and the next read fetches it"
                                        + " again",
                                e);
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
        PageFlights.Flight[] flights = new PageFlights.Flight[n];
        for (int i = 0; i < n; i++) {
            PageKey key = pageKey(info, first + i);
            pages[i] = lookup(key);
            if (pages[i] == null) {
                ReadAccount.missed();
                epochs.missed();
                flights[i] = pageFlights.fetch(key, this::recheck, k -> fill(info, k));
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
                    pages[i] = Deadlines.await(flights[i], deadline, describe(info, first + i));
                }
            }
            return pages;
        } catch (IOException | RuntimeException | Error e) {
            // Pages before the failed one are ours; from it on, flights are abandoned and looked-up pages released.
            for (int j = 0; j < n; j++) {
                if (j >= i && flights[j] != null) {
                    PageFlights.abandon(flights[j]);
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
            Page page = hints.touch(hint);
            if (page != null) {
                ReadAccount.hit(0);
                return page;
            }
        }
        PageKey key = pageKey(known.info, 0);
        if (tiers.length > 0) {
            Page page = tiers[0].get(key);
            if (page != null) {
                ReadAccount.hit(0);
                if (hints != null) {
                    known.hint = hints.hint(page);
                }
                return page;
            }
        }
        return page(known.info, key, 1);
    }

    /** A page, looked up from tier {@code fromTier} down, else filled from the origin. */
    private Page page(ObjectInfo info, PageKey key, int fromTier) throws IOException {
        return page(info, key, fromTier, k -> fill(info, k));
    }

    /** A page, looked up from tier {@code fromTier} down, else made by {@code filler} on a fill's thread. */
    private Page page(ObjectInfo info, PageKey key, int fromTier, PageFlights.Filler filler) throws IOException {
        Page page = lookup(key, fromTier, false);
        if (page != null) {
            return page;
        }
        ReadAccount.missed();
        epochs.missed();
        PageFlights.Flight flight = pageFlights.fetch(key, this::recheck, filler);
        try {
            return Deadlines.await(flight, deadline(), describe(info, key.offset() / pageSize));
        } catch (IOException | RuntimeException | Error e) {
            PageFlights.abandon(flight);
            throw e;
        }
    }

    /**
     * Looks a page up in the tiers, in order; a hit below the first tier is copied or moved up as
     * {@link Placement#promote} says.
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
                page = placement.promote(page, i);
                if (page == null) {
                    continue; // copying it up faulted: look further down, as for a miss
                }
                if (!quietly) {
                    ReadAccount.hit(i);
                }
                return page;
            }
        }
        return null;
    }

    /**
     * Fills a page from the origin, placed as {@link Placement#fill} says (a shared tier asked first; memory a tier
     * allocates, else the heap; then put into the tiers). Runs on a fill thread (FillThreads).
     */
    private Page fill(ObjectInfo info, PageKey key) throws IOException {
        return placement.fill(key, this::deadline, page -> load(info, page));
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

    PageKey pageKey(ObjectInfo info, long index) {
        long offset = index * pageSize;
        int length = (int) Math.min(pageSize, info.size() - offset);
        return new PageKey(originId, info.key(), info.version(), offset, length);
    }

    private Supplier<String> describe(ObjectInfo info, long index) {
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
        private boolean carryOnClose = true;
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
                    throw new IllegalArgumentException(
                            "tier: '" + tier.name() + "' added twice (expected: each" + " tier once)");
                }
            }
            tiers.add(tier);
            return this;
        }

        /**
         * Sets whether {@link TieredCache#close()} writes the pages held only in tiers that are not durable (memory)
         * into the free room of durable tiers below (disk), so that the next process on the same directory starts
         * warm. Under exclusive tiering, and while a {@code DataLoader} drives the cache, a page lives in one tier
         * only: without this, pages kept in memory are lost at exit. It never evicts from the durable tier; it costs
         * the time to write what memory alone held (logged at INFO when that takes a second or more, else at DEBUG).
         * A process killed without close keeps only what was already on disk. Default {@code true}.
         *
         * @param carry whether to carry memory-only pages to disk at close
         * @return this builder
         */
        public Builder carryOnClose(boolean carry) {
            this.carryOnClose = carry;
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
                throw new IllegalArgumentException(
                        "page size: " + bytes + " bytes (expected: " + ByteSizes.range(16, 1 << 30) + ")");
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
                throw new IllegalArgumentException(
                        "leak detection: null (expected: one of " + List.of(LeakDetection.values()) + ")");
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
                throw new IllegalArgumentException(
                        "ticker: null (expected: a nanosecond clock such as System::nanoTime)");
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
