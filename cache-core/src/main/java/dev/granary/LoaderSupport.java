// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import java.io.EOFException;
import java.io.IOException;
import java.util.stream.Stream;

/**
 * The controls a data loader needs beyond {@link TieredCache}'s small facade: reads of byte extents cached as units of
 * their own (samples inside tar shards), reads pinned to one version of an object, listings the loader keeps itself,
 * and the {@link EpochDriver} by which a loader tells the cache its epochs. Applications that read objects do not
 * need it; Granary's {@code DataLoader}, {@code Dataset} and {@code WebDataset} use it, as may a third-party loader.
 * Obtained from {@link TieredCache#loaderSupport()}, like Caffeine's {@code cache.policy()}.
 *
 * <h2>Why extents</h2>
 * A random sample read inside a large shard must not be amplified into a page fetch: the unit of a miss is the
 * sample's own extent, one ranged origin read of exactly its bytes, cached as one unit. Reading page-sized pages of a
 * shard in shuffled order would move several times the bytes (docs/architecture.md). Extents and pages of one object
 * are cached independently, both keyed by the object's version, so neither is served once it changes; but an extent
 * no tier holds as a unit is served from the cache's pages of that version when tiers hold every page covering it —
 * what {@link TieredCache#prestage} staged — so a pre-staged dataset is read without the origin whatever unit the
 * loader reads it in (docs/decisions/0008-staged-pages-serve-extents.md). An extent larger than a tier can hold in
 * one piece (a memory slab, a disk segment) is served without being cached there.
 *
 * <p>Thread-safe: a stateless view of its cache; every method may be called from any thread. It is valid as long as
 * the cache is open.
 */
public final class LoaderSupport {

    private final TieredCache cache;

    LoaderSupport(TieredCache cache) {
        this.cache = cache;
    }

    /**
     * Reads a byte range of an object's current version and caches it as one unit of its own, not as pages. The
     * lease is a zero-copy view, except for an extent served from several cached pages (see the class comment), which
     * is assembled by one copy.
     *
     * @param key    the object key, relative to the origin's root
     * @param offset the first byte, {@code >= 0}
     * @param length the number of bytes, {@code >= 0}; {@code offset + length} must not exceed the object's size
     * @return a lease on the bytes; close it
     * @throws IllegalArgumentException if the key is invalid or {@code offset} or {@code length} is negative
     * @throws EOFException             if the range ends past the end of the object
     * @throws NoSuchObjectException    if the object does not exist
     * @throws ObjectChangedException   if the object kept changing while being read
     * @throws IOException              if the origin fails or does not answer within the read timeout
     * @throws IllegalStateException    if the cache is closed
     */
    public Lease readExtent(String key, long offset, int length) throws IOException {
        return cache.readExtent(key, offset, length);
    }

    /**
     * Reads a byte range of one known version of an object and caches it as one unit, without asking what the current
     * version is: for a reader that indexed an object once (a tar shard) and must read every later extent from that
     * same version, so that its offsets stay valid. Cached bytes of that version are served even if the object has
     * changed since; a miss reads the origin pinned to the version and fails with {@link ObjectChangedException} if
     * the origin no longer has it — never bytes of another version.
     *
     * @param object the object's key, size and version, as {@link TieredCache#stat} or {@link TieredCache#list}
     *               returned them
     * @param offset the first byte, {@code >= 0}
     * @param length the number of bytes, {@code >= 0}; {@code offset + length} must not exceed the object's size
     * @return a lease on the bytes; close it
     * @throws IllegalArgumentException if {@code object} is null or its key invalid, or the range is negative
     * @throws EOFException             if the range ends past the object's size
     * @throws ObjectChangedException   if a miss finds that the object no longer has this version
     * @throws IOException              if the origin fails or does not answer within the read timeout
     * @throws IllegalStateException    if the cache is closed
     */
    public Lease readExtent(ObjectInfo object, long offset, int length) throws IOException {
        return cache.pinnedExtent(object, offset, length, true);
    }

    /**
     * Reads a byte range of one known version of an object for a one-off use, without caching it: served from the
     * tiers if exactly this extent is cached, else read from the origin (pinned to the version, within the origin's
     * concurrency limit and the read timeout, concurrent identical reads coalesced) into memory of its own that no
     * tier keeps. For scans whose bytes will not be read again — such as read-ahead through a tar shard's headers —
     * and that must not take room from the samples.
     *
     * @param object the object's key, size and version, as {@link TieredCache#stat} or {@link TieredCache#list}
     *               returned them
     * @param offset the first byte, {@code >= 0}
     * @param length the number of bytes, {@code >= 0}; {@code offset + length} must not exceed the object's size
     * @return a lease on the bytes; close it
     * @throws IllegalArgumentException if {@code object} is null or its key invalid, or the range is negative
     * @throws EOFException             if the range ends past the object's size
     * @throws ObjectChangedException   if the origin no longer has this version
     * @throws IOException              if the origin fails or does not answer within the read timeout
     * @throws IllegalStateException    if the cache is closed
     */
    public Lease readExtentUncached(ObjectInfo object, long offset, int length) throws IOException {
        return cache.pinnedExtent(object, offset, length, false);
    }

