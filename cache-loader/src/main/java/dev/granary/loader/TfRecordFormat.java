// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.ObjectInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * TensorFlow's TFRecord files as a {@link ShardFormat} ({@link TfRecordDataset}): a sample is one record, framed as
 * TensorFlow writes it —
 * <pre>
 * uint64 LE  length
 * uint32 LE  masked CRC32C of the 8 length bytes
 * byte[length] data
 * uint32 LE  masked CRC32C of the data
 * </pre>
 * with {@code masked(c) = ((c >>> 15) | (c << 17)) + 0xa282ead8}. A sample's extent is its whole framed record, so
 * every read checks both CRCs: a damaged record is a {@link CorruptShardException} naming the shard and the offset,
 * never wrong bytes.
 *
 * <p>Indexing: from a DALI {@code tfrecord2idx} index beside the shard ({@code <shard>.idx}, or the shard's name with
 * its extension replaced by {@code .idx}: one text line {@code "<offset> <framed length>"} per record), which must
 * cover
 * the shard exactly, record after record (else it is stale and the shard is scanned); or by one sequential scan of the
 * records' length fields. GZIP- and ZLIB-compressed TFRecord files are refused with a clear error (decompress them, or
 * write them uncompressed): a compressed file is one stream, which this format does not split into records.
 *
 * <p>Decoding: {@link Sample#bytes()} is the record's data. When it parses as a {@code tf.train.Example}, its
 * features are the sample's {@link Sample#fields()}, by feature name, in the record's order: a {@code bytes_list} is
 * its first value's bytes (zero-copy; empty for an empty list), an {@code int64_list} its values as little-endian
 * int64s, a {@code float_list} its values as little-endian float32s (zero-copy when packed, as TensorFlow writes them).
 * A record that is not an Example (any other payload) has no fields beyond {@code record}, its data. Stateless and
 * thread-safe.
 */
final class TfRecordFormat implements ShardFormat {

    static final TfRecordFormat INSTANCE = new TfRecordFormat();

    /** The name of the one field of a record that is not a {@code tf.train.Example}. */
    static final String RECORD = "record";

    static final String INDEX_SUFFIX = ".idx";
    private static final int FRAMING = 16;

    private TfRecordFormat() {}

    @Override
    public String name() {
        return "tfrecord";
    }

    @Override
    public List<String> indexKeys(String shardKey) {
        List<String> keys = new ArrayList<>(2);
        int slash = shardKey.lastIndexOf('/');
        int dot = shardKey.lastIndexOf('.');
        if (dot > slash + 1) {
            keys.add(shardKey.substring(0, dot) + INDEX_SUFFIX); // train-0.tfrecord -> train-0.idx (DALI's habit)
        }
        keys.add(shardKey + INDEX_SUFFIX);
        return keys;
    }

    @Override
    public ShardIndex readIndex(ObjectInfo shard, ObjectInfo index, ByteBuffer bytes)
            throws StaleIndexException, IOException {
        String text = StandardCharsets.US_ASCII.decode(bytes.duplicate()).toString();
        String[] lines = text.split("\n");
        long[] starts = new long[lines.length];
        int[] lengths = new int[lines.length];
        int n = 0;
        long expected = 0;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i].strip();
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split("\\s+");
            long offset;
            long length;
            try {
                if (parts.length != 2) {
                    throw new NumberFormatException();
                }
                offset = Long.parseLong(parts[0]);
                length = Long.parseLong(parts[1]);
            } catch (NumberFormatException e) {
                throw new CorruptShardException(
                        shard.key(),
                        "index '" + index.key() + "' of shard '" + shard.key()
                                + "' is damaged: line " + (i + 1) + " is '" + abbreviate(line)
                                + "' (expected: '<offset>"
                                + " <framed length>', two decimal numbers, as DALI's tfrecord2idx writes)",
                        null);
            }
            if (offset != expected || length < FRAMING || length - FRAMING > ShardedDataset.MAX_SAMPLE_BYTES) {
                throw new StaleIndexException("index '" + index.key() + "' does not describe shard '" + shard.key()
                        + "': record " + n + " at " + offset + ", " + length + " bytes (expected: at " + expected
                        + ", at least 16 bytes): indexing the shard by scanning it");
            }
            starts[n] = offset;
            lengths[n] = (int) length;
            n++;
            expected = offset + length;
        }
        if (expected != shard.size()) {
            throw new StaleIndexException("index '" + index.key() + "' does not describe shard '" + shard.key()
                    + "': its records end at " + expected + " (expected: the shard's " + shard.size() + " bytes):"
                    + " indexing the shard by scanning it");
        }
        return ShardIndex.of(shard.key(), Arrays.copyOf(starts, n), Arrays.copyOf(lengths, n));
    }

    @Override
    public ShardIndex scan(ObjectInfo shard, ShardReader reader) throws IOException {
        long size = reader.size();
        refuseCompressed(shard, reader);
        List<long[]> records = new ArrayList<>();
        long offset = 0;
        while (offset < size) {
            if (size - offset < FRAMING) {
                throw new CorruptShardException(
                        shard.key(),
                        offset,
                        "a record's framing needs 16 bytes, " + (size - offset)
                                + " are left (expected: the shard to end after a whole record: truncated?)");
            }
            ByteBuffer header = reader.read(offset, 12).order(ByteOrder.LITTLE_ENDIAN);
            long length = checkedLength(shard.key(), offset, header, header.position());
            if (length > size - offset - FRAMING) {
                throw new CorruptShardException(
                        shard.key(),
                        offset,
                        "record of " + length + " bytes (expected: at" + " most the " + (size - offset - FRAMING)
                                + " bytes left in the shard: truncated?)");
            }
            records.add(new long[] {offset, length + FRAMING});
            offset += length + FRAMING;
        }
        long[] starts = new long[records.size()];
        int[] lengths = new int[records.size()];
        for (int i = 0; i < starts.length; i++) {
            starts[i] = records.get(i)[0];
            lengths[i] = (int) records.get(i)[1];
        }
        return ShardIndex.of(shard.key(), starts, lengths);
    }

    /** Refuses a GZIP or ZLIB stream with a message that says so (its first bytes never frame a record). */
    private static void refuseCompressed(ObjectInfo shard, ShardReader reader) throws IOException {
        if (reader.size() < 2) {
            return;
        }
        ByteBuffer head = reader.read(0, 2);
        int b0 = head.get(head.position()) & 0xff;
        int b1 = head.get(head.position() + 1) & 0xff;
        boolean gzip = b0 == 0x1f && b1 == 0x8b;
        boolean zlib = b0 == 0x78 && (b1 == 0x01 || b1 == 0x5e || b1 == 0x9c || b1 == 0xda);
        if (gzip || zlib) {
            throw new CorruptShardException(
                    shard.key(),
                    0,
                    "a " + (gzip ? "GZIP" : "ZLIB") + "-compressed TFRecord"
                            + " file (it starts with " + String.format("%02x %02x", b0, b1)
                            + "), which this reader refuses"
                            + " (expected: uncompressed TFRecord; decompress it, or write it with"
                            + " compression_type=None:"
                            + " a compressed file is one stream that cannot be read record by record)");
        }
    }

    /** Reads and checks a record's length and its CRC at {@code at}; returns the data length. */
    private static long checkedLength(String shard, long offset, ByteBuffer b, int at) throws CorruptShardException {
        long length = b.getLong(at);
        int crc = b.getInt(at + 8);
        int actual = masked(crc32c(b, at, 8));
        if (crc != actual) {
            throw new CorruptShardException(
                    shard,
                    offset,
                    "record length CRC " + Integer.toHexString(crc)
                            + " (expected: " + Integer.toHexString(actual) + ", the masked CRC32C of its length field:"
                            + " the framing is damaged, or this is not a TFRecord file)");
        }
        if (length < 0 || length > ShardedDataset.MAX_SAMPLE_BYTES) {
            throw new CorruptShardException(
                    shard,
                    offset,
                    "record length " + Long.toUnsignedString(length) + " (expected: at most "
                            + ShardedDataset.MAX_SAMPLE_BYTES + ")");
        }
        return length;
    }

    @Override
    public Map<String, ByteBuffer> decode(ShardIndex index, int sample, ByteBuffer extent) throws IOException {
        ByteBuffer data = data(index, sample, extent);
        Map<String, ByteBuffer> features = ExampleProto.features(data);
        if (features == null) {
            return Map.of(RECORD, data);
        }
        return Collections.unmodifiableMap(features);
    }

    @Override
    public ByteBuffer bytes(ShardIndex index, int sample, ByteBuffer extent) throws IOException {
        return extent.slice(extent.position() + 12, extent.remaining() - FRAMING)
                .asReadOnlyBuffer();
    }

    /** Checks a framed record (both CRCs, and that its length field matches its extent); returns its data. */
    private static ByteBuffer data(ShardIndex index, int sample, ByteBuffer extent) throws CorruptShardException {
        String shard = index instanceof ShardIndex.Extents extents ? extents.shard() : "the shard";
        long offset = index.start(sample);
        ByteBuffer b = extent.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int at = b.position();
        long length = checkedLength(shard, offset, b, at);
        if (length != extent.remaining() - FRAMING) {
            throw new CorruptShardException(
                    shard,
                    offset,
                    "record length " + length + " (expected: " + (extent.remaining() - FRAMING)
                            + ", as the shard's index says)");
        }
        int crc = b.getInt(at + 12 + (int) length);
        int actual = masked(crc32c(b, at + 12, (int) length));
        if (crc != actual) {
            throw new CorruptShardException(
                    shard,
                    offset,
                    "record data CRC " + Integer.toHexString(crc)
                            + " (expected: " + Integer.toHexString(actual) + ", the masked CRC32C of its " + length
                            + " bytes of data: the record is damaged)");
        }
        return extent.slice(at + 12, (int) length).asReadOnlyBuffer();
    }

    static int crc32c(ByteBuffer b, int at, int length) {
        CRC32C crc = new CRC32C();
        crc.update(b.slice(at, length));
        return (int) crc.getValue();
    }

    static int masked(int crc) {
        return ((crc >>> 15) | (crc << 17)) + 0xa282ead8;
    }

    private static String abbreviate(String s) {
        return s.length() <= 60 ? s : s.substring(0, 57) + "...";
    }

    /**
     * A {@code tf.train.Example}'s features, read from the protobuf wire format with nothing but what the message
     * needs (no generated classes, no dependency). Returns {@code null} for bytes that are not an Example, so that
     * any other payload is a record of one field.
     */
    static final class ExampleProto {

        private ExampleProto() {}

        /** {@return the features by name, in the record's order, or null if {@code data} is not an Example} */
        static Map<String, ByteBuffer> features(ByteBuffer data) {
            try {
                Wire example = new Wire(data);
                Map<String, ByteBuffer> out = new LinkedHashMap<>();
                boolean sawFeatures = false;
                while (example.more()) {
                    long tag = example.varint();
                    if (tag == ((1 << 3) | 2)) { // features = 1
                        sawFeatures = true;
                        Wire features = example.message();
                        while (features.more()) {
                            long t = features.varint();
                            if (t == ((1 << 3) | 2)) { // map entry, feature = 1
                                entry(features.message(), out);
                            } else {
                                features.skip(t);
                            }
                        }
                    } else {
                        example.skip(tag);
                    }
                }
                return sawFeatures || data.remaining() == 0 ? out : null;
            } catch (RuntimeException e) {
                return null; // not an Example: the record is read as one field
            }
        }

        private static void entry(Wire entry, Map<String, ByteBuffer> out) {
            String key = null;
            ByteBuffer value = null;
            while (entry.more()) {
                long t = entry.varint();
                if (t == ((1 << 3) | 2)) {
                    key = StandardCharsets.UTF_8.decode(entry.bytes()).toString();
                } else if (t == ((2 << 3) | 2)) {
                    value = feature(entry.message());
                } else {
                    entry.skip(t);
                }
            }
            if (key == null) {
                throw new IllegalArgumentException("map entry without a key");
            }
            out.put(key, value == null ? ByteBuffer.allocate(0).asReadOnlyBuffer() : value);
        }

        /** A Feature: bytes_list = 1, float_list = 2, int64_list = 3, each a message whose field 1 repeats. */
        private static ByteBuffer feature(Wire feature) {
            ByteBuffer result = ByteBuffer.allocate(0);
            while (feature.more()) {
                long t = feature.varint();
                int field = (int) (t >>> 3);
                if ((t & 7) != 2 || field < 1 || field > 3) {
                    feature.skip(t);
                    continue;
                }
                Wire list = feature.message();
                result = switch (field) {
                    case 1 -> firstBytes(list);
                    case 2 -> floats(list);
                    default -> int64s(list);
                };
            }
            return result.asReadOnlyBuffer();
        }

        private static ByteBuffer firstBytes(Wire list) {
            ByteBuffer first = null;
            while (list.more()) {
                long t = list.varint();
                if (t == ((1 << 3) | 2)) {
                    ByteBuffer value = list.bytes();
                    if (first == null) {
                        first = value;
                    }
                } else {
                    list.skip(t);
                }
            }
            return first == null ? ByteBuffer.allocate(0) : first;
        }

        private static ByteBuffer floats(Wire list) {
            ByteBuffer packed = null;
            List<Integer> loose = new ArrayList<>();
            while (list.more()) {
                long t = list.varint();
                if (t == ((1 << 3) | 2)) { // packed: 4-byte little-endian floats, as they are wanted
                    ByteBuffer run = list.bytes();
                    if ((run.remaining() & 3) != 0) {
                        throw new IllegalArgumentException("packed floats of " + run.remaining() + " bytes");
                    }
                    if (packed == null && loose.isEmpty()) {
                        packed = run;
                    } else {
                        addBits(run, loose, packed);
                        packed = null;
                    }
                } else if (t == ((1 << 3) | 5)) { // one unpacked float (fixed32)
                    if (packed != null) {
                        addBits(packed, loose, null);
                        packed = null;
                    }
                    loose.add(list.fixed32());
                } else {
                    list.skip(t);
                }
            }
            if (packed != null) {
                return packed;
            }
            ByteBuffer out = ByteBuffer.allocate(4 * loose.size()).order(ByteOrder.LITTLE_ENDIAN);
            for (int bits : loose) {
                out.putInt(bits);
            }
            return out.flip();
        }

        private static void addBits(ByteBuffer run, List<Integer> loose, ByteBuffer earlier) {
            if (earlier != null) {
                addBits(earlier, loose, null);
            }
            ByteBuffer b = run.duplicate().order(ByteOrder.LITTLE_ENDIAN);
            while (b.hasRemaining()) {
                loose.add(b.getInt());
            }
        }

        private static ByteBuffer int64s(Wire list) {
            List<Long> values = new ArrayList<>();
            while (list.more()) {
                long t = list.varint();
                if (t == ((1 << 3) | 2)) { // packed varints
                    Wire run = list.message();
                    while (run.more()) {
                        values.add(run.varint());
                    }
                } else if (t == (1 << 3)) { // one unpacked varint
                    values.add(list.varint());
                } else {
                    list.skip(t);
                }
            }
            ByteBuffer out = ByteBuffer.allocate(8 * values.size()).order(ByteOrder.LITTLE_ENDIAN);
            for (long v : values) {
                out.putLong(v);
            }
            return out.flip();
        }
    }

    /** A protobuf message's bytes being read: varints, length-delimited fields, skipping. Throws on malformed. */
    static final class Wire {
        private final ByteBuffer b;

        Wire(ByteBuffer b) {
            this.b = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        }

        boolean more() {
            return b.hasRemaining();
        }

        long varint() {
            long result = 0;
            for (int shift = 0; shift < 64; shift += 7) {
                int x = b.get() & 0xff;
                result |= (long) (x & 0x7f) << shift;
                if ((x & 0x80) == 0) {
                    return result;
                }
            }
            throw new IllegalArgumentException("varint longer than 10 bytes");
        }

        int fixed32() {
            return b.getInt();
        }

        ByteBuffer bytes() {
            long n = varint();
            if (n < 0 || n > b.remaining()) {
                throw new IllegalArgumentException("length " + n + " past the message's end");
            }
            ByteBuffer slice = b.slice(b.position(), (int) n);
            b.position(b.position() + (int) n);
            return slice;
        }

        Wire message() {
            return new Wire(bytes());
        }

        void skip(long tag) {
            switch ((int) (tag & 7)) {
                case 0 -> varint();
                case 1 -> b.position(b.position() + 8);
                case 2 -> bytes();
                case 5 -> b.position(b.position() + 4);
                default -> throw new IllegalArgumentException("wire type " + (tag & 7));
            }
        }
    }
}
