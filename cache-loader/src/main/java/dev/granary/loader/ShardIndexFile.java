// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.ByteArrayOutputStream;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;

/**
 * The index file written beside a tar shard ({@code <shard>.gidx}): the shard's samples with their extents, fields
 * and the CRC32C of each extent, so that a {@link WebDataset} indexes the shard with one small read instead of a pass
 * over its headers. The layout, the versioning rule and the rules that bind an index to its shard are in
 * {@code docs/shard-index.md}; this class encodes and decodes it. Stateless and thread-safe; decoded indexes are
 * immutable.
 *
 * <h2>Layout (format version 1, little-endian)</h2>
 * <pre>
 * magic        8 bytes  "GIDX\r\n\u001a\n"
 * version      u32      1
 * flags        u32      0 (reserved)
 * shard size   u64
 * shard ver.   u16 length + UTF-8 (may be empty: unknown when written)
 * names        u32 count, then per name: u16 length + UTF-8
 * samples      u32 count, then per sample:
 *                u16 key length + UTF-8 key, u64 extent start, u64 extent end, u32 CRC32C of the extent's bytes,
 *                u16 field count, then per field: u32 name id, u64 data offset in the shard, u64 size
 * CRC32C       u32 of every byte before it
 * </pre>
 */
final class ShardIndexFile {

    /** The suffix of an index file: {@code shards/000001.tar} → {@code shards/000001.tar.gidx}. */
    static final String SUFFIX = ".gidx";

    /** The magic: "GIDX", then CR LF, SUB, LF as PNG's, so a text-mode transfer that mangled it is noticed. */
    static final byte[] MAGIC = {'G', 'I', 'D', 'X', '\r', '\n', 0x1a, '\n'};

    /** The one format version this reader understands and this writer writes. */
    static final int VERSION = 1;

    private ShardIndexFile() {}

    /**
     * A decoded index: what it was written for, and the samples.
     *
     * @param formatVersion the format version
     * @param shardSize     the shard's size when the index was written
     * @param shardVersion  the shard's version as the writer saw it; empty when unknown
     * @param samples       the samples in shard order
     * @param crcs          the CRC32C of each sample's extent, parallel to {@code samples}
     */
    record Decoded(
            int formatVersion, long shardSize, String shardVersion, List<ShardSamples.Entry> samples, int[] crcs) {}

    /** A format version this reader does not know: not corrupt, just newer (or older) than this code. */
    static final class UnknownVersion extends Exception {
        private static final long serialVersionUID = 1L;
        final int version;

        UnknownVersion(int version) {
            super("format version " + version + " (expected: " + VERSION + ")", null, false, false);
            this.version = version;
        }
    }

    /** A damaged index: what is wrong, in the form {@code "<what>: <value> (expected: <constraint>)"}. */
    static final class Damaged extends Exception {
        private static final long serialVersionUID = 1L;

        Damaged(String problem) {
            super(problem, null, false, false);
        }
    }

    /**
     * Encodes an index.
     *
     * @param shardSize    the shard's size
     * @param shardVersion the shard's version, or empty when unknown
     * @param samples      the samples in shard order, each with at least one field
     * @param crcs         the CRC32C of each sample's extent bytes
     * @return the index file's bytes
     * @throws IllegalArgumentException if a key, a name or the version is longer than 65 535 UTF-8 bytes, a sample has
     *                                  more than 65 535 fields, or {@code crcs} does not match {@code samples}
     */
    static byte[] encode(long shardSize, String shardVersion, List<ShardSamples.Entry> samples, int[] crcs) {
        if (crcs.length != samples.size()) {
            throw new IllegalArgumentException(
                    "CRCs: " + crcs.length + " (expected: one per sample, " + samples.size() + ")");
        }
        Map<String, Integer> ids = new HashMap<>();
        List<String> names = new ArrayList<>();
        for (ShardSamples.Entry e : samples) {
            for (ShardSamples.Field f : e.fields()) {
                if (ids.putIfAbsent(f.name(), names.size()) == null) {
                    names.add(f.name());
                }
            }
        }
        Out out = new Out(64 + samples.size() * 64);
        out.bytes(MAGIC);
        out.u32(VERSION);
        out.u32(0);
        out.u64(shardSize);
        out.string("shard version", shardVersion);
        out.u32(names.size());
        for (String name : names) {
            out.string("field name", name);
        }
        out.u32(samples.size());
        for (int i = 0; i < samples.size(); i++) {
            ShardSamples.Entry e = samples.get(i);
            out.string("sample key", e.key());
            out.u64(e.start());
            out.u64(e.end());
            out.u32(crcs[i]);
            if (e.fields().size() > 0xffff) {
                throw new IllegalArgumentException(
                        "fields of sample '" + e.key() + "': " + e.fields().size() + " (expected: at most 65535)");
            }
            out.u16(e.fields().size());
            for (ShardSamples.Field f : e.fields()) {
                out.u32(ids.get(f.name()));
                out.u64(f.offset());
                out.u64(f.size());
            }
        }
        CRC32C crc = new CRC32C();
        crc.update(out.array(), 0, out.size());
        out.u32((int) crc.getValue());
        return out.toByteArray();
    }