    /**
     * Wraps bytes a loader derived itself from an object — a slice of a decompressed shard — in a lease, so that they
     * travel where cached bytes travel (samples, shard parts) and are counted among the open leases like them. The
     * lease holds no page and no tier memory: closing it only ends the count.
     *
     * @param key    the key of the object the bytes were derived from, for messages
     * @param offset where the bytes start in what was derived, for messages
     * @param bytes  the bytes, from the buffer's position to its limit; wrapped read-only, not copied
     * @return a lease on the bytes; close it
     * @throws IllegalArgumentException if the key or the buffer is null, or the offset negative
     * @throws IllegalStateException    if the cache is closed
     */
    public Lease wrap(String key, long offset, java.nio.ByteBuffer bytes) {
        if (key == null || bytes == null || offset < 0) {
            throw new IllegalArgumentException("wrap: key " + Checks.quote(key) + ", offset " + offset + ", bytes "
                    + bytes + " (expected: a key, an offset >= 0 and a buffer)");
        }
        return cache.wrap(key, offset, bytes.slice().asReadOnlyBuffer());
    }

    /**
     * Tells whether the cache's tiers hold an object's version in pages of the cache's page size — its first and its
     * last page, probed without counting a hit or miss and without touching the eviction policy: the mark of an object
     * {@link TieredCache#prestage} staged (or {@link TieredCache#read} read whole). A loader that reads such an object
     * in
     * parts of exactly the page size reads cached pages as they are (zero-copy views), where parts of another size
     * would be assembled from them by a copy. A hint, not a promise: pages may be evicted a moment later, and a page
     * between the first and the last may be missing (it is then read from the origin when needed).
     *
     * @param object the object's key, size and version
     * @return whether its first and last pages are held; {@code false} for an empty object
     * @throws IllegalArgumentException if {@code object} is null
     * @throws IllegalStateException    if the cache is closed
     */
    public boolean holdsPages(ObjectInfo object) {
        return cache.holdsPages(object);
    }

    /**
     * Writes an object whole through the origin (a shard's index file, for instance), replacing any object with that
     * key, and drops what the cache knew of the key — its version and every cached page and extent — so that the next
     * read sees the new bytes. Not counted in the origin stats' reads.
     *
     * @param key   the object key
     * @param bytes the object's bytes
     * @return the written object's key, size and new version
     * @throws IllegalArgumentException      if the key is invalid or {@code bytes} null
     * @throws UnsupportedOperationException if the origin cannot write objects
     * @throws IOException                   if the write fails
     * @throws IllegalStateException         if the cache is closed
     */
    public ObjectInfo writeObject(String key, byte[] bytes) throws IOException {
        return cache.writeObject(key, bytes);
    }

    /**
     * Lists the objects whose keys start with {@code prefix}, as {@link TieredCache#list(String)} does, but without
     * remembering their versions in the cache's metadata: for a loader that keeps the listing itself and reads every
     * object pinned to its listed version ({@link #readExtent(ObjectInfo, long, int)}), so that a listing of millions
     * of objects neither fills the cache's metadata (bounded by {@code metadataCapacity}, about 120 bytes of heap an
     * object and its version string) nor churns it. Counted as metadata requests like any listing. Close the stream.
     *
     * @param prefix a key prefix, possibly empty
     * @return the objects with their sizes and versions, lazily, in the origin's order (UTF-8 byte order of the keys)
     * @throws IllegalArgumentException if the prefix is null, absolute, or has a {@code ..} segment
     * @throws IOException              if the listing cannot be started; later failures surface as
     *                                  {@link java.io.UncheckedIOException} from the stream
     * @throws IllegalStateException    if the cache is closed
     */
    public Stream<ObjectInfo> list(String prefix) throws IOException {
        return cache.list(prefix, false);
    }

    /**
     * Returns a new handle by which a loader tells the cache when its epochs start and end, so that the tiers keep a
     * stable resident set and reach the hit-ratio ceiling under epoch-shuffled reads; see {@link EpochDriver}.
     *
     * @return a driver; close it when the loader is done
     * @throws IllegalStateException if the cache is closed
     */
    public EpochDriver driver() {
        return cache.newDriver();
    }

    /**
     * Starts a dry run of the cache under a loader's driver: a copy of what every tier holds and of the epoch clock,
     * to which the loader feeds the pages its coming epochs will read, learning which tier would serve each and which
     * the origin would — without reading anything and without changing the cache or its counters. See
     * {@link CacheSimulation}.
     *
     * @param driver the loader's own driver, from {@link #driver()} of this cache
     * @return a new simulation
     * @throws IllegalArgumentException if the driver is null
     * @throws IllegalStateException    if the cache or the driver is closed, or a tier offers no simulation
     */
    public CacheSimulation simulation(EpochDriver driver) {
        if (driver == null) {
            throw new IllegalArgumentException("driver: null (expected: the loader's EpochDriver from driver())");
        }
        return cache.simulation(driver);
    }

    @Override
    public String toString() {
        return "LoaderSupport[" + cache + "]";
    }
}
