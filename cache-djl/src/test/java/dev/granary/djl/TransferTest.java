// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.BaseNDManager;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The ways rows get into the engine, on DJL's PyTorch CPU engine: whatever the transfer, the array is a copy that the
 * staging memory no longer affects — and the probe picks the one-memcpy transfer, since PyTorch's
 * {@code create(ByteBuffer)} wraps direct memory in place on the CPU.
 */
class TransferTest {

    private final NDManager manager = NDManager.newBaseManager();

    @AfterEach
    void close() {
        manager.close();
    }

    private static ByteBuffer rows(float... values) {
        ByteBuffer b = ByteBuffer.allocateDirect(4 * values.length).order(ByteOrder.nativeOrder());
        b.asFloatBuffer().put(values);
        return b;
    }

    @Test
    void onPyTorchCpuCreateWrapsDirectMemorySoTheProbeCopiesIntoTheEnginesOwnMemory() {
        ByteBuffer staging = rows(1, 2, 3, 4);
        NDArray wrapped = manager.create(staging, new Shape(2, 2), DataType.FLOAT32);
        staging.putFloat(0, 9);
        assertEquals(9f, wrapped.toFloatArray()[0], "PyTorch on the CPU wraps a direct buffer in place");
        assertEquals(Transfer.WRITE_INTO_VIEW, Transfer.probe(manager));
    }

    @Test
    void everyCopyingTransferLeavesTheStagingMemoryBehind() {
        for (Transfer transfer : new Transfer[] {Transfer.WRITE_INTO_VIEW, Transfer.DUPLICATE_WRAPPER}) {
            ByteBuffer staging = rows(1, 2, 3, 4, 5, 6);
            try (NDManager owner = manager.newSubManager()) {
                NDArray array = transfer.make(owner, staging, new Shape(3, 2), DataType.FLOAT32);
                for (int i = 0; i < 6; i++) {
                    staging.putFloat(4 * i, -1); // the loader reuses the buffer for another batch
                }
                assertEquals(new Shape(3, 2), array.getShape(), transfer.name());
                assertEquals(DataType.FLOAT32, array.getDataType(), transfer.name());
                assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, array.toFloatArray(), transfer.name());
                assertEquals(owner, array.getManager(), transfer.name());
            }
            assertEquals(0, ((BaseNDManager) manager).getManagedArrays().size(), transfer.name());
        }
    }
}
