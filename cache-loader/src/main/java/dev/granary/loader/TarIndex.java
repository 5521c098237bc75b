// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Lists the regular files of a tar shard — name, data offset, size — by reading its headers only, so that a WebDataset
 * can later fetch any sample with one ranged read. Stateless and thread-safe; each {@link #scan} call reads the shard
 * sequentially through the given {@link RangeReader} from the calling thread.
 *
 * <h2>What is read</h2>
 * The scan walks the archive header by header: it reads each 512-byte header block and, for metadata members only
 * (PAX extended headers {@code 'x'} and {@code 'g'}, GNU long names {@code 'L'}), their data, which it bounds to
 * {@value #MAX_METADATA_SIZE} bytes. Every other member's data — regular files included — is skipped by arithmetic
 * (data is padded to 512 bytes) and never read. The reader should therefore be cheap for small reads:
 * {@link WebDataset} backs it with the shard's large parts, read sequentially ({@link ShardParts}).
 *
 * <h2>Formats</h2>
 * <ul>
 *   <li>v7 (no magic): the 100-byte name.</li>
 *   <li>POSIX ustar (magic {@code "ustar\0"}): the 155-byte prefix, when not empty, joined to the name with
 *       {@code '/'}. GNU headers (magic {@code "ustar  \0"}) keep other fields there, so their prefix is ignored.</li>
 *   <li>GNU: long names ({@code 'L'}) replace the next header's name; long link names ({@code 'K'}) are skipped.</li>
 *   <li>PAX: per-file extended headers ({@code 'x'}) override the next header's name ({@code path}) and size
 *       ({@code size}); an empty value cancels the override, other keys are ignored. Global headers ({@code 'g'})
 *       are checked and otherwise ignored: a POSIX reader would apply their {@code path} and {@code size} to every
 *       later member, which no real writer asks for.</li>
 *   <li>Numeric fields in octal (leading spaces, NUL or space terminated, empty meaning 0) or GNU base-256 (high bit
 *       of the first byte set).</li>
 *   <li>Header checksums as the unsigned byte sum (POSIX) or the historic signed sum.</li>
 * </ul>
 * A name is PAX {@code path}, else the GNU long name, else the header's name (with its prefix); names are decoded as
 * UTF-8 (malformed bytes become U+FFFD) and lose any leading {@code "./"}.
 *
 * <h2>Members listed and skipped</h2>
 * Regular files — typeflag {@code '0'}, {@code '\0'} (a v7 file unless its name ends with {@code '/'}, which marks a
 * v7 directory) and {@code '7'} (contiguous file) — are listed in archive order. Hard and symbolic links, character
 * and block devices, directories and fifos ({@code '1'}–{@code '6'}) are skipped and carry no data, as in POSIX;
 * every other type (GNU dump directories, volume labels, multi-volume continuations, vendor types) is skipped with
 * its data. GNU sparse files (typeflag {@code 'S'}, or PAX {@code GNU.sparse.*} keys) are refused: their data is not
 * the file's bytes, so no offset could be returned for them.
 *
 * <h2>End of archive</h2>
 * A zero block (POSIX writes two; one is enough, and nothing after it is read), or the end of the shard exactly at a
 * header boundary.
 */
final class TarIndex {

    /** The tar block size: headers are one block, data is padded to a multiple of it. */
    static final int BLOCK = 512;

    /** The largest PAX extended header or GNU long name read, bounding the memory a hostile shard can claim. */
    static final int MAX_METADATA_SIZE = 1 << 20;

    // Header field offsets and lengths (POSIX.1-1988 ustar, with GNU's use of the same block).
    private static final int NAME = 0;
    private static final int NAME_LEN = 100;
    private static final int SIZE = 124;
    private static final int SIZE_LEN = 12;
    private static final int CHKSUM = 148;
    private static final int CHKSUM_LEN = 8;
    private static final int TYPEFLAG = 156;
    private static final int MAGIC = 257;
    private static final int PREFIX = 345;
    private static final int PREFIX_LEN = 155;

    private TarIndex() {}

    /**
     * Reads a range of a shard.
     *
     * <p>Implementations return a buffer whose {@linkplain ByteBuffer#remaining() remaining} bytes are exactly the
     * {@code length} bytes at {@code offset}; the scan reads them without moving the buffer's position and does not
     * keep the buffer after the next call.
     */
    @FunctionalInterface
    interface RangeReader {

        /**
         * Reads exactly {@code length} bytes of the shard at {@code offset}.
         *
         * @param offset the offset of the first byte, {@code >= 0}
         * @param length the number of bytes, {@code >= 1}
         * @return a buffer with exactly {@code length} bytes remaining
         * @throws EOFException if the shard ends before {@code offset + length}
         * @throws IOException  if the read fails
         */
        ByteBuffer read(long offset, int length) throws IOException;
    }

    /**
     * A regular file in a shard.
     *
     * @param name   its path as stored (PAX {@code path}, GNU long name or ustar prefix and name), without a leading
     *               {@code "./"}
     * @param offset the offset in the shard of the first byte of its data (not of its header)
     * @param size   its size in bytes
     */
    record Member(String name, long offset, long size) {

        /**
         * Checks the components.
         *
         * @throws NullPointerException     if {@code name} is null
         * @throws IllegalArgumentException if {@code offset} or {@code size} is negative
         */
        Member {
            Objects.requireNonNull(name, "name");
            if (offset < 0) {
                throw new IllegalArgumentException("member offset: " + offset + " (expected: >= 0)");
            }
            if (size < 0) {
                throw new IllegalArgumentException("member size: " + size + " (expected: >= 0)");
            }
        }
    }

    /**
     * Lists the regular files of a tar shard, in archive order (see the class comment for the formats and the member
     * types).
     *
     * @param shard     the shard's name, used in error messages
     * @param shardSize the shard's length in bytes
     * @param reader    reads ranges of the shard
     * @return the regular members, an unmodifiable list
     * @throws CorruptShardException    if the shard is damaged, truncated (including when {@code reader} throws an
     *                                  {@link EOFException} before {@code shardSize}) or uses a refused construct
     * @throws IOException              if {@code reader} fails
     * @throws IllegalArgumentException if {@code shardSize < 0}
     * @throws IllegalStateException    if {@code reader} returns a buffer of the wrong length
     * @throws NullPointerException     if {@code shard} or {@code reader} is null
     */
    static List<Member> scan(String shard, long shardSize, RangeReader reader) throws IOException {
        Objects.requireNonNull(shard, "shard");
        Objects.requireNonNull(reader, "reader");
        if (shardSize < 0) {
            throw new IllegalArgumentException("shard size: " + shardSize + " (expected: >= 0)");
        }
        return new Scan(shard, shardSize, reader).run();
    }

    /** One pass over one shard: the position, the current header and the metadata waiting for its member. */
    private static final class Scan {

        private final String shard;
        private final long shardSize;
        private final RangeReader reader;

        /** The current header block, copied out of the reader's buffer (one array per scan). */
        private final byte[] header = new byte[BLOCK];

        /** Offset of the current header. */
        private long pos;

        /**
         * Metadata for the next non-metadata header, reset once it is consumed: whether any is pending, the GNU long
         * name, the PAX path and the PAX size ({@code -1} when absent).
         */
        private boolean pending;

        private String longName;
        private String paxPath;
        private long paxSize = -1;

        Scan(String shard, long shardSize, RangeReader reader) {
            this.shard = shard;
            this.shardSize = shardSize;
            this.reader = reader;
        }

        List<Member> run() throws IOException {
            List<Member> members = new ArrayList<>();
            while (true) {
                if (pos == shardSize) {
                    checkNothingPending();
                    break;
                }
                if (shardSize - pos < BLOCK) {
                    throw corrupt("truncated: " + (shardSize - pos)
                            + " bytes left for a header (expected: 512 bytes, or the end of the shard at a header)");
                }
                readHeader();
                if (isZeroBlock()) {
                    checkNothingPending();
                    break;
                }
                checkChecksum();
                byte type = header[TYPEFLAG];
                long size = number("size", SIZE, SIZE_LEN);
                long dataOffset = pos + BLOCK;
                long next;
                switch (type) {
                    case 'x', 'g' -> {
                        String what = type == 'x' ? "PAX extended header" : "PAX global header";
                        next = checkData(what, dataOffset, size);
                        byte[] records = readMetadata(what, dataOffset, size);
                        parsePax(records, type == 'g');
                        pending |= type == 'x';
                    }
                    case 'L' -> {
                        next = checkData("GNU long name", dataOffset, size);
                        byte[] name = readMetadata("GNU long name", dataOffset, size);
                        longName = cString(name, 0, name.length);
                        pending = true;
                    }
                    case 'K' -> {
                        next = checkData("GNU long link name", dataOffset, size);
                        pending = true;
                    }
                    case 'S' ->
                        throw corrupt("GNU sparse member '" + withoutDotSlash(storedName())
                                + "' (expected: a regular file; sparse files are not supported)");
                    default -> {
                        String stored = storedName();
                        String name = withoutDotSlash(stored);
                        long memberSize = paxSize >= 0 ? paxSize : size;
                        pending = false;
                        longName = null;
                        paxPath = null;
                        paxSize = -1;
                        boolean v7Directory = type == 0 && stored.endsWith("/");
                        boolean regular = type == '0' || type == '7' || (type == 0 && !v7Directory);
                        boolean carriesData = !v7Directory && (type < '1' || type > '6');
                        next = carriesData ? checkData("member '" + name + "'", dataOffset, memberSize) : dataOffset;
                        if (regular) {
                            members.add(new Member(name, dataOffset, memberSize));
                        }
                    }
                }
                pos = next;
            }
            return List.copyOf(members);
        }

        private void readHeader() throws IOException {
            ByteBuffer buffer = read(pos, BLOCK, "header");
            buffer.get(buffer.position(), header, 0, BLOCK);
        }

        private ByteBuffer read(long offset, int length, String what) throws IOException {
            ByteBuffer buffer;
            try {
                buffer = reader.read(offset, length);
            } catch (EOFException e) {
                throw new CorruptShardException(
                        shard,
                        pos,
                        "truncated: the shard ends inside the " + what + " of " + length + " bytes at offset " + offset
                                + " (expected: a shard of " + shardSize + " bytes)",
                        e);
            }
            if (buffer == null || buffer.remaining() != length) {
                throw new IllegalStateException(
                        "reader returned " + (buffer == null ? "null" : buffer.remaining() + " bytes") + " for shard '"
                                + shard + "' at offset " + offset + " (expected: " + length
                                + " bytes)");
            }
            return buffer;
        }

        private byte[] readMetadata(String what, long offset, long size) throws IOException {
            if (size > MAX_METADATA_SIZE) {
                throw corrupt(what + " of " + size + " bytes (expected: <= " + MAX_METADATA_SIZE + " bytes)");
            }
            byte[] data = new byte[(int) size];
            if (size > 0) {
                ByteBuffer buffer = read(offset, (int) size, what);
                buffer.get(buffer.position(), data, 0, data.length);
            }
            return data;
        }

        /** Checks that {@code size} bytes of data and their padding fit in the shard; returns the next header. */
        private long checkData(String what, long dataOffset, long size) throws CorruptShardException {
            if (size > shardSize - dataOffset) {
                // Both terms are below 2^63, so their unsigned sum is exact.
                throw corrupt("truncated: " + what + " of " + size + " bytes at offset " + dataOffset + " ends at "
                        + Long.toUnsignedString(dataOffset + size) + " (expected: <= shard size " + shardSize + ")");
            }
            long next = dataOffset + ((size + BLOCK - 1) & -BLOCK);
            if (next > shardSize) {
                throw corrupt("truncated: the padding after " + what + " of " + size + " bytes at offset " + dataOffset
                        + " ends at " + next + " (expected: <= shard size " + shardSize + ")");
            }
            return next;
        }

        private void checkNothingPending() throws CorruptShardException {
            if (pending) {
                throw corrupt("the archive ends after a PAX extended header or GNU long name"
                        + " (expected: the header of the member it describes)");
            }
        }

        private boolean isZeroBlock() {
            for (byte b : header) {
                if (b != 0) {
                    return false;
                }
            }
            return true;
        }

        private void checkChecksum() throws CorruptShardException {
            long stored = number("header checksum", CHKSUM, CHKSUM_LEN);
            int unsigned = 0;
            int signed = 0;
            for (int i = 0; i < BLOCK; i++) {
                byte b = i >= CHKSUM && i < CHKSUM + CHKSUM_LEN ? (byte) ' ' : header[i];
                unsigned += b & 0xff;
                signed += b;
            }
            if (stored != unsigned && stored != signed) {
                throw corrupt("bad header checksum (stored 0" + Long.toOctalString(stored) + ", computed 0"
                        + Integer.toOctalString(unsigned) + ") (expected: a tar header)");
            }
        }

        /**
         * Parses a numeric header field: GNU base-256 if the first byte's high bit is set (bit 6 is then the sign),
         * else octal digits between optional spaces, ending at the first NUL; an empty field is 0.
         */
        private long number(String field, int off, int len) throws CorruptShardException {
            if ((header[off] & 0x80) != 0) {
                if ((header[off] & 0x40) != 0) {
                    throw corrupt(field + ": negative base-256 value (expected: >= 0)");
                }
                long value = header[off] & 0x3f;
                for (int i = off + 1; i < off + len; i++) {
                    if (value > Long.MAX_VALUE >>> 8) {
                        throw corrupt(field + ": base-256 value " + show(off, len) + " (expected: < 2^63)");
                    }
                    value = (value << 8) | (header[i] & 0xff);
                }
                return value;
            }
            int end = off;
            while (end < off + len && header[end] != 0) {
                end++;
            }
            int i = off;
            while (i < end && header[i] == ' ') {
                i++;
            }
            long value = 0;
            while (i < end && header[i] >= '0' && header[i] <= '7') {
                value = value << 3 | header[i] - '0'; // at most 12 digits: 36 bits, no overflow
                i++;
            }
            while (i < end && header[i] == ' ') {
                i++;
            }
            if (i != end) {
                throw corrupt(field + ": " + show(off, len) + " (expected: octal digits or a base-256 number)");
            }
            return value;
        }

        /** The header's own name: the ustar prefix and name, or the v7/GNU name. */
        private String headerName() {
            String name = cString(header, NAME, NAME_LEN);
            boolean posixUstar = header[MAGIC] == 'u'
                    && header[MAGIC + 1] == 's'
                    && header[MAGIC + 2] == 't'
                    && header[MAGIC + 3] == 'a'
                    && header[MAGIC + 4] == 'r'
                    && header[MAGIC + 5] == 0;
            if (posixUstar && header[PREFIX] != 0) {
                return cString(header, PREFIX, PREFIX_LEN) + '/' + name;
            }
            return name;
        }

        /** The current member's name as stored: PAX path, else GNU long name, else the header's name. */
        private String storedName() {
            return paxPath != null ? paxPath : longName != null ? longName : headerName();
        }

        /**
         * Parses PAX records {@code "LEN key=value\n"}, where LEN is the decimal length of the whole record including
         * LEN itself; NUL bytes may follow the last record. Applies {@code path} and {@code size} unless global.
         */
        private void parsePax(byte[] data, boolean global) throws CorruptShardException {
            int i = 0;
            while (i < data.length) {
                int start = i;
                if (data[i] == 0) {
                    while (i < data.length && data[i] == 0) {
                        i++;
                    }
                    if (i < data.length) {
                        throw corrupt(paxProblem(data, start, "NUL bytes before more records"));
                    }
                    break;
                }
                long length = 0;
                while (i < data.length && data[i] >= '0' && data[i] <= '9') {
                    if (length <= data.length) { // saturates above the header's size: no overflow
                        length = length * 10 + data[i] - '0';
                    }
                    i++;
                }
                if (i == start || i == data.length || data[i] != ' ') {
                    throw corrupt(paxProblem(data, start, "no length"));
                }
                if (length > data.length - start) {
                    throw corrupt(paxProblem(
                            data,
                            start,
                            "length " + length + " runs past the end of the header (" + (data.length - start)
                                    + " bytes left)"));
                }
                int end = start + (int) length;
                int keyStart = i + 1;
                if (end < keyStart + 3) { // at least one key byte, '=' and '\n'
                    throw corrupt(paxProblem(data, start, "length " + length + " too short"));
                }
                if (data[end - 1] != '\n') {
                    throw corrupt(paxProblem(data, start, "length " + length + " does not end at a newline"));
                }
                int eq = keyStart;
                while (eq < end - 1 && data[eq] != '=') {
                    eq++;
                }
                if (eq == keyStart || eq == end - 1) {
                    throw corrupt(paxProblem(data, start, "no key=value"));
                }
                if (!global) {
                    apply(
                            new String(data, keyStart, eq - keyStart, UTF_8),
                            new String(data, eq + 1, end - 1 - (eq + 1), UTF_8));
                }
                i = end;
            }
        }

        private void apply(String key, String value) throws CorruptShardException {
            switch (key) {
                case "path" -> paxPath = value.isEmpty() ? null : value;
                case "size" -> paxSize = value.isEmpty() ? -1 : paxSize(value);
                default -> {
                    if (key.startsWith("GNU.sparse.")) {
                        throw corrupt("PAX key " + key + " (expected: a regular file; sparse files are not supported)");
                    }
                }
            }
        }

        private long paxSize(String value) throws CorruptShardException {
            long size = 0;
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c < '0' || c > '9' || size > (Long.MAX_VALUE - (c - '0')) / 10) {
                    throw corrupt("PAX size: \"" + value + "\" (expected: a decimal number of bytes < 2^63)");
                }
                size = size * 10 + c - '0';
            }
            return size;
        }

        private String paxProblem(byte[] data, int at, String problem) {
            int end = Math.min(data.length, at + 40);
            return "bad PAX record at byte " + at + " of the extended header: " + problem + ", "
                    + escape(data, at, end - at) + (end < data.length ? "…" : "")
                    + " (expected: \"LENGTH key=value\\n\" records)";
        }

        private String show(int off, int len) {
            return escape(header, off, len);
        }

        private CorruptShardException corrupt(String problem) {
            return new CorruptShardException(shard, pos, problem);
        }
    }

    /** Removes leading {@code "./"} components: {@code tar -C dir .} stores {@code ./a/b.jpg} for {@code a/b.jpg}. */
    private static String withoutDotSlash(String name) {
        int start = 0;
        while (name.startsWith("./", start)) {
            start += 2;
        }
        return name.substring(start);
    }

    /** Decodes a NUL-terminated (or field-filling) UTF-8 string. */
    private static String cString(byte[] bytes, int off, int len) {
        int end = off;
        while (end < off + len && bytes[end] != 0) {
            end++;
        }
        return new String(bytes, off, end - off, UTF_8);
    }

    /** Quotes bytes for an error message: printable ASCII as is, the rest as {@code \xNN}. */
    private static String escape(byte[] bytes, int off, int len) {
        StringBuilder out = new StringBuilder(len + 2).append('"');
        for (int i = off; i < off + len; i++) {
            int b = bytes[i] & 0xff;
            if (b == '"' || b == '\\') {
                out.append('\\').append((char) b);
            } else if (b >= 0x20 && b < 0x7f) {
                out.append((char) b);
            } else {
                out.append(String.format("\\x%02x", b));
            }
        }
        return out.append('"').toString();
    }
}
