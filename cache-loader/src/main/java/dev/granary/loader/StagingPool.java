// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.internal.PageLocker;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A loader's reusable staging buffers: a fixed number of off-heap buffers of one size, optionally page-locked,
 * handed to the collator and back. Enough of them that a worker never waits for one: the batches in the prefetch
 * queue, the one the trainer holds and one being collated.
 */
final class StagingPool implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(StagingPool.class.getName());

    private final Arena arena = Arena.ofShared();
    private final ArrayBlockingQueue<MemorySegment> free;
    private final long bytes;
    private final String pinning;

    StagingPool(int buffers, long bytes, boolean pinned) {
        this.free = new ArrayBlockingQueue<>(buffers);
        this.bytes = bytes;
        String outcome = pinned ? "locked" : "not requested";
        for (int i = 0; i < buffers; i++) {
            MemorySegment buffer = arena.allocate(bytes, 4096);
            if (pinned) {
                PageLocker.Outcome locked = PageLocker.lock(buffer);
                if (!locked.locked()) {
                    outcome = locked.message();
                }
            }
            free.add(buffer);
        }
        this.pinning = outcome;
        if (pinned && !outcome.equals("locked")) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "loader staging buffers (" + buffers + " x " + bytes + " bytes) are not page-locked: " + outcome);
        }
    }

    /** Takes a free buffer; there is always one unless buffers leaked, which fails the batch rather than hang. */
    MemorySegment acquire() throws InterruptedException {
        MemorySegment buffer = free.poll(30, TimeUnit.SECONDS);
        if (buffer == null) {
            throw new IllegalStateException("no staging buffer free after 30 s (expected: one of "
                    + free.remainingCapacity() + " back from the trainer)");
        }
        return buffer;
    }

    void release(MemorySegment buffer) {
        free.offer(buffer);
    }

    long bufferBytes() {
        return bytes;
    }

    /** {@return "locked", "not requested", or why the OS refused to lock the buffers} */
    String pinning() {
        return pinning;
    }

    @Override
    public void close() {
        arena.close();
    }
}
