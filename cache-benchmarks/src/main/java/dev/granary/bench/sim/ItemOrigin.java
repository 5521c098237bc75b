// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * An in-process origin of {@code count} objects of {@code size} bytes each, keys {@code item-00000000} upwards (fixed
 * width, so every record header on disk has the same length), one constant version; byte {@code i} of item
 * {@code id} is {@link #expected(int, int)}. It counts its data reads, so a caller can tell a hit (no origin read)
 * from a miss. Thread-safe; nothing to release.
 */
final class ItemOrigin implements Origin {

    static final String VERSION = "v1";
    private static final URI URI_ = URI.create("sim://items/");

    private final int count;
    private final int size;
    private final AtomicLong reads = new AtomicLong();

    /**
     * @param count the objects, ids {@code 0 .. count - 1}
     * @param size  the bytes of each, {@code >= 1}
     * @throws IllegalArgumentException if {@code count} is negative or {@code size} below 1
     */
    ItemOrigin(int count, int size) {
        Config.require(count >= 0 && count <= 100_000_000, "objects: " + count + " (expected: 0..100000000)");
        Config.require(size >= 1, "object size: " + size + " (expected: >= 1 byte)");
        this.count = count;
        this.size = size;
    }

    /** {@return the key of item {@code id}} */
    static String key(int id) {
        return String.format("item-%08d", id);
    }

    /** {@return byte {@code i} of item {@code id}: differs between neighbouring items and positions} */
    static byte expected(int id, int i) {
        return (byte) (id * 0x9E3779B1 + i * 31 + (id >>> 8));
    }

    /** {@return the data reads served so far} */
    long reads() {
        return reads.get();
    }

    int size() {
        return size;
    }

    private int id(String key) throws NoSuchObjectException {
        if (key.length() == 13 && key.startsWith("item-")) {
            try {
                int id = Integer.parseInt(key, 5, 13, 10);
                if (id >= 0 && id < count) {
                    return id;
                }
            } catch (NumberFormatException e) {
                // not one of ours: below
            }
        }
        throw new NoSuchObjectException(URI_, key);
    }

    @Override
    public URI uri() {
        return URI_;
    }

    @Override
    public ObjectInfo stat(String key) throws IOException {
        id(key);
        return new ObjectInfo(key, size, VERSION);
    }

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        int id = id(object.key());
        if (!VERSION.equals(object.version())) {
            throw new ObjectChangedException(URI_, object.key(), object.version(), VERSION);
        }
        if (position < 0 || position + dst.byteSize() > size) {
            throw new EOFException("range [" + position + ", " + (position + dst.byteSize()) + ") of '" + object.key()
                    + "': past the end (expected: within " + size + " bytes)");
        }
        reads.incrementAndGet();
        for (int i = 0; i < dst.byteSize(); i++) {
            dst.set(ValueLayout.JAVA_BYTE, i, expected(id, (int) position + i));
        }
    }

    @Override
    public Stream<ObjectInfo> list(String prefix) {
        return IntStream.range(0, count)
                .mapToObj(ItemOrigin::key)
                .filter(k -> k.startsWith(prefix))
                .map(k -> new ObjectInfo(k, size, VERSION));
    }

    @Override
    public void close() {}
}
