// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.stream.IntStream;
import java.util.stream.Stream;

/**
 * An origin of {@code count} objects of {@code size} bytes each, computed rather than stored, so that warm-read
 * benchmarks do not depend on a disk and any byte read can be checked.
 *
 * <h2>Keys and bytes</h2>
 * Object {@code i} has the key {@code obj/000042} (zero-padded to at least six digits, so key order is index order)
 * and the version {@code "v1"}. Its bytes are 8-byte little-endian words: the word at position {@code 8w} is
 * {@link #word(int, long) word(i, w)}, a 64-bit mix of {@code i} and {@code w}, so byte {@code p} is
 * {@link #byteAt(int, long) byteAt(i, p)} and the same object always reads the same bytes.
 *
 * <h2>Thread safety and lifecycle</h2>
 * Immutable; every method may be called from any thread. Reads cost CPU only (about a memory-bandwidth-speed fill).
 * {@link #close()} does nothing.
 */
public final class SyntheticOrigin implements Origin {

    /** The version of every object. */
    public static final String VERSION = "v1";

    private static final String PREFIX = "obj/";
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final int count;
    private final int size;
    private final int digits;
    private final URI uri;

    private SyntheticOrigin(int count, int size) {
        this.count = count;
        this.size = size;
        this.digits = Math.max(6, Integer.toString(Math.max(0, count - 1)).length());
        this.uri = URI.create("synthetic://objects-" + count + "x" + size + "/");
    }

    /**
     * Creates the origin.
     *
     * @param count the number of objects, {@code >= 1}
     * @param size  the size of every object in bytes, {@code >= 0}
     * @return the origin
     * @throws IllegalArgumentException if either is out of range
     */
    public static SyntheticOrigin of(int count, int size) {
        if (count < 1) {
            throw new IllegalArgumentException("object count: " + count + " (expected: >= 1)");
        }
        if (size < 0) {
            throw new IllegalArgumentException("object size: " + size + " (expected: >= 0 bytes)");
        }
        return new SyntheticOrigin(count, size);
    }

    /** {@return the number of objects} */
    public int count() {
        return count;
    }

    /** {@return the size of every object, in bytes} */
    public int size() {
        return size;
    }

    /**
     * {@return the key of object {@code index}, e.g. {@code obj/000042}}
     *
     * @param index in {@code [0, count)}
     * @throws IllegalArgumentException if out of range
     */
    public String key(int index) {
        if (index < 0 || index >= count) {
            throw new IllegalArgumentException("object index: " + index + " (expected: 0.." + (count - 1) + ")");
        }
        String n = Integer.toString(index);
        return PREFIX + "0".repeat(Math.max(0, digits - n.length())) + n;
    }

    /** {@return every key, in index order (which is also key order)} */
    public String[] keys() {
        String[] keys = new String[count];
        for (int i = 0; i < count; i++) {
            keys[i] = key(i);
        }
        return keys;
    }

    /** {@return the 8-byte word at position {@code 8 * word} of object {@code index}} */
    public static long word(int index, long word) {
        // SplittableRandom's mix64 of a per-object, per-word counter: cheap and without visible structure.
        long z = (index * 0x9E3779B97F4A7C15L) ^ (word * 0xBF58476D1CE4E5B9L + 0x94D049BB133111EBL);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** {@return byte {@code position} of object {@code index}} */
    public static byte byteAt(int index, long position) {
        return (byte) (word(index, position >>> 3) >>> ((position & 7) << 3));
    }

    /**
     * Checks bytes that claim to be part of object {@code index}.
     *
     * @param index    the object
     * @param position the position of {@code bytes.position()} within the object
     * @param bytes    the bytes from its position to its limit; the position is not moved
     * @return the offset within {@code bytes} (from its position) of the first wrong byte, or {@code -1} if all match
     */
    public static long firstMismatch(int index, long position, ByteBuffer bytes) {
        ByteBuffer b = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int base = b.position();
        int n = b.remaining();
        int i = 0;
        while (i < n && ((position + i) & 7) != 0) {
            if (b.get(base + i) != byteAt(index, position + i)) {
                return i;
            }
            i++;
        }
        // Whole words at once; a differing word is narrowed down byte by byte below.
        for (; i + 8 <= n; i += 8) {
            if (b.getLong(base + i) != word(index, (position + i) >>> 3)) {
                break;
            }
        }
        for (; i < n; i++) {
            if (b.get(base + i) != byteAt(index, position + i)) {
                return i;
            }
        }
        return -1;
    }

    @Override
    public URI uri() {
        return uri;
    }

    @Override
    public ObjectInfo stat(String key) throws IOException {
        index(key);
        return new ObjectInfo(key, size, VERSION);
    }

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        String key = object.key();
        int index = index(key);
        if (!VERSION.equals(object.version())) {
            throw new ObjectChangedException(uri, key, object.version(), VERSION);
        }
        if (position < 0) {
            throw new IllegalArgumentException("position in '" + key + "': " + position + " (expected: >= 0)");
        }
        long length = dst.byteSize();
        if (position > size || length > size - position) {
            throw new EOFException("range [" + position + ", " + (position + length) + ") of '" + key + "' in " + uri
                    + ": past the end (expected: within the object's " + size + " bytes)");
        }
        fill(index, position, dst);
    }

    /** Writes bytes {@code [position, position + dst.byteSize())} of object {@code index} into {@code dst}. */
    static void fill(int index, long position, MemorySegment dst) {
        long n = dst.byteSize();
        long at = 0;
        // Unaligned head, byte by byte, up to a word boundary of the object.
        while (at < n && ((position + at) & 7) != 0) {
            dst.set(ValueLayout.JAVA_BYTE, at, byteAt(index, position + at));
            at++;
        }
        for (; at + 8 <= n; at += 8) {
            dst.set(WORD, at, word(index, (position + at) >>> 3));
        }
        for (; at < n; at++) {
            dst.set(ValueLayout.JAVA_BYTE, at, byteAt(index, position + at));
        }
    }

    @Override
    public Stream<ObjectInfo> list(String prefix) {
        if (prefix == null) {
            throw new IllegalArgumentException("prefix: null (expected: a key prefix, possibly empty)");
        }
        return IntStream.range(0, count)
                .mapToObj(this::key)
                .filter(k -> k.startsWith(prefix))
                .map(k -> new ObjectInfo(k, size, VERSION));
    }

    @Override
    public void close() {}

    @Override
    public String toString() {
        return "SyntheticOrigin[" + count + " x " + size + " bytes]";
    }

    /** Parses a key back to its index, or throws {@link NoSuchObjectException}. */
    private int index(String key) throws NoSuchObjectException {
        if (key == null || !key.startsWith(PREFIX) || key.length() != PREFIX.length() + digits) {
            throw new NoSuchObjectException(uri, String.valueOf(key));
        }
        int index = 0;
        for (int i = PREFIX.length(); i < key.length(); i++) {
            char c = key.charAt(i);
            if (c < '0' || c > '9') {
                throw new NoSuchObjectException(uri, key);
            }
            index = index * 10 + (c - '0');
        }
        if (index >= count) {
            throw new NoSuchObjectException(uri, key);
        }
        return index;
    }
}