    /**
     * Decodes and checks an index: magic, format version, trailing CRC32C, lengths, and that every extent and field
     * lies inside the shard size it records, fields inside their extent in increasing order, extents in increasing
     * order without overlap, and each key once.
     *
     * @param bytes the index file's bytes (from the buffer's position to its limit; the buffer is not moved)
     * @return the decoded index
     * @throws UnknownVersion if the magic is right but the format version is not {@link #VERSION}
     * @throws Damaged        if anything else is wrong
     */
    static Decoded decode(ByteBuffer bytes) throws UnknownVersion, Damaged {
        ByteBuffer in = bytes.slice().order(ByteOrder.LITTLE_ENDIAN);
        int total = in.remaining();
        if (total < MAGIC.length + 8) {
            throw new Damaged("length: " + total + " bytes (expected: at least " + (MAGIC.length + 8)
                    + " for the magic and the format version)");
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (in.get(i) != MAGIC[i]) {
                throw new Damaged("magic: not \"GIDX\\r\\n\\x1a\\n\" (expected: a Granary shard index)");
            }
        }
        int version = in.getInt(MAGIC.length);
        if (version != VERSION) {
            throw new UnknownVersion(version);
        }
        if (total < MAGIC.length + 4 + 4) {
            throw new Damaged("length: " + total + " bytes (expected: a complete header)");
        }
        CRC32C crc = new CRC32C();
        crc.update(in.duplicate().limit(total - 4));
        int stored = in.getInt(total - 4);
        if ((int) crc.getValue() != stored) {
            throw new Damaged("CRC32C: " + Integer.toHexString((int) crc.getValue()) + " computed, "
                    + Integer.toHexString(stored) + " stored (expected: equal; the file is damaged or truncated)");
        }
        in.limit(total - 4).position(MAGIC.length + 4);
        try {
            int flags = in.getInt();
            if (flags != 0) {
                throw new Damaged("flags: " + Integer.toHexString(flags) + " (expected: 0 in format version 1)");
            }
            long shardSize = in.getLong();
            if (shardSize < 0) {
                throw new Damaged("shard size: " + shardSize + " (expected: >= 0)");
            }
            String shardVersion = string(in, "shard version");
            int nameCount = count(in, "field names", 3);
            String[] names = new String[nameCount];
            for (int i = 0; i < nameCount; i++) {
                names[i] = string(in, "field name " + i);
                if (names[i].isEmpty()) {
                    throw new Damaged("field name " + i + ": empty (expected: a name such as jpg)");
                }
            }
            int sampleCount = count(in, "samples", 2 + 8 + 8 + 4 + 2);
            List<ShardSamples.Entry> samples = new ArrayList<>(sampleCount);
            int[] crcs = new int[sampleCount];
            Set<String> keys = new HashSet<>(sampleCount * 2);
            long previousEnd = 0;
            for (int s = 0; s < sampleCount; s++) {
                String key = string(in, "key of sample " + s);
                long start = in.getLong();
                long end = in.getLong();
                crcs[s] = in.getInt();
                int fieldCount = Short.toUnsignedInt(in.getShort());
                if (key.isEmpty() || !keys.add(key)) {
                    throw new Damaged("key of sample " + s + ": '" + key + "' (expected: a non-empty key, each once)");
                }
                if (start < previousEnd || end < start || end > shardSize) {
                    throw new Damaged("extent of sample '" + key + "': [" + start + ", " + end + ") (expected: after"
                            + " the previous sample's end " + previousEnd + " and within the shard's " + shardSize
                            + " bytes)");
                }
                if (end - start > WebDataset.MAX_SAMPLE_BYTES) {
                    throw new Damaged("extent of sample '" + key + "': " + (end - start) + " bytes (expected: at most "
                            + WebDataset.MAX_SAMPLE_BYTES + ")");
                }
                if (fieldCount == 0) {
                    throw new Damaged("fields of sample '" + key + "': 0 (expected: at least one)");
                }
                List<ShardSamples.Field> fields = new ArrayList<>(fieldCount);
                long previousField = start;
                for (int f = 0; f < fieldCount; f++) {
                    int id = in.getInt();
                    long offset = in.getLong();
                    long size = in.getLong();
                    if (id < 0 || id >= nameCount) {
                        throw new Damaged("name id of field " + f + " of sample '" + key + "': " + id + " (expected: < "
                                + nameCount + ")");
                    }
                    if (offset < previousField || size < 0 || size > end - offset) {
                        throw new Damaged("field '" + names[id] + "' of sample '" + key + "': [" + offset + ", +" + size
                                + ") (expected: in order within the extent [" + start + ", " + end + "))");
                    }
                    for (ShardSamples.Field other : fields) {
                        if (other.name().equals(names[id])) {
                            throw new Damaged("field '" + names[id] + "' of sample '" + key + "': twice (expected:"
                                    + " each field once per sample)");
                        }
                    }
                    fields.add(new ShardSamples.Field(names[id], offset, size));
                    previousField = offset + size;
                }
                if (fields.getFirst().offset() != start || previousField != end) {
                    throw new Damaged("extent of sample '" + key + "': [" + start + ", " + end + ") (expected: from"
                            + " its first field's data to its last field's end, ["
                            + fields.getFirst().offset() + ", "
                            + previousField + "))");
                }
                samples.add(new ShardSamples.Entry(key, start, end, fields));
                previousEnd = end;
            }
            if (in.hasRemaining()) {
                throw new Damaged("length: " + in.remaining() + " bytes after the last sample (expected: none)");
            }
            return new Decoded(version, shardSize, shardVersion, samples, crcs);
        } catch (BufferUnderflowException e) {
            throw new Damaged("length: " + total + " bytes (expected: more; the index ends inside a record)");
        }
    }

