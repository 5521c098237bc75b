// SPDX-License-Identifier: Apache-2.0
package dev.granary.parquet;

import dev.granary.Lease;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.loader.CorruptShardException;
import dev.granary.loader.ShardFormat;
import dev.granary.loader.ShardIndex;
import dev.granary.loader.ShardReader;
import dev.hardwood.HardwoodContext;
import dev.hardwood.metadata.ColumnChunk;
import dev.hardwood.metadata.ColumnMetaData;
import dev.hardwood.metadata.CompressionCodec;
import dev.hardwood.metadata.FileMetaData;
import dev.hardwood.metadata.RowGroup;
import dev.hardwood.reader.ColumnReader;
import dev.hardwood.reader.ColumnReaders;
import dev.hardwood.reader.ParquetFileReader;
import dev.hardwood.reader.RowGroupPredicate;
import dev.hardwood.reader.Validity;
import dev.hardwood.schema.ColumnProjection;
import dev.hardwood.schema.ColumnSchema;
import dev.hardwood.schema.FileSchema;
import dev.hardwood.schema.SchemaNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Parquet files as shards, rows as samples, read with Hardwood: the {@link ShardFormat} behind {@link ParquetDataset}.
 *
 * <h2>Indexing: the footer, in one or two requests</h2>
 * {@link #scan} does not read the file in parts: it reads the file's last {@value #TAIL_GUESS} bytes (or the whole
 * file if smaller) through the cache, pinned to the listed version, and a second range only if the footer is longer.
 * Hardwood parses the footer from those bytes; the tail magic, the footer length and every projected column chunk's
 * range are checked against the file's size. The index keeps the footer's bytes (decoding parses them again) and, per
 * row group, the span of its projected column chunks.
 *
 * <h2>The row group is the unit</h2>
 * A row is not an extent of the file: its values lie in compressed pages shared with the rest of its row group. So
 * every row of a row group has the same extent, the projected chunks' span (what Hardwood reads in one range), and
 * {@link #decode} decodes the whole row group from it — once, not once per row: decoded row groups are kept in a
 * small cache inside the format, bounded in bytes ({@code decodedBytes}), least recently used first out, and a row
 * group is dropped as soon as all its rows have been served. A shard-block order reads a block's row groups while
 * they are held (each decoded once per epoch); an order that jumps between more row groups than the bound holds is
 * still correct but decodes a row group again for every row whose group was evicted ({@link #rowGroupsDecoded()}
 * counts it; docs/decisions/0025-parquet-on-hardwood.md measures it).
 *
 * <h2>Fields</h2>
 * Each projected column of a row is one field, named by the column: INT32, INT64, FLOAT and DOUBLE as little-endian
 * bytes, BOOLEAN as one byte (0 or 1), BYTE_ARRAY (strings are their UTF-8 bytes) and FIXED_LEN_BYTE_ARRAY raw. A NULL
 * is an absent field. Nested columns (lists, structs, maps) and INT96 are refused when indexing, naming the file and
 * the column.
 *
 * <p>Thread-safe: indexing scans many files at once, and loader workers decode concurrently.
 */
public final class ParquetFormat implements ShardFormat {

    /** How much of a file's end the first indexing request reads: most footers fit. */
    static final int TAIL_GUESS = 64 << 10;

    /** What a decoded row group may take at most by default. */
    static final long DEFAULT_DECODED_BYTES = 256L << 20;

    private static final Set<CompressionCodec> CODECS = EnumSet.of(
            CompressionCodec.UNCOMPRESSED, CompressionCodec.SNAPPY, CompressionCodec.GZIP, CompressionCodec.ZSTD);

    private static final class Shared {
        /** Hardwood's decoding threads, shared by every format: a few daemon threads. */
        static final HardwoodContext CONTEXT = HardwoodContext.create(
                Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors())));
    }

    private final TieredCache cache;
    private final List<String> projection;
    private final DecodedGroups decoded;
    private final AtomicLong footerRequests = new AtomicLong();
    private final AtomicLong footerBytes = new AtomicLong();
    private final int tailGuess;

    ParquetFormat(TieredCache cache, List<String> projection, long decodedBytes) {
        this(cache, projection, decodedBytes, TAIL_GUESS);
    }

    /** As above, reading {@code tailGuess} bytes of a file's end first (tests: a footer in two reads). */
    ParquetFormat(TieredCache cache, List<String> projection, long decodedBytes, int tailGuess) {
        if (tailGuess < 8) {
            throw new IllegalArgumentException("tail guess: " + tailGuess + " bytes (expected: >= 8)");
        }
        this.tailGuess = tailGuess;
        this.cache = cache;
        this.projection = List.copyOf(projection);
        this.decoded = new DecodedGroups(decodedBytes, this::decodeGroup);
    }

    @Override
    public String name() {
        return "parquet";
    }

    /** {@return the projected columns, or an empty list for all of a file's columns} */
    public List<String> columns() {
        return projection;
    }

    /** {@return how many row groups were decoded so far}: once per row group per epoch in a shard-block order */
    public long rowGroupsDecoded() {
        return decoded.decodes();
    }

    /** {@return the nanoseconds spent decoding row groups so far, summed over threads} */
    public long decodeNanos() {
        return decoded.nanos();
    }

    /** {@return the bytes the decoded row groups held now take} */
    public long decodedBytesHeld() {
        return decoded.held();
    }

    /** {@return how many ranged reads indexing asked the cache for so far (one or two per file)} */
    public long footerReads() {
        return footerRequests.get();
    }

    /** {@return the bytes of the footers indexed so far (without their 8-byte tails)} */
    public long footerBytes() {
        return footerBytes.get();
    }

    // ------------------------------------------------------------------------------------------------------- indexing

    @Override
    public ShardIndex scan(ObjectInfo shard, ShardReader reader) throws IOException {
        String key = shard.key();
        long size = shard.size();
        if (size < 12) {
            throw new CorruptShardException(
                    key,
                    0,
                    size + " bytes (expected: a Parquet file, at least 12 bytes: PAR1, a footer, its length"
                            + " and PAR1)");
        }
        int guess = (int) Math.min(size, tailGuess);
        byte[] last = read(shard, size - guess, guess);
        int end = last.length;
        if (last[end - 4] != 'P' || last[end - 3] != 'A' || last[end - 2] != 'R' || last[end - 1] != '1') {
            String found = HexFormat.ofDelimiter(" ").formatHex(last, end - 4, end);
            throw new CorruptShardException(
                    key,
                    size - 4,
                    "not a Parquet file: it ends with " + found
                            + (found.equals("50 41 52 45") ? " ('PARE', an encrypted footer, which is not read)" : "")
                            + " (expected: 50 41 52 31, 'PAR1')");
        }
        long footerLength =
                ByteBuffer.wrap(last, end - 8, 4).order(ByteOrder.LITTLE_ENDIAN).getInt() & 0xFFFFFFFFL;
        if (footerLength == 0 || footerLength > size - 12) {
            throw new CorruptShardException(
                    key,
                    size - 8,
                    "footer length " + footerLength + " (expected: 1 to " + (size - 12) + ", within the file's " + size
                            + " bytes after the leading PAR1)");
        }
        int tailLength = (int) footerLength + 8;
        footerBytes.addAndGet(footerLength);
        byte[] tail;
        if (tailLength <= guess) {
            tail = Arrays.copyOfRange(last, guess - tailLength, guess);
        } else {
            tail = new byte[tailLength];
            byte[] rest = read(shard, size - tailLength, tailLength - guess);
            System.arraycopy(rest, 0, tail, 0, rest.length);
            System.arraycopy(last, 0, tail, rest.length, guess);
        }
        byte[] fileTail = guess == size ? last : tail; // the whole file: Hardwood checks the leading magic too
        long footerStart = size - tailLength;
        FileMetaData meta;
        FileSchema schema;
        try (ParquetFileReader parquet =
                ParquetFileReader.open(new RangeInputFile(key, size, fileTail, 0, null), Shared.CONTEXT)) {
            meta = parquet.getFileMetaData();
            schema = parquet.getFileSchema();
        } catch (IOException | RuntimeException e) {
            throw new CorruptShardException(
                    key, footerStart, "the footer does not parse: " + e + " (expected: a Parquet FileMetaData)", e);
        }
        List<ColumnSchema> columns = project(key, schema);
        return index(shard, footerStart, tail, meta, schema.getColumnCount(), columns);
    }

    private byte[] read(ObjectInfo shard, long offset, int length) throws IOException {
        footerRequests.incrementAndGet();
        try (Lease lease = cache.loaderSupport().readExtent(shard, offset, length)) {
            ByteBuffer bytes = lease.bytes();
            byte[] out = new byte[length];
            bytes.get(bytes.position(), out);
            return out;
        }
    }

    /** The projected leaf columns, checked to exist and to be flat columns of a type this format maps. */
    private List<ColumnSchema> project(String key, FileSchema schema) {
        List<String> names = new ArrayList<>();
        for (SchemaNode node : schema.getRootNode().children()) {
            names.add(node.name());
        }
        List<String> wanted = projection.isEmpty() ? names : projection;
        List<ColumnSchema> columns = new ArrayList<>(wanted.size());
        for (String name : wanted) {
            int at = names.indexOf(name);
            if (at < 0) {
                throw new IllegalArgumentException("column '" + name + "' of Parquet file '" + key + "': no such"
                        + " column (expected one of " + names + ")");
            }
            SchemaNode node = schema.getRootNode().children().get(at);
            if (node instanceof SchemaNode.GroupNode group) {
                throw new IllegalArgumentException("column '" + name + "' of Parquet file '" + key + "': a nested"
                        + " column (" + (group.isList() ? "a list" : group.isMap() ? "a map" : "a struct")
                        + "), which this format does not map to fields (expected: a flat column; project the flat"
                        + " columns with ParquetDataset.builder(...).columns(...))");
            }
            ColumnSchema column = schema.getColumn(name);
            if (column.maxRepetitionLevel() > 0) {
                throw new IllegalArgumentException("column '" + name + "' of Parquet file '" + key + "': a repeated"
                        + " column, which this format does not map to fields (expected: a flat column)");
            }
            switch (column.type()) {
                case BOOLEAN, INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY -> columns.add(column);
                case INT96 ->
                    throw new IllegalArgumentException("column '" + name + "' of Parquet file '" + key + "': physical"
                            + " type INT96 (a deprecated timestamp), which this format does not map (expected:"
                            + " BOOLEAN, INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY)");
            }
        }
        return columns;
    }

    private static ParquetIndex index(
            ObjectInfo shard, long footerStart, byte[] tail, FileMetaData meta, int leaves, List<ColumnSchema> columns)
            throws IOException {
        String key = shard.key();
        List<RowGroup> groups = meta.rowGroups();
        long[] firstRow = new long[groups.size() + 1];
        int[] number = new int[groups.size()];
        long[] start = new long[groups.size()];
        int[] length = new int[groups.size()];
        int n = 0;
        long rows = 0;
        for (int g = 0; g < groups.size(); g++) {
            RowGroup group = groups.get(g);
            if (group.numRows() < 0) {
                throw new CorruptShardException(
                        key, footerStart, "row group " + g + ": " + group.numRows() + " rows (expected: >= 0)");
            }
            if (group.numRows() == 0) {
                continue;
            }
            if (group.columns().size() != leaves) {
                throw new CorruptShardException(
                        key,
                        footerStart,
                        "row group " + g + ": " + group.columns().size() + " column chunks (expected: one per leaf"
                                + " column of the schema)");
            }
            long from = Long.MAX_VALUE;
            long to = Long.MIN_VALUE;
            for (ColumnSchema column : columns) {
                ColumnChunk chunk = group.columns().get(column.columnIndex());
                ColumnMetaData data = chunk.metaData();
                if (data == null
                        || !data.pathInSchema()
                                .elements()
                                .equals(column.fieldPath().elements())) {
                    throw new CorruptShardException(
                            key,
                            footerStart,
                            "row group " + g + ": chunk " + column.columnIndex() + " is "
                                    + (data == null ? "without metadata" : "of " + data.pathInSchema())
                                    + " (expected: column '" + column.name() + "')");
                }
                if (!CODECS.contains(data.codec())) {
                    throw new IOException("column '" + column.name() + "' of Parquet file '" + key + "', row group "
                            + g + ": codec " + data.codec() + " is not read (expected: UNCOMPRESSED, SNAPPY, GZIP or"
                            + " ZSTD)");
                }
                long chunkStart = chunk.chunkStartOffset();
                long chunkSize = data.totalCompressedSize();
                if (chunkStart < 4 || chunkSize < 0 || chunkStart > footerStart - chunkSize) {
                    throw new CorruptShardException(
                            key,
                            footerStart,
                            "row group " + g + ", column '" + column.name() + "': chunk [" + chunkStart + ", +"
                                    + chunkSize + ") (expected: between the leading PAR1 and the footer at "
                                    + footerStart + ")");
                }
                if (data.numValues() < 0) {
                    throw new CorruptShardException(
                            key,
                            footerStart,
                            "row group " + g + ", column '" + column.name() + "': " + data.numValues() + " values"
                                    + " (expected: >= 0)");
                }
                from = Math.min(from, chunkStart);
                to = Math.max(to, chunkStart + chunkSize);
            }
            if (columns.isEmpty() || to - from > Integer.MAX_VALUE - 8) {
                throw new CorruptShardException(
                        key,
                        footerStart,
                        "row group " + g + ": projected chunks of " + (to - from) + " bytes (expected: at most 2 GiB"
                                + " a row group, and at least one column)");
            }
            rows += group.numRows();
            if (rows > Integer.MAX_VALUE - 8) {
                throw new CorruptShardException(key, footerStart, rows + " rows (expected: below 2^31 in one file)");
            }
            number[n] = g;
            start[n] = from;
            length[n] = (int) (to - from);
            firstRow[++n] = rows;
        }
        if (meta.numRows() != rows) {
            throw new CorruptShardException(
                    key,
                    footerStart,
                    "the footer says " + meta.numRows() + " rows, its row groups " + rows + " (expected: equal)");
        }
        return new ParquetIndex(
                key,
                shard.size(),
                tail,
                columns,
                Arrays.copyOf(firstRow, n + 1),
                Arrays.copyOf(number, n),
                Arrays.copyOf(start, n),
                Arrays.copyOf(length, n));
    }

    // ------------------------------------------------------------------------------------------------------- decoding

    @Override
    public Map<String, ByteBuffer> decode(ShardIndex index, int sample, ByteBuffer extent) throws IOException {
        ParquetIndex file = (ParquetIndex) index;
        int group = file.groupOf(sample);
        DecodedGroup rows = decoded.get(file, group, extent);
        return rows.row((int) (sample - file.firstRow(group)));
    }

    /** Decodes one row group from its extent's bytes with Hardwood. */
    private DecodedGroup decodeGroup(ParquetIndex file, int group, ByteBuffer extent) throws IOException {
        String key = file.shard();
        int rows = file.rows(group);
        long start = file.extentStart(group);
        List<ColumnSchema> columns = file.columns();
        String[] names = columns.stream().map(ColumnSchema::name).toArray(String[]::new);
        DecodedGroup.Column[] out = new DecodedGroup.Column[columns.size()];
        DecodedGroup.Builder[] builders = new DecodedGroup.Builder[columns.size()];
        for (int c = 0; c < columns.size(); c++) {
            builders[c] = new DecodedGroup.Builder(columns.get(c).type(), rows);
        }
        try (ParquetFileReader parquet = ParquetFileReader.open(
                        new RangeInputFile(key, file.fileSize(), file.tail(), start, extent), Shared.CONTEXT);
                ColumnReaders readers = parquet.buildColumnReaders(ColumnProjection.columns(names))
                        .filter(groupRange(parquet.getFileMetaData(), file.rowGroup(group)))
                        .batchSize(Math.max(1, rows))
                        .build()) {
            int done = 0;
            while (readers.nextBatch()) {
                int n = readers.getRecordCount();
                if (n > rows - done) {
                    throw new CorruptShardException(
                            key,
                            start,
                            "row group " + file.rowGroup(group) + " decodes to more than its " + rows + " rows");
                }
                for (int c = 0; c < names.length; c++) {
                    ColumnReader reader = readers.getColumnReader(names[c]);
                    if (reader.getRecordCount() != n) {
                        throw new CorruptShardException(
                                key,
                                start,
                                "row group " + file.rowGroup(group) + ", column '" + names[c] + "': "
                                        + reader.getRecordCount() + " values in a batch of " + n + " rows");
                    }
                    builders[c].add(reader, n);
                }
                done += n;
            }
            if (done != rows) {
                throw new CorruptShardException(
                        key,
                        start,
                        "row group " + file.rowGroup(group) + " decodes to " + done + " rows (expected: the footer's "
                                + rows + ")");
            }
        } catch (CorruptShardException e) {
            throw e;
        } catch (IOException | RuntimeException e) {
            throw new CorruptShardException(
                    key,
                    start,
                    "row group " + file.rowGroup(group) + " (rows " + file.firstRow(group) + " to "
                            + (file.firstRow(group) + rows - 1) + ") does not decode: " + e
                            + " (expected: pages that decompress and decode to the footer's values)",
                    e);
        }
        for (int c = 0; c < out.length; c++) {
            out[c] = builders[c].build();
        }
        return new DecodedGroup(Collections.unmodifiableList(Arrays.asList(names)), out);
    }

    /** The predicate that keeps exactly row group {@code g}: its chunks' whole span (Hardwood keeps by midpoint). */
    private static RowGroupPredicate groupRange(FileMetaData meta, int g) {
        RowGroup group = meta.rowGroups().get(g);
        long from = Long.MAX_VALUE;
        long to = Long.MIN_VALUE;
        for (ColumnChunk chunk : group.columns()) {
            from = Math.min(from, chunk.chunkStartOffset());
            to = Math.max(to, chunk.chunkStartOffset() + chunk.metaData().totalCompressedSize());
        }
        return RowGroupPredicate.byteRange(from, to);
    }

    /** One decoded row group: per projected column, every row's value bytes and whether it is null. */
    record DecodedGroup(List<String> names, Column[] columns) {

        /** The fields of row {@code row}: slices of the decoded values, an absent field for a NULL. */
        Map<String, ByteBuffer> row(int row) {
            Map<String, ByteBuffer> fields = LinkedHashMap.newLinkedHashMap(columns.length);
            for (int c = 0; c < columns.length; c++) {
                Column column = columns[c];
                if (column.nulls != null && column.nulls.get(row)) {
                    continue;
                }
                int from = column.offsets[row];
                fields.put(
                        names.get(c),
                        ByteBuffer.wrap(column.data, from, column.offsets[row + 1] - from)
                                .slice()
                                .asReadOnlyBuffer());
            }
            return Collections.unmodifiableMap(fields);
        }

        /** {@return the heap bytes this group takes, roughly} */
        long bytes() {
            long sum = 64;
            for (Column c : columns) {
                sum += c.data.length + 4L * c.offsets.length + (c.nulls == null ? 0 : c.offsets.length / 8);
            }
            return sum;
        }

        /** One column's values, packed: row {@code i} is {@code data[offsets[i], offsets[i + 1])}. */
        record Column(byte[] data, int[] offsets, java.util.BitSet nulls) {}

        /** Packs a column's values batch by batch. */
        static final class Builder {
            private final dev.hardwood.metadata.PhysicalType type;
            private final int[] offsets;
            private final java.util.BitSet nulls = new java.util.BitSet();
            private final ByteBuffer scratch = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            private ByteBuffer data;
            private int rows;

            Builder(dev.hardwood.metadata.PhysicalType type, int rows) {
                this.type = type;
                this.offsets = new int[rows + 1];
                int width = width(type);
                this.data = ByteBuffer.allocate(width > 0 ? width * rows : Math.max(16, rows * 8))
                        .order(ByteOrder.LITTLE_ENDIAN);
            }

            private static int width(dev.hardwood.metadata.PhysicalType type) {
                return switch (type) {
                    case BOOLEAN -> 1;
                    case INT32, FLOAT -> 4;
                    case INT64, DOUBLE -> 8;
                    default -> 0;
                };
            }

            void add(ColumnReader reader, int n) {
                Validity validity = reader.getLeafValidity();
                switch (type) {
                    case BOOLEAN -> {
                        boolean[] v = reader.getBooleans();
                        for (int i = 0; i < n; i++) {
                            start(validity.isNull(i), 1).put((byte) (v[i] ? 1 : 0));
                        }
                    }
                    case INT32 -> {
                        int[] v = reader.getInts();
                        for (int i = 0; i < n; i++) {
                            start(validity.isNull(i), 4).putInt(v[i]);
                        }
                    }
                    case INT64 -> {
                        long[] v = reader.getLongs();
                        for (int i = 0; i < n; i++) {
                            start(validity.isNull(i), 8).putLong(v[i]);
                        }
                    }
                    case FLOAT -> {
                        float[] v = reader.getFloats();
                        for (int i = 0; i < n; i++) {
                            start(validity.isNull(i), 4).putFloat(v[i]);
                        }
                    }
                    case DOUBLE -> {
                        double[] v = reader.getDoubles();
                        for (int i = 0; i < n; i++) {
                            start(validity.isNull(i), 8).putDouble(v[i]);
                        }
                    }
                    default -> {
                        byte[][] v = reader.getBinaries();
                        for (int i = 0; i < n; i++) {
                            boolean isNull = validity.isNull(i) || v[i] == null;
                            start(isNull, isNull ? 0 : v[i].length).put(isNull ? new byte[0] : v[i]);
                        }
                    }
                }
            }

            /** Starts the next row: marks it null (no bytes, a scratch buffer to write to) or makes room for it. */
            private ByteBuffer start(boolean isNull, int width) {
                if (isNull) {
                    nulls.set(rows);
                }
                int need = isNull ? 0 : width;
                if (data.remaining() < need) {
                    long grown = Math.max(2L * data.capacity(), (long) data.position() + need);
                    ByteBuffer bigger = ByteBuffer.allocate((int) Math.min(Integer.MAX_VALUE - 8, grown))
                            .order(ByteOrder.LITTLE_ENDIAN);
                    data.flip();
                    bigger.put(data);
                    data = bigger;
                }
                rows++;
                offsets[rows] = data.position() + need;
                return isNull ? scratch.clear() : data;
            }

            Column build() {
                byte[] bytes = Arrays.copyOf(data.array(), data.position());
                return new Column(bytes, offsets, nulls.isEmpty() ? null : nulls);
            }
        }
    }
}
