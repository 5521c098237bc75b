// SPDX-License-Identifier: Apache-2.0
package dev.granary.parquet;

import dev.hardwood.InputFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * A Parquet file as Hardwood sees it, made of the byte ranges Granary already read through its cache: the file's tail
 * (footer, its length and {@code PAR1}) and, for decoding, one row group's extent. The leading magic, which Hardwood
 * checks on open, is served as {@code PAR1} unless the tail covers the whole file (then the real bytes, checked); any
 * other range is refused with an exception naming it, so Hardwood never reads bytes Granary did not fetch, pin to the
 * indexed version and count.
 *
 * <p>Immutable once made and safe for concurrent use: every read copies into a buffer of its own (Hardwood owns the
 * buffers it is handed, and may need them writable or array-backed).
 */
final class RangeInputFile implements InputFile {

    static final byte[] MAGIC = "PAR1".getBytes(StandardCharsets.US_ASCII);

    private final String name;
    private final long size;
    private final long tailStart;
    private final byte[] tail;
    private final long extentStart;
    private final ByteBuffer extent;

    /**
     * @param name        the file's key, for messages
     * @param size        the file's size
     * @param tail        the file's last {@code tail.length} bytes
     * @param extentStart where {@code extent} starts in the file (ignored without one)
     * @param extent      a range of the file from its position to its limit (not moved), or null
     */
    RangeInputFile(String name, long size, byte[] tail, long extentStart, ByteBuffer extent) {
        this.name = name;
        this.size = size;
        this.tailStart = size - tail.length;
        this.tail = tail;
        this.extentStart = extentStart;
        this.extent = extent;
    }

    @Override
    public void open() {
        // Nothing to acquire: the bytes are in memory already.
    }

    @Override
    public ByteBuffer readRange(long offset, int length) throws IOException {
        if (offset < 0 || length < 0 || offset > size - length) {
            throw new IndexOutOfBoundsException("Parquet file '" + name + "': range [" + offset + ", +" + length
                    + ") (expected: within its " + size + " bytes)");
        }
        ByteBuffer out = ByteBuffer.allocate(length);
        if (offset >= tailStart) {
            out.put(tail, (int) (offset - tailStart), length);
        } else if (extent != null && offset >= extentStart && offset + length <= extentStart + extent.remaining()) {
            out.put(0, extent, extent.position() + (int) (offset - extentStart), length);
        } else if (offset == 0 && length == MAGIC.length) {
            out.put(MAGIC);
        } else {
            throw new IOException("Parquet file '" + name + "': Hardwood asked for bytes [" + offset + ", +" + length
                    + ") outside the ranges read through the cache (the tail from " + tailStart
                    + (extent == null ? "" : ", the row group's extent [" + extentStart + ", +" + extent.remaining())
                    + ")");
        }
        return out.clear();
    }

    @Override
    public long length() {
        return size;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void close() {
        // Nothing held.
    }
}
