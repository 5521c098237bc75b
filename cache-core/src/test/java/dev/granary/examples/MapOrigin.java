// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.origin.support.Keys;
import dev.granary.origin.support.OriginLimits;
import dev.granary.spi.Origin;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Comparator;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * Objects held in memory: the smallest complete {@link Origin} (docs/extending.md shows it).
 *
 * <p>Thread-safe: every method may run concurrently with {@link #put} and {@link #delete}. Closing it only makes
 * later calls fail with {@link IllegalStateException}.
 */
public final class MapOrigin implements Origin {

    /** One immutable state of an object; a put makes a new one, with a new version. */
    private record Stored(byte[] bytes, String version) {}

    // Origin.list promises the order of the keys' UTF-8 bytes (S3's); String.compareTo is UTF-16 order.
    private static final Comparator<String> UTF8_ORDER =
            (a, b) -> Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));

    private final URI uri;
    private final ConcurrentSkipListMap<String, Stored> objects = new ConcurrentSkipListMap<>(UTF8_ORDER);
    private final AtomicLong versions = new AtomicLong();
    private volatile boolean closed;

    /**
     * @param name the origin's name, part of its URI ({@code mem://name/}) and so of every cached page's identity
     */
    public MapOrigin(String name) {
        this.uri = URI.create("mem://" + name + "/");
    }

    /** Creates or replaces an object; a replacement gets a new version. */
    public void put(String key, byte[] bytes) {
        String version = Long.toString(versions.incrementAndGet());
        objects.put(Keys.requireAddressable(key), new Stored(bytes.clone(), version));
    }

    /** Deletes an object, if there is one. */
    public void delete(String key) {
        objects.remove(key);
    }

    @Override
    public URI uri() {
        return uri;
    }

    @Override
    public ObjectInfo stat(String key) throws IOException {
        checkOpen();
        Stored stored = objects.get(Keys.requireAddressable(key));
        if (stored == null) {
            throw new NoSuchObjectException(uri, key);
        }
        return new ObjectInfo(key, stored.bytes().length, stored.version());
    }

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        checkOpen();
        Stored stored = objects.get(object.key());
        if (stored == null) {
            throw new NoSuchObjectException(uri, object.key());
        }
        // Pinned: bytes of another version are never returned, even if the range would fit.
        if (!stored.version().equals(object.version())) {
            throw new ObjectChangedException(uri, object.key(), object.version(), stored.version());
        }
        OriginLimits.checkRead(uri, object, position, dst.byteSize()); // negative position, EOF
        MemorySegment.copy(MemorySegment.ofArray(stored.bytes()), position, dst, 0, dst.byteSize());
    }

    @Override
    public Stream<ObjectInfo> list(String prefix) {
        checkOpen();
        if (prefix == null) {
            throw new IllegalArgumentException("prefix: null (expected: a key prefix, possibly empty)");
        }
        // Keys with a given prefix are contiguous in UTF-8 order and start at the prefix itself; the view is lazy.
        return objects.tailMap(prefix).entrySet().stream()
                .takeWhile(e -> e.getKey().startsWith(prefix))
                .map(e -> new ObjectInfo(
                        e.getKey(), e.getValue().bytes().length, e.getValue().version()));
    }

    @Override
    public void close() {
        closed = true;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("origin " + uri + " is closed");
        }
    }
}
