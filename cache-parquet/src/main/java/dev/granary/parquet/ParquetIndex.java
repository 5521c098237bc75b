// SPDX-License-Identifier: Apache-2.0
package dev.granary.parquet;

import dev.granary.loader.ShardIndex;
import dev.hardwood.schema.ColumnSchema;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One Parquet file's index, made from its footer: its rows numbered in file order, and per row group the extent the
 * rows of that group share — the byte span of the projected columns' chunks, which Hardwood reads in one range. Also
 * what decoding needs again without a request: the footer's bytes (with the 8-byte tail) and the projected columns.
 *
 * <p>Immutable and thread-safe. Cost: the footer's bytes plus 32 bytes a row group; nothing per row.
 */
final class ParquetIndex implements ShardIndex {

    private final String shard;
    private final long fileSize;
    /** The file's last {@code footer length + 8} bytes: the Thrift footer, its length and {@code PAR1}. */
    private final byte[] tail;
    /** The projected leaf columns, in projection order. */
    private final List<ColumnSchema> columns;
    /** Row group {@code g} holds rows {@code [firstRow[g], firstRow[g + 1])}; one more entry for the total. */
    private final long[] firstRow;
    /** The row group's number in the file (row groups without rows are left out of these arrays). */
    private final int[] rowGroup;
    /** The projected chunks' span: the extent of every row of the group. */
    private final long[] extentStart;

    private final int[] extentLength;

    ParquetIndex(
            String shard,
            long fileSize,
            byte[] tail,
            List<ColumnSchema> columns,
            long[] firstRow,
            int[] rowGroup,
            long[] extentStart,
            int[] extentLength) {
        this.shard = Objects.requireNonNull(shard, "shard");
        this.fileSize = fileSize;
        this.tail = tail;
        this.columns = List.copyOf(columns);
        this.firstRow = firstRow;
        this.rowGroup = rowGroup;
        this.extentStart = extentStart;
        this.extentLength = extentLength;
    }

    /** {@return the file's key} */
    String shard() {
        return shard;
    }

    long fileSize() {
        return fileSize;
    }

    /** {@return the footer's bytes, with the 8-byte tail; not to be modified} */
    byte[] tail() {
        return tail;
    }

    List<ColumnSchema> columns() {
        return columns;
    }

    /** {@return the number of row groups with rows} */
    int groups() {
        return rowGroup.length;
    }

    /** {@return the group ({@code 0 <= g < groups()}) holding row {@code sample}} */
    int groupOf(int sample) {
        Objects.checkIndex(sample, size());
        int g = Arrays.binarySearch(firstRow, sample);
        if (g < 0) {
            return -g - 2;
        }
        while (g + 1 < firstRow.length && firstRow[g + 1] == sample) {
            g++;
        }
        return g;
    }

    long firstRow(int group) {
        return firstRow[group];
    }

    int rows(int group) {
        return (int) (firstRow[group + 1] - firstRow[group]);
    }

    /** {@return the row group's number in the file's footer} */
    int rowGroup(int group) {
        return rowGroup[group];
    }

    long extentStart(int group) {
        return extentStart[group];
    }

    int extentLength(int group) {
        return extentLength[group];
    }

    @Override
    public int size() {
        return (int) firstRow[firstRow.length - 1];
    }

    @Override
    public long start(int sample) {
        return extentStart[groupOf(sample)];
    }

    @Override
    public int length(int sample) {
        return extentLength[groupOf(sample)];
    }

    @Override
    public String toString() {
        return "ParquetIndex[" + shard + ", " + size() + " rows in " + rowGroup.length + " row groups, "
                + columns.size() + " columns]";
    }
}
