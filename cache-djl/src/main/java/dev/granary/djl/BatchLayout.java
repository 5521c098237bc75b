// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.Batch;
import ai.djl.translate.Batchifier;
import dev.granary.loader.Collator;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Where a batch's arrays live in a staging buffer, and the two moves through it: {@link #collate} packs decoded items
 * into the buffer (worker threads), {@link #toBatch} makes the DJL arrays from it (the trainer's thread).
 *
 * <p>Array {@code a} occupies {@code [offset(a), offset(a) + batchSize × rowBytes(a))}, row {@code i} being item
 * {@code i}'s slot; regions start on {@link #ALIGNMENT}-byte boundaries (the buffer itself is page-aligned) so that
 * every array starts aligned for any element type and for vector loads. A batch of {@code n < batchSize} items uses
 * the first {@code n} rows of each region. Immutable and thread-safe.
 */
final class BatchLayout<T> implements Collator<T> {

    static final int ALIGNMENT = 64;

    /** One array of the batch: its per-item shape and type, the writer of an item's row, and its region. */
    record Array<T>(
            String role,
            int ordinal,
            Shape itemShape,
            DataType type,
            ArrayWriter<? super T> writer,
            long rowBytes,
            long offset) {

        Shape batchShape(int items) {
            long[] item = itemShape.getShape();
            long[] dims = new long[item.length + 1];
            dims[0] = items;
            System.arraycopy(item, 0, dims, 1, item.length);
            return new Shape(dims);
        }

        @Override
        public String toString() {
            return role + " array " + ordinal + " (" + itemShape + " " + type + " per item)";
        }
    }

    private final List<Array<T>> data;
    private final List<Array<T>> labels;
    private final List<Array<T>> all;
    private final int batchSize;
    private final long bytesPerBatch;

    /**
     * Lays the arrays out for batches of {@code batchSize} items.
     *
     * @throws IllegalArgumentException if an array's region would not fit a {@link ByteBuffer}
     */
    BatchLayout(List<Declared<T>> data, List<Declared<T>> labels, int batchSize) {
        this.batchSize = batchSize;
        List<Array<T>> d = new ArrayList<>();
        List<Array<T>> l = new ArrayList<>();
        long offset = 0;
        for (int pass = 0; pass < 2; pass++) {
            List<Declared<T>> declared = pass == 0 ? data : labels;
            for (int i = 0; i < declared.size(); i++) {
                Declared<T> a = declared.get(i);
                long rowBytes = a.shape().size() * a.type().getNumOfBytes();
                long regionBytes = rowBytes * batchSize;
                String role = pass == 0 ? "data" : "label";
                if (regionBytes > Integer.MAX_VALUE) {
                    throw new IllegalArgumentException(role + " array " + i + ": " + regionBytes + " bytes per batch ("
                            + batchSize + " × " + a.shape() + " " + a.type() + ") (expected: at most "
                            + Integer.MAX_VALUE + ", what an engine takes from one ByteBuffer; use a smaller batch)");
                }
                Array<T> array = new Array<>(role, i, a.shape(), a.type(), a.writer(), rowBytes, offset);
                (pass == 0 ? d : l).add(array);
                offset = align(offset + regionBytes);
            }
        }
        this.data = List.copyOf(d);
        this.labels = List.copyOf(l);
        List<Array<T>> both = new ArrayList<>(d);
        both.addAll(l);
        this.all = List.copyOf(both);
        this.bytesPerBatch = Math.max(1, offset);
    }

    /** An array as the builder declared it. */
    record Declared<T>(Shape shape, DataType type, ArrayWriter<? super T> writer) {}

    private static long align(long offset) {
        return (offset + ALIGNMENT - 1) & -ALIGNMENT;
    }

    /** {@return the staging buffer size a full batch needs} */
    long bytesPerBatch() {
        return bytesPerBatch;
    }

    int batchSize() {
        return batchSize;
    }

    /**
     * Zeroes each array's rows for these items, then has each array's writer fill its row of every item. Runs on a
     * loader worker thread.
     */
    @Override
    public long collate(List<T> items, MemorySegment staging) throws Exception {
        int n = items.size();
        if (n > batchSize) { // the loader never does this; a guard against writing past the regions
            throw new IllegalStateException("batch of " + n + " items (expected: at most " + batchSize + ")");
        }
        long end = 0;
        for (Array<T> a : all) {
            MemorySegment region = staging.asSlice(a.offset(), a.rowBytes() * n);
            region.fill((byte) 0);
            for (int i = 0; i < n; i++) {
                try {
                    a.writer().write(items.get(i), region.asSlice(a.rowBytes() * i, a.rowBytes()));
                } catch (Exception | Error e) {
                    throw new IllegalStateException(
                            "writing item " + i + " of the batch into " + a + " failed: " + e, e);
                }
            }
            end = a.offset() + region.byteSize();
        }
        return end;
    }

    /**
     * Makes a DJL batch from a collated Granary batch: one copy per array into memory the engine owns, through
     * {@code transfer}, in a sub-manager of {@code manager} that the DJL batch owns (closing the batch frees them).
     * Runs on the trainer's thread while the Granary batch's staging buffer is still valid.
     */
    Batch toBatch(dev.granary.loader.Batch<?> batch, NDManager manager, Transfer transfer, long batchesPerEpoch) {
        MemorySegment staging = batch.staging();
        int n = batch.size();
        NDManager owner = manager.newSubManager();
        try {
            NDList dataArrays = new NDList(data.size());
            for (Array<T> a : data) {
                dataArrays.add(array(a, staging, n, owner, transfer));
            }
            NDList labelArrays = new NDList(labels.size());
            for (Array<T> a : labels) {
                labelArrays.add(array(a, staging, n, owner, transfer));
            }
            int[] indices = batch.indices();
            List<Long> datasetIndices = new ArrayList<>(indices.length);
            for (int index : indices) {
                datasetIndices.add((long) index);
            }
            return new Batch(
                    owner,
                    dataArrays,
                    labelArrays,
                    n,
                    Batchifier.STACK,
                    Batchifier.STACK,
                    batch.index() + 1,
                    batchesPerEpoch,
                    datasetIndices);
        } catch (RuntimeException | Error e) {
            owner.close();
            throw e;
        }
    }

    private NDArray array(Array<T> a, MemorySegment staging, int n, NDManager owner, Transfer transfer) {
        ByteBuffer rows =
                staging.asSlice(a.offset(), a.rowBytes() * n).asByteBuffer().order(ByteOrder.nativeOrder());
        return transfer.make(owner, rows, a.batchShape(n), a.type());
    }

    @Override
    public String toString() {
        return "BatchLayout[" + all + ", " + batchSize + " items, " + bytesPerBatch + " bytes]";
    }
}
