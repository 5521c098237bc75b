// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * How an array's rows get from a staging buffer into memory an engine owns, in one copy. Which one an engine and
 * device need is found by {@link #probe(NDManager)} with a few bytes, not assumed from the engine's name.
 */
enum Transfer {

    /**
     * {@code NDManager.create(ByteBuffer, Shape, DataType)} copies the buffer into the engine: that is the copy (for
     * PyTorch on a GPU, the host-to-device transfer).
     */
    CREATE_COPIES {
        @Override
        NDArray make(NDManager owner, ByteBuffer rows, Shape shape, DataType type) {
            return owner.create(rows, shape, type);
        }
    },

    /**
     * {@code create(ByteBuffer, …)} would wrap the buffer in place (PyTorch on the CPU keeps a reference to it), but
     * the engine gives a writable direct view of an array's own memory ({@code NDArray.toByteBuffer(true)}): the
     * array is allocated by the engine, uninitialised, and the rows are copied into it with one {@code memcpy} on the
     * caller's thread. Cheaper than {@link #DUPLICATE_WRAPPER}, whose copy in the engine may wake the engine's
     * intra-op threads.
     */
    WRITE_INTO_VIEW {
        @Override
        NDArray make(NDManager owner, ByteBuffer rows, Shape shape, DataType type) {
            NDArray array = owner.create(shape, type);
            ByteBuffer view = array.toByteBuffer(true);
            if (!view.isDirect() || view.isReadOnly() || view.remaining() != rows.remaining()) {
                array.close(); // not the array's own memory after all (the engine made it otherwise): copy in it
                return DUPLICATE_WRAPPER.make(owner, rows, shape, type);
            }
            MemorySegment.ofBuffer(view).copyFrom(MemorySegment.ofBuffer(rows));
            return array;
        }
    },

    /**
     * {@code create(ByteBuffer, …)} wraps the buffer in place and the engine gives no writable view: the wrapper is
     * duplicated inside the engine ({@code NDArray.duplicate()}) and closed at once.
     */
    DUPLICATE_WRAPPER {
        @Override
        NDArray make(NDManager owner, ByteBuffer rows, Shape shape, DataType type) {
            NDArray wrapper = owner.create(rows, shape, type);
            try {
                return wrapper.duplicate();
            } finally {
                wrapper.close();
            }
        }
    };

    /**
     * Makes an array owned by {@code owner}'s engine holding a copy of {@code rows}, which it never refers to after
     * returning.
     */
    abstract NDArray make(NDManager owner, ByteBuffer rows, Shape shape, DataType type);

    /** Finds the transfer {@code manager}'s engine and device need, with arrays of a few bytes. */
    static Transfer probe(NDManager manager) {
        try (NDManager scratch = manager.newSubManager()) {
            ByteBuffer probe = ByteBuffer.allocateDirect(8);
            probe.put(0, (byte) 1);
            NDArray created = scratch.create(probe, new Shape(8), DataType.INT8);
            probe.put(0, (byte) 2);
            if (created.toByteArray()[0] != 2) {
                return CREATE_COPIES;
            }
            NDArray own = scratch.create(new Shape(8), DataType.INT8);
            ByteBuffer view;
            try {
                view = own.toByteBuffer(true);
            } catch (UnsupportedOperationException | IllegalStateException e) {
                return DUPLICATE_WRAPPER; // an engine without writable views: copy through the engine instead
            }
            if (view == null || !view.isDirect() || view.isReadOnly() || view.remaining() != 8) {
                return DUPLICATE_WRAPPER;
            }
            for (int i = 0; i < 8; i++) {
                view.put(i, (byte) (10 + i));
            }
            byte[] seen = own.toByteArray();
            for (int i = 0; i < 8; i++) {
                if (seen[i] != 10 + i) {
                    return DUPLICATE_WRAPPER;
                }
            }
            return WRITE_INTO_VIEW;
        }
    }
}
