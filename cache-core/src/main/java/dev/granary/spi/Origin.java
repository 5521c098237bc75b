// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.stream.Stream;

/**
 * Where the bytes really live: an S3 bucket, a GCS bucket, a POSIX directory. The cache asks an origin only for what
 * no tier holds.
 *
 * <h2>Keys</h2>
 * Keys are relative to the origin's root ({@link #uri()}), use {@code /} as separator, and never start with
 * {@code /} or contain a {@code ..} segment (the cache checks this before calling; an origin may reject more, such as
 * a symbolic link leading out of a directory, with an {@link IllegalArgumentException}).
 *
 * <h2>Versions</h2>
 * Every object has a version string: the S3 ETag, the GCS generation, POSIX size+mtime+inode. A read is
 * <em>pinned</em> to the version it is given: if the object no longer has that version, the read fails with
 * {@link ObjectChangedException} rather than return bytes of another version.
 *
 * <h2>Errors</h2>
 * A missing object is {@link NoSuchObjectException}; a read past the end is {@link java.io.EOFException}; anything
 * else the origin cannot do is another {@link IOException} that names the origin and key. No method returns a
 * sentinel.
 *
 * <h2>Thread safety and blocking</h2>
 * Every method may be called concurrently from many threads. Methods block on I/O; the cache calls them from threads of
 * its own (data reads from a pool of at most {@link #maxConcurrency()} platform threads, metadata requests from virtual
 * threads), at most {@link #maxConcurrency()} data reads at a time, and an origin should not need its own thread pool.
 * An origin must respond to interruption or time out by itself: a read must never hang forever.
 *
 * <h2>Lifecycle</h2>
 * The cache built over an origin owns it and closes it when it is closed.
 */
public interface Origin extends AutoCloseable {

    /**
     * {@return the origin's root, e.g. {@code s3://bucket/prefix/} or {@code file:///mnt/data/}; part of every page's
     * identity}
     */
    URI uri();

    /**
     * Fetches an object's metadata.
     *
     * @param key the object key
     * @return the key, size and current version
     * @throws NoSuchObjectException if there is no such object
     * @throws IOException           if the origin cannot be asked
     */
    ObjectInfo stat(String key) throws IOException;

    /**
     * Reads {@code dst.byteSize()} bytes of one version of an object, starting at {@code position}, into {@code dst}.
     * All bytes come from that version or the call fails.
     *
     * @param object   the object and the version to read, as {@link #stat(String)} or {@link #list(String)} gave it
     * @param position the first byte to read, {@code >= 0}
     * @param dst      where the bytes go; entirely written on success
     * @throws ObjectChangedException if the object no longer has {@code object.version()}
     * @throws NoSuchObjectException  if the object no longer exists
     * @throws java.io.EOFException   if the object ends before {@code position + dst.byteSize()}
     * @throws IOException            if the read fails for another reason
     */
    void read(ObjectInfo object, long position, MemorySegment dst) throws IOException;

    /**
     * Lists the objects whose keys start with {@code prefix}, in ascending order of their keys' UTF-8 bytes (the order
     * of S3's ListObjectsV2), lazily: objects are fetched as the stream is consumed, in memory that does not grow with
     * the number of objects. Close the stream to release the listing's resources.
     *
     * @param prefix a key prefix, possibly empty; not a directory name (so {@code "train"} also matches
     *               {@code "training/x"})
     * @return the objects, each with its size and version
     * @throws IOException if the listing cannot be started; failures later surface as
     *                     {@link java.io.UncheckedIOException} from the stream
     */
    Stream<ObjectInfo> list(String prefix) throws IOException;

    /**
     * Writes an object whole, replacing any object with that key: readers see the old bytes or the new ones, never a
     * part of the new ones (a POSIX origin writes a temporary file and renames it; an object store's upload is atomic).
     * Granary writes little: a shard's index file ({@code WebDataset.writeIndex}). The default refuses, so an origin
     * that cannot write says so rather than fail half-way.
     *
     * @param key   the object key
     * @param bytes the object's bytes; not modified, and not kept after the call returns
     * @return the written object's key, size and new version
     * @throws UnsupportedOperationException if this origin cannot write objects (the default)
     * @throws IllegalArgumentException      if the key is one this origin cannot hold
     * @throws IOException                   if the write fails; the object then keeps its old bytes, or does not exist
     */
    default ObjectInfo write(String key, byte[] bytes) throws IOException {
        throw new UnsupportedOperationException("origin " + uri() + " ("
                + getClass().getSimpleName() + ") cannot"
                + " write objects, such as '" + key + "' (expected: an origin that implements Origin.write: POSIX,"
                + " S3 or GCS); write the object by other means");
    }

    /**
     * Checks that a key is one this origin could hold, without asking the store: the cache calls it where no request
     * would check the key otherwise (such as {@code invalidate}), so that every entry point accepts the same keys.
     * The cache has already refused empty, absolute and {@code ..} keys. The default accepts every such key.
     *
     * @param key the object key
     * @throws IllegalArgumentException naming the key if this origin would reject it in {@link #stat} or
     *                                  {@link #read}
     */
    default void checkKey(String key) {}

    /** {@return how many data reads the cache may have in flight against this origin at once} */
    default int maxConcurrency() {
        return 64;
    }

    /** {@return how many requests this origin retried on its own, for stats; 0 if it never retries} */
    default long retries() {
        return 0;
    }

    /** Releases the origin's resources (connections, file handles). Idempotent. */
    @Override
    void close() throws IOException;
}
