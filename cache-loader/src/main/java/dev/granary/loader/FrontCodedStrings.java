// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * An immutable list of strings stored as front-coded UTF-8 in a few large byte arrays: what lets a dataset of millions
 * of object keys cost a few bytes of heap per key rather than a {@code String} each (about 60–100 bytes).
 *
 * <h2>Layout</h2>
 * Strings are grouped in blocks of {@value #BLOCK} in list order. The first string of a block is stored whole
 * ({@code varint length, bytes}); each later one as {@code varint shared, varint suffixLength, suffix bytes}, where
 * {@code shared} is the length of the prefix it has in common with the string before it. Sorted object keys share
 * long prefixes ({@code train/n01440764/n01440764_}), so most of a key is never stored. {@code blockStart[b]} is where
 * block {@code b} starts: chunk index in the high 32 bits, offset in the low ones. Chunks are {@value #CHUNK} bytes (a
 * block never straddles two, a block longer than a chunk gets a chunk of its own), so the list is not limited to the
 * 2 GiB of one array. {@link #get} decodes at most {@value #BLOCK} strings: a few hundred nanoseconds.
 *
 * <p>Any order is accepted (a list in another order shares shorter prefixes); {@link Builder#sorted()} tells whether
 * the strings came in strictly ascending order of their UTF-8 bytes.
 *
 * <p>Thread safety: immutable once built (final fields; the arrays are never written after {@link Builder#build});
 * {@link #get} may be called from any thread. The builder is not thread-safe.
 */
final class FrontCodedStrings {

    static final int BLOCK = 16;
    private static final int BLOCK_SHIFT = 4;
    static final int CHUNK = 1 << 22;

    private final byte[][] chunks;
    private final long[] blockStart;
    private final int size;
    private final int maxLength;

    private FrontCodedStrings(byte[][] chunks, long[] blockStart, int size, int maxLength) {
        this.chunks = chunks;
        this.blockStart = blockStart;
        this.size = size;
        this.maxLength = maxLength;
    }

    /** {@return the number of strings} */
    int size() {
        return size;
    }

    /**
     * {@return string {@code index}}
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= index < size()}
     */
    String get(int index) {
        Objects.checkIndex(index, size);
        long start = blockStart[index >>> BLOCK_SHIFT];
        byte[] chunk = chunks[(int) (start >>> 32)];
        // First the length, so that the buffer is the string's own size (one long key elsewhere in the list must
        // not make every get allocate its length); then the bytes, each write clipped to that length: a byte of the
        // string is the last one written at its position, and writes past its end cannot be it.
        int[] at = {(int) start};
        int length = readVarint(chunk, at);
        at[0] += length;
        for (int i = index & (BLOCK - 1); i > 0; i--) {
            int shared = readVarint(chunk, at);
            int suffix = readVarint(chunk, at);
            at[0] += suffix;
            length = shared + suffix;
        }
        byte[] key = new byte[length];
        at[0] = (int) start;
        int first = readVarint(chunk, at);
        System.arraycopy(chunk, at[0], key, 0, Math.min(first, length));
        at[0] += first;
        for (int i = index & (BLOCK - 1); i > 0; i--) {
            int shared = readVarint(chunk, at);
            int suffix = readVarint(chunk, at);
            if (shared < length) {
                System.arraycopy(chunk, at[0], key, shared, Math.min(suffix, length - shared));
            }
            at[0] += suffix;
        }
        return new String(key, StandardCharsets.UTF_8);
    }

    /** Decodes string {@code index} into {@code out} (at least {@link #maxLength()} long); returns its length. */
    int decode(int index, byte[] out) {
        Objects.checkIndex(index, size);
        long start = blockStart[index >>> BLOCK_SHIFT];
        byte[] chunk = chunks[(int) (start >>> 32)];
        int[] at = {(int) start};
        int length = readVarint(chunk, at);
        System.arraycopy(chunk, at[0], out, 0, length);
        at[0] += length;
        for (int i = index & (BLOCK - 1); i > 0; i--) {
            int shared = readVarint(chunk, at);
            int suffix = readVarint(chunk, at);
            System.arraycopy(chunk, at[0], out, shared, suffix);
            at[0] += suffix;
            length = shared + suffix;
        }
        return length;
    }

    /** Receives the strings of {@link #forEach}. */
    interface Visitor {
        void visit(int index, String s);
    }

    /** Decodes every string in order, each from the one before it: linear in the bytes, unlike {@link #get} each. */
    void forEach(Visitor visitor) {
        byte[] key = new byte[maxLength];
        int[] at = new int[1];
        for (int b = 0; b < blockStart.length; b++) {
            long start = blockStart[b];
            byte[] chunk = chunks[(int) (start >>> 32)];
            at[0] = (int) start;
            int length = readVarint(chunk, at);
            System.arraycopy(chunk, at[0], key, 0, length);
            at[0] += length;
            int index = b << BLOCK_SHIFT;
            visitor.visit(index, new String(key, 0, length, StandardCharsets.UTF_8));
            for (int i = index + 1; i < Math.min(size, index + BLOCK); i++) {
                int shared = readVarint(chunk, at);
                int suffix = readVarint(chunk, at);
                System.arraycopy(chunk, at[0], key, shared, suffix);
                at[0] += suffix;
                visitor.visit(i, new String(key, 0, shared + suffix, StandardCharsets.UTF_8));
            }
        }
    }

    /** {@return the length in bytes of the longest string} */
    int maxLength() {
        return maxLength;
    }

    /** {@return the heap bytes of the arrays, for tests and {@code toString}} */
    long heapBytes() {
        long bytes = 16L + 8L * blockStart.length + 16L + 4L * chunks.length;
        for (byte[] chunk : chunks) {
            bytes += 16 + chunk.length;
        }
        return bytes;
    }

    /** Refuses a string that UTF-8 would not give back: one with an unpaired surrogate. */
    static void checkUnicode(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isSurrogate(c)) {
                if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                    continue;
                }
                throw new IllegalArgumentException("'" + s + "': an unpaired surrogate at index " + i
                        + " (expected: a valid Unicode string, which UTF-8 can hold)");
            }
        }
    }

    private static int readVarint(byte[] chunk, int[] at) {
        int p = at[0];
        int value = 0;
        for (int shift = 0; ; shift += 7) {
            byte b = chunk[p++];
            value |= (b & 0x7F) << shift;
            if (b >= 0) {
                at[0] = p;
                return value;
            }
        }
    }

    /**
     * Appends strings in list order. Memory while building: the encoded bytes, in chunks, plus one {@code long} per
     * block and the previous string; nothing per string.
     */
    static final class Builder {
        private byte[][] chunks = new byte[4][];
        private int chunkCount;
        private byte[] chunk = new byte[4096];
        private int position;
        private long[] blockStart = new long[64];
        private int size;
        private int maxLength;
        private byte[] previous = new byte[64];
        private int previousLength = -1;
        private boolean sorted = true;
        /** Where the current block was started, so that a block that would overflow its chunk can move. */
        private int blockPosition;

        /** Appends a string's UTF-8 bytes {@code [0, length)}; the array is not kept. */
        void add(byte[] utf8, int length) {
            if (previousLength >= 0
                    && sorted
                    && Arrays.compareUnsigned(previous, 0, previousLength, utf8, 0, length) >= 0) {
                sorted = false;
            }
            if ((size & (BLOCK - 1)) == 0) {
                startBlock(length + 5);
                writeVarint(length);
                write(utf8, 0, length);
            } else {
                int shared = Arrays.mismatch(previous, 0, previousLength, utf8, 0, length);
                if (shared < 0) {
                    shared = length; // equal strings
                }
                ensure(10 + length - shared);
                writeVarint(shared);
                writeVarint(length - shared);
                write(utf8, shared, length - shared);
            }
            if (previous.length < length) {
                previous = new byte[Math.max(length, previous.length * 2)];
            }
            System.arraycopy(utf8, 0, previous, 0, length);
            previousLength = length;
            maxLength = Math.max(maxLength, length);
            size++;
            if (size < 0) {
                throw new IllegalArgumentException(
                        "strings: more than " + Integer.MAX_VALUE + " (expected: fewer than 2^31)");
            }
        }

        /**
         * Appends a string.
         *
         * @throws IllegalArgumentException if it has an unpaired surrogate, which UTF-8 cannot carry (it would come
         *                                  back as another string)
         */
        void add(String s) {
            checkUnicode(s);
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            add(utf8, utf8.length);
        }

        /** {@return whether every string so far was greater than the one before it, in unsigned byte order} */
        boolean sorted() {
            return sorted;
        }

        int size() {
            return size;
        }

        FrontCodedStrings build() {
            finishChunk();
            byte[][] all = Arrays.copyOf(chunks, chunkCount);
            long[] starts = Arrays.copyOf(blockStart, (size + BLOCK - 1) >>> BLOCK_SHIFT);
            chunks = null;
            blockStart = null;
            return new FrontCodedStrings(all, starts, size, maxLength);
        }

        /** Starts a block: in this chunk if its first string fits a chunk's size, else in a new chunk. */
        private void startBlock(int firstBytes) {
            if (position > 0 && (long) position + firstBytes > CHUNK) {
                finishChunk();
                chunk = new byte[Math.max(CHUNK, firstBytes)];
                position = 0;
            }
            blockPosition = position;
            int block = size >>> BLOCK_SHIFT;
            if (block == blockStart.length) {
                blockStart = Arrays.copyOf(blockStart, blockStart.length + (blockStart.length >> 1));
            }
            blockStart[block] = ((long) chunkCount << 32) | position;
            ensure(firstBytes);
        }

        /**
         * Makes room for {@code n} more bytes in this chunk: grows it up to {@link #CHUNK} (more if the block alone is
         * larger); a full chunk gives its block to a new one, so that a block stays in one chunk.
         */
        private void ensure(int n) {
            if (position + n <= chunk.length) {
                return;
            }
            if (position + n <= CHUNK || blockPosition == 0) {
                long wanted = Math.max((long) position + n, Math.min(CHUNK, (long) chunk.length * 2));
                if (wanted > Integer.MAX_VALUE - 8) {
                    throw new IllegalArgumentException("a block of " + BLOCK + " strings: " + wanted
                            + " bytes (expected: strings of less than 128 MiB)");
                }
                chunk = Arrays.copyOf(chunk, (int) wanted);
                return;
            }
            // The chunk is full: move the block begun in it to a new chunk.
            int moved = position - blockPosition;
            byte[] next = new byte[Math.max(CHUNK, moved + n)];
            System.arraycopy(chunk, blockPosition, next, 0, moved);
            position = blockPosition;
            finishChunk();
            chunk = next;
            position = moved;
            blockPosition = 0;
            blockStart[size >>> BLOCK_SHIFT] = (long) chunkCount << 32;
        }

        private void finishChunk() {
            if (chunkCount == chunks.length) {
                chunks = Arrays.copyOf(chunks, chunks.length * 2);
            }
            chunks[chunkCount++] = position == chunk.length ? chunk : Arrays.copyOf(chunk, position);
        }

        private void writeVarint(int value) {
            while ((value & ~0x7F) != 0) {
                chunk[position++] = (byte) ((value & 0x7F) | 0x80);
                value >>>= 7;
            }
            chunk[position++] = (byte) value;
        }

        private void write(byte[] bytes, int from, int length) {
            System.arraycopy(bytes, from, chunk, position, length);
            position += length;
        }
    }
}