    /** {@return the CRC32C of a sample's extent bytes (from the buffer's position to its limit), as an int} */
    static int crc(ByteBuffer extent) {
        CRC32C crc = new CRC32C();
        crc.update(extent.duplicate());
        return (int) crc.getValue();
    }

    private static int count(ByteBuffer in, String what, int minBytesEach) throws Damaged {
        long n = Integer.toUnsignedLong(in.getInt());
        if (n > in.remaining() / minBytesEach) {
            throw new Damaged(what + ": " + n + " (expected: at most " + in.remaining() / minBytesEach
                    + ", what the remaining " + in.remaining() + " bytes can hold)");
        }
        return (int) n;
    }

    private static String string(ByteBuffer in, String what) throws Damaged {
        int length = Short.toUnsignedInt(in.getShort());
        if (length > in.remaining()) {
            throw new Damaged(what + ": " + length + " bytes (expected: at most the " + in.remaining() + " left)");
        }
        ByteBuffer slice = in.slice(in.position(), length);
        in.position(in.position() + length);
        try {
            return UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(slice)
                    .toString();
        } catch (CharacterCodingException e) {
            throw new Damaged(what + ": malformed UTF-8 (expected: UTF-8 text)");
        }
    }

    /** A little-endian byte sink. */
    private static final class Out extends ByteArrayOutputStream {
        Out(int size) {
            super(size);
        }

        byte[] array() {
            return buf;
        }

        void bytes(byte[] b) {
            write(b, 0, b.length);
        }

        void u16(int v) {
            write(v);
            write(v >>> 8);
        }

        void u32(int v) {
            u16(v & 0xffff);
            u16(v >>> 16);
        }

        void u64(long v) {
            u32((int) v);
            u32((int) (v >>> 32));
        }

        void string(String what, String s) {
            byte[] b = s.getBytes(UTF_8);
            if (b.length > 0xffff) {
                throw new IllegalArgumentException(what + ": " + b.length + " UTF-8 bytes (expected: at most 65535)");
            }
            u16(b.length);
            bytes(b);
        }
    }
}
