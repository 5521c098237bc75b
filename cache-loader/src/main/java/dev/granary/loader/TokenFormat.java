// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.ObjectInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Pre-tokenized token shards as {@link ShardFormat}s ({@link TokenDataset}): Megatron-LM/NeMo indexed datasets
 * ({@code <prefix>.bin} + {@code <prefix>.idx}) and numpy {@code .npy} arrays, cut into samples of tokens. A sample's
 * bytes are its tokens in the file's dtype, little-endian, one field {@code tokens}: a view of the cached shard part or
 * extent, no copy.
 *
 * <h2>Megatron's {@code .idx}</h2>
 * Version 1, as {@code megatron/core/datasets/indexed_dataset.py} writes it (all little-endian): the magic
 * {@code MMIDIDX\0\0}, the version (uint64, 1), the dtype code (uint8: uint8 1, int8 2, int16 3, int32 4, int64 5,
 * float64 6, float32 7, uint16 8), the sequence count N (uint64), the document-index count M (uint64, documents + 1),
 * then N int32 sequence lengths in tokens, N int64 byte pointers into {@code .bin}, M int64 document indices (sequence
 * boundaries, from 0 to N), and for a multimodal dataset N int8 modes. Every claim is checked against the others and
 * against {@code .bin}, so that a file that does not add up is a {@link CorruptShardException} naming the file, never
 * tokens read at wrong offsets: the pointers must be the running sum of length × the dtype's size (a header whose
 * dtype was changed fails here — Megatron's own reader would return wrong tokens), the document indices must rise from
 * 0 to N, and {@code .bin} must hold every sequence.
 *
 * <h2>Samples</h2>
 * <ul>
 *   <li>{@link Layout#WINDOWS}: the GPT layout — the documents concatenated in index order, sample {@code i} the tokens
 *       {@code [i·L, i·L + L + 1)} (inputs and the next-token targets, overlapping by one); the last partial window is
 *       dropped. Since {@code .bin} holds the sequences in index order, a window is one extent of it.</li>
 *   <li>{@link Layout#DOCUMENTS}: one sample per document (its sequences, one extent; possibly empty).</li>
 * </ul>
 *
 * <h2>{@code .npy}</h2>
 * A 1-D array (header format 1.0, 2.0 or 3.0) of integers: {@code |u1 |i1 <u2 <i2 <u4 <i4 <u8 <i8} (little-endian, or
 * single bytes). Big-endian arrays, floats, 2-D and other arrays are refused with a clear error. Windows are cut per
 * file (a window never spans two files); {@link Layout#DOCUMENTS} makes one sample of the whole array.
 *
 * <p>Immutable and thread-safe.
 */
final class TokenFormat implements ShardFormat {

    /** How a token shard is cut into samples. */
    enum Layout {
        /** Windows of {@code L + 1} tokens every {@code L} tokens: the GPT layout. */
        WINDOWS,
        /** One sample per document. */
        DOCUMENTS
    }

    static final String FIELD = "tokens";
    static final String BIN = ".bin";
    static final String IDX = ".idx";
    private static final byte[] MAGIC = "MMIDIDX\0\0".getBytes(StandardCharsets.US_ASCII);
    private static final int HEADER = 34;

    private final Layout layout;
    /** Tokens per window (L); 0 for documents. */
    private final int sequenceLength;

    private final boolean npy;

    private TokenFormat(Layout layout, int sequenceLength, boolean npy) {
        this.layout = layout;
        this.sequenceLength = sequenceLength;
        this.npy = npy;
    }

    static TokenFormat megatron(Layout layout, int sequenceLength) {
        return new TokenFormat(layout, sequenceLength, false);
    }

    static TokenFormat npy(Layout layout, int sequenceLength) {
        return new TokenFormat(layout, sequenceLength, true);
    }

    @Override
    public String name() {
        return (npy ? "npy" : "megatron") + (layout == Layout.WINDOWS ? " windows of " + sequenceLength : " documents");
    }

    @Override
    public List<String> indexKeys(String shardKey) {
        return npy || !shardKey.endsWith(BIN) ? List.of() : List.of(prefix(shardKey) + IDX);
    }

    private static String prefix(String binKey) {
        return binKey.substring(0, binKey.length() - BIN.length());
    }

    /** A token dtype: its size in bytes and its name. */
    record DType(int size, String name) {}

    /** Megatron's dtype codes, indexed by code (0 unused). */
    private static final DType[] MEGATRON = {
        null,
        new DType(1, "uint8"),
        new DType(1, "int8"),
        new DType(2, "int16"),
        new DType(4, "int32"),
        new DType(8, "int64"),
        new DType(8, "float64"),
        new DType(4, "float32"),
        new DType(2, "uint16")
    };

    @Override
    public ShardIndex readIndex(ObjectInfo shard, ObjectInfo index, ByteBuffer bytes) throws IOException {
        ByteBuffer b = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int base = b.position();
        long size = b.remaining();
        String idx = index.key();
        if (size < HEADER) {
            throw damaged(shard, idx, size + " bytes, shorter than the 34-byte header");
        }
        for (int i = 0; i < MAGIC.length; i++) {
            if (b.get(base + i) != MAGIC[i]) {
                throw damaged(shard, idx, "no MMIDIDX magic (expected: a Megatron-LM indexed dataset's .idx)");
            }
        }
        long version = b.getLong(base + 9);
        if (version != 1) {
            throw damaged(shard, idx, "version " + version + " (expected: 1, the version this reader knows)");
        }
        int code = b.get(base + 17) & 0xff;
        if (code < 1 || code >= MEGATRON.length) {
            throw damaged(
                    shard,
                    idx,
                    "dtype code " + code + " (expected: 1 to 8: uint8, int8, int16, int32, int64,"
                            + " float64, float32, uint16)");
        }
        DType dtype = MEGATRON[code];
        long n = b.getLong(base + 18);
        long m = b.getLong(base + 26);
        long expected = HEADER + 12 * n + 8 * m;
        if (n < 0
                || m < 1
                || n > Integer.MAX_VALUE
                || m > Integer.MAX_VALUE
                || (size != expected && size != expected + n)) {
            throw damaged(
                    shard,
                    idx,
                    size + " bytes for " + n + " sequences and " + m + " document indices"
                            + " (expected: " + expected + " bytes, or " + (expected + n)
                            + " with a multimodal dataset's"
                            + " modes)");
        }
        int count = (int) n;
        int lengthsAt = base + HEADER;
        int pointersAt = lengthsAt + 4 * count;
        int documentsAt = pointersAt + 8 * count;
        long pointer = 0;
        for (int i = 0; i < count; i++) {
            int length = b.getInt(lengthsAt + 4 * i);
            long stored = b.getLong(pointersAt + 8 * i);
            if (length < 0 || stored != pointer) {
                throw damaged(
                        shard,
                        idx,
                        "sequence " + i + " of " + length + " tokens at byte " + stored
                                + " (expected: at byte " + pointer + ", the running sum of lengths × " + dtype.size()
                                + " bytes of " + dtype.name()
                                + ": the pointers do not match the lengths and the header's"
                                + " dtype)");
            }
            pointer += (long) length * dtype.size();
        }
        if (pointer > shard.size()) {
            throw damaged(
                    shard,
                    idx,
                    "its sequences take " + pointer + " bytes of " + dtype.name() + " and '"
                            + shard.key() + "' has " + shard.size()
                            + " (expected: a .bin holding every sequence: truncated,"
                            + " or another dataset's .bin)");
        }
        int documents = (int) m - 1;
        long[] docStart = new long[documents];
        long[] docEnd = new long[documents];
        long previous = b.getLong(documentsAt);
        if (previous != 0) {
            throw damaged(shard, idx, "document indices start at " + previous + " (expected: 0)");
        }
        for (int d = 0; d < documents; d++) {
            long next = b.getLong(documentsAt + 8 * (d + 1));
            if (next < previous || next > n) {
                throw damaged(
                        shard,
                        idx,
                        "document index " + (d + 1) + " is " + next + " (expected: from " + previous + " to " + n
                                + ", rising)");
            }
            docStart[d] = previous == n ? pointer : b.getLong(pointersAt + 8 * (int) previous);
            docEnd[d] = next == n ? pointer : b.getLong(pointersAt + 8 * (int) next);
            previous = next;
        }
        if (documents > 0 && previous != n) {
            throw damaged(
                    shard,
                    idx,
                    "the last document index is " + previous + " (expected: " + n + ", the" + " sequence count)");
        }
        return samples(shard.key(), dtype, 0, pointer, docStart, docEnd);
    }

    private static CorruptShardException damaged(ObjectInfo shard, String idx, String problem) {
        return new CorruptShardException(
                shard.key(), "index '" + idx + "' of '" + shard.key() + "' does not add up: " + problem, null);
    }

    @Override
    public ShardIndex scan(ObjectInfo shard, ShardReader reader) throws IOException {
        if (!npy) {
            throw new IllegalArgumentException("'" + shard.key() + "' has no index"
                    + (shard.key().endsWith(BIN) ? " '" + prefix(shard.key()) + IDX + "' beside it" : "")
                    + " (expected: a Megatron-LM indexed"
                    + " dataset, <prefix>.bin with its <prefix>.idx beside it)");
        }
        return npyIndex(shard, reader);
    }

    private static final Pattern DESCR = Pattern.compile("'descr'\\s*:\\s*'([^']*)'");
    private static final Pattern FORTRAN = Pattern.compile("'fortran_order'\\s*:\\s*(True|False)");
    private static final Pattern SHAPE = Pattern.compile("'shape'\\s*:\\s*\\(([^)]*)\\)");

    /** A {@code .npy} array's header: its dtype and where its data lies. */
    private ShardIndex npyIndex(ObjectInfo shard, ShardReader reader) throws IOException {
        String key = shard.key();
        long size = reader.size();
        if (size < 10) {
            throw new CorruptShardException(
                    key, 0, size + " bytes (expected: a .npy file, at least its 10-byte" + " preamble)");
        }
        ByteBuffer pre = reader.read(0, 10).order(ByteOrder.LITTLE_ENDIAN);
        int p = pre.position();
        if ((pre.get(p) & 0xff) != 0x93
                || pre.get(p + 1) != 'N'
                || pre.get(p + 2) != 'U'
                || pre.get(p + 3) != 'M'
                || pre.get(p + 4) != 'P'
                || pre.get(p + 5) != 'Y') {
            throw new CorruptShardException(key, 0, "no \\x93NUMPY magic (expected: a numpy .npy file)");
        }
        int major = pre.get(p + 6) & 0xff;
        long headerLength;
        int headerAt;
        if (major == 1) {
            headerLength = pre.getShort(p + 8) & 0xffff;
            headerAt = 10;
        } else if (major == 2 || major == 3) {
            ByteBuffer field = reader.read(8, 4).duplicate().order(ByteOrder.LITTLE_ENDIAN);
            headerLength = field.getInt(field.position()) & 0xffffffffL;
            headerAt = 12;
        } else {
            throw new CorruptShardException(key, 6, "format version " + major + " (expected: 1, 2 or 3)");
        }
        if (headerAt + headerLength > size || headerLength > (1 << 20)) {
            throw new CorruptShardException(
                    key,
                    8,
                    "header of " + headerLength + " bytes (expected: within the" + " file's " + size
                            + " bytes, at most 1 MiB)");
        }
        ByteBuffer h = reader.read(headerAt, (int) headerLength);
        String header = (major == 3 ? StandardCharsets.UTF_8 : StandardCharsets.ISO_8859_1)
                .decode(h.duplicate())
                .toString();
        Matcher descr = DESCR.matcher(header);
        Matcher shape = SHAPE.matcher(header);
        if (!descr.find() || !FORTRAN.matcher(header).find() || !shape.find()) {
            throw new CorruptShardException(
                    key,
                    headerAt,
                    "header '" + header.strip() + "' (expected: a dict with"
                            + " 'descr', 'fortran_order' and 'shape')");
        }
        DType dtype = npyType(key, descr.group(1));
        String[] dims = shape.group(1).split(",");
        long elements;
        try {
            if (dims.length != 1 || dims[0].isBlank()) { // "(n,)" splits to one element; "(4, 6)" to two
                throw new NumberFormatException();
            }
            elements = Long.parseLong(dims[0].strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + key + "': an array of shape (" + shape.group(1) + ") (expected:"
                    + " a 1-D array of tokens, shape (n,); flatten it with numpy.ravel before saving)");
        }
        long dataAt = headerAt + headerLength;
        if (dataAt + elements * dtype.size() > size) {
            throw new CorruptShardException(
                    key,
                    dataAt,
                    elements + " " + dtype.name() + " tokens need "
                            + elements * dtype.size() + " bytes and " + (size - dataAt)
                            + " follow the header (expected: the"
                            + " whole array: truncated?)");
        }
        long end = dataAt + elements * dtype.size();
        return samples(key, dtype, dataAt, end, new long[] {dataAt}, new long[] {end});
    }

    private static DType npyType(String key, String descr) {
        return switch (descr) {
            case "|u1", "<u1" -> new DType(1, "uint8");
            case "|i1", "<i1" -> new DType(1, "int8");
            case "<u2" -> new DType(2, "uint16");
            case "<i2" -> new DType(2, "int16");
            case "<u4" -> new DType(4, "uint32");
            case "<i4" -> new DType(4, "int32");
            case "<u8" -> new DType(8, "uint64");
            case "<i8" -> new DType(8, "int64");
            default ->
                throw new IllegalArgumentException("'" + key + "': an array of dtype '" + descr + "' (expected:"
                        + " integer tokens, little-endian: |u1 |i1 <u2 <i2 <u4 <i4 <u8 <i8"
                        + (descr.startsWith(">")
                                ? "; this one is big-endian: save it with arr.astype(arr.dtype" + ".newbyteorder('<'))"
                                : "")
                        + ")");
        };
    }

    /** The samples of a token shard: windows over {@code [dataStart, dataEnd)}, or the given documents. */
    private ShardIndex samples(
            String shard, DType dtype, long dataStart, long dataEnd, long[] docStart, long[] docEnd) {
        if (layout == Layout.DOCUMENTS) {
            int[] lengths = new int[docStart.length];
            for (int d = 0; d < lengths.length; d++) {
                long length = docEnd[d] - docStart[d];
                if (length > ShardedDataset.MAX_SAMPLE_BYTES) {
                    throw new IllegalArgumentException("document " + d + " of '" + shard + "': " + length + " bytes"
                            + " (expected: at most " + ShardedDataset.MAX_SAMPLE_BYTES + " in one sample)");
                }
                lengths[d] = (int) length;
            }
            return ShardIndex.of(shard, docStart, lengths);
        }
        long tokens = (dataEnd - dataStart) / dtype.size();
        long windows = tokens < 1 ? 0 : (tokens - 1) / sequenceLength;
        if (windows > ShardedDataset.MAX_SAMPLE_BYTES) {
            throw new IllegalArgumentException("'" + shard + "': " + windows + " windows of " + sequenceLength
                    + " tokens (expected: fewer than 2^31 in one shard; use a longer sequence length)");
        }
        if ((long) (sequenceLength + 1) * dtype.size() > ShardedDataset.MAX_SAMPLE_BYTES) {
            throw new IllegalArgumentException("sequence length: " + sequenceLength + " tokens of " + dtype.size()
                    + " bytes (expected: a window of at most " + ShardedDataset.MAX_SAMPLE_BYTES + " bytes)");
        }
        return new Windows(shard, dataStart, (long) sequenceLength * dtype.size(), dtype.size(), (int) windows);
    }

    /** Windows of L + 1 tokens every L tokens: computed, nothing stored per sample. */
    static final class Windows implements ShardIndex {
        private final String shard;
        private final long dataStart;
        /** L tokens' bytes: where window i + 1 starts after window i. */
        private final long stride;
        /** L + 1 tokens' bytes: a window's length. */
        private final int length;

        private final int count;

        Windows(String shard, long dataStart, long stride, int elementSize, int count) {
            this.shard = shard;
            this.dataStart = dataStart;
            this.stride = stride;
            this.length = Math.toIntExact(stride + elementSize);
            this.count = count;
        }

        @Override
        public int size() {
            return count;
        }

        @Override
        public long start(int sample) {
            return dataStart + Objects.checkIndex(sample, count) * stride;
        }

        @Override
        public int length(int sample) {
            Objects.checkIndex(sample, count);
            return length;
        }

        @Override
        public String toString() {
            return "Windows[" + shard + ", " + count + " windows of " + length + " bytes]";
        }
    }

    @Override
    public Map<String, ByteBuffer> decode(ShardIndex index, int sample, ByteBuffer extent) {
        return Map.of(FIELD, extent.slice(extent.position(), extent.remaining()).asReadOnlyBuffer());
    }
}
