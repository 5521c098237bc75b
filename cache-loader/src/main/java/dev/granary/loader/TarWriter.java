// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Writes one tar archive as real tools read it: a 512-byte ustar header per member, data padded to 512 bytes, two
 * zero blocks at the end. A name that does not fit ustar's 100 bytes (or 155 + 100 through the prefix field) or is
 * not ASCII gets a PAX extended header ({@code path=}), as Python's {@code tarfile} writes one. Members are dated
 * 1970-01-01, owned by 0:0, mode 0644: the same input gives the same bytes.
 *
 * <p>{@link ShardWriter} writes WebDataset shards with it; use it directly for archives of your own. Not thread-safe.
 */
public final class TarWriter {

    private static final int BLOCK = 512;
    private final OutputStream out;
    private long position;
    private boolean finished;

    /** Writes into memory; {@link #finish()} returns the archive. */
    public TarWriter() {
        this(new ByteArrayOutputStream());
    }

    /**
     * Writes into a stream the caller owns (it is not closed).
     *
     * @param out where the archive goes
     * @throws IllegalArgumentException if null
     */
    public TarWriter(OutputStream out) {
        if (out == null) {
            throw new IllegalArgumentException("output: null (expected: an OutputStream)");
        }
        this.out = out;
    }

    /**
     * Appends a regular file.
     *
     * @param name the member's path, relative, '/'-separated
     * @param data its bytes
     * @return the offset of the member's data in the archive
     * @throws IllegalArgumentException if the name is empty, absolute or has a NUL, or data is null
     * @throws IllegalStateException    if the archive is finished
     * @throws UncheckedIOException     if the stream fails
     */
    public long add(String name, byte[] data) {
        if (data == null) {
            throw new IllegalArgumentException("data of '" + name + "': null (expected: the member's bytes)");
        }
        return add(name, data, '0');
    }

    /**
     * Appends a directory member (no data).
     *
     * @param name the directory's path, ending with '/'
     */
    public void addDirectory(String name) {
        add(name, new byte[0], '5');
    }

    /** {@return the bytes written so far} */
    public long size() {
        return position;
    }

    private long add(String name, byte[] data, char type) {
        if (finished) {
            throw new IllegalStateException("tar archive already finished (expected: members before finish())");
        }
        if (name == null || name.isEmpty() || name.startsWith("/") || name.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("member name: " + (name == null ? "null" : "'" + name + "'")
                    + " (expected: a relative path without NUL)");
        }
        byte[] header = new byte[BLOCK];
        if (!ustarName(header, name)) {
            writePax(name);
            byte[] shortName = ("PaxHeaders/" + Math.abs((long) name.hashCode())).getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(shortName, 0, header, 0, shortName.length); // readers use the PAX path instead
        }
        fill(header, data.length, type);
        write(header);
        long offset = position;
        write(data);
        pad(data.length);
        return offset;
    }

    /** Puts the name into the ustar name and prefix fields; {@code false} if it needs a PAX header instead. */
    private static boolean ustarName(byte[] header, String name) {
        byte[] path = name.getBytes(StandardCharsets.UTF_8);
        if (path.length != name.length()) {
            return false; // not ASCII: PAX carries UTF-8 names unambiguously
        }
        if (path.length <= 100) {
            System.arraycopy(path, 0, header, 0, path.length);
            return true;
        }
        int split = name.lastIndexOf('/', Math.min(155, name.length() - 1));
        if (split <= 0 || name.length() - split - 1 > 100) {
            return false;
        }
        System.arraycopy(path, 0, header, 345, split);
        System.arraycopy(path, split + 1, header, 0, path.length - split - 1);
        return true;
    }

    /** A PAX extended header ({@code 'x'}) whose {@code path} record names the next member. */
    private void writePax(String name) {
        byte[] value = ("path=" + name + "\n").getBytes(StandardCharsets.UTF_8);
        // "LEN path=…\n", where LEN counts its own digits and the space
        int length = value.length + 2;
        while (Integer.toString(length).length() + 1 + value.length != length) {
            length = Integer.toString(length).length() + 1 + value.length;
        }
        byte[] record = (length + " ").getBytes(StandardCharsets.US_ASCII);
        byte[] data = Arrays.copyOf(record, record.length + value.length);
        System.arraycopy(value, 0, data, record.length, value.length);
        byte[] header = new byte[BLOCK];
        byte[] paxName = "././@PaxHeader".getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(paxName, 0, header, 0, paxName.length);
        fill(header, data.length, 'x');
        write(header);
        write(data);
        pad(data.length);
    }

    private static void fill(byte[] header, long size, char type) {
        octal(header, 100, 8, 0644);
        octal(header, 108, 8, 0);
        octal(header, 116, 8, 0);
        octal(header, 124, 12, size);
        octal(header, 136, 12, 0);
        header[156] = (byte) type;
        System.arraycopy("ustar\0".getBytes(StandardCharsets.US_ASCII), 0, header, 257, 6);
        header[263] = '0';
        header[264] = '0';
        Arrays.fill(header, 148, 156, (byte) ' ');
        int sum = 0;
        for (byte b : header) {
            sum += b & 0xff;
        }
        octal(header, 148, 7, sum);
        header[155] = ' ';
    }

    /**
     * Ends the archive with its two zero blocks. Idempotent.
     *
     * @return the archive's bytes when writing into memory; an empty array when writing into a stream
     */
    public byte[] finish() {
        if (!finished) {
            write(new byte[2 * BLOCK]);
            finished = true;
        }
        return out instanceof ByteArrayOutputStream bytes ? bytes.toByteArray() : new byte[0];
    }

    private void pad(long length) {
        int pad = (int) ((BLOCK - length % BLOCK) % BLOCK);
        if (pad > 0) {
            write(new byte[pad]);
        }
    }

    private void write(byte[] bytes) {
        try {
            out.write(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException("writing a tar archive failed after " + position + " bytes", e);
        }
        position += bytes.length;
    }

    private static void octal(byte[] header, int offset, int length, long value) {
        String digits = Long.toOctalString(value);
        int width = length - 1; // NUL-terminated
        if (digits.length() > width) {
            throw new IllegalArgumentException("value " + value + " does not fit " + width + " octal digits of a tar"
                    + " header (expected: a member under 8 GiB)");
        }
        String padded = "0".repeat(width - digits.length()) + digits;
        System.arraycopy(padded.getBytes(StandardCharsets.US_ASCII), 0, header, offset, width);
        header[offset + width] = 0;
    }
}
