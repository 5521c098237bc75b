// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.io.EOFException;
import java.nio.ByteBuffer;

/**
 * A {@link ShardReader} over bytes already in memory: a shard's header read in one request
 * ({@link ShardFormat#headerLength}), or a whole decoded shard ({@link EncodedShards}). Ranges are views.
 */
final class HeaderReader implements ShardReader {

    private final String shard;
    private final long size;
    private final ByteBuffer bytes;

    /**
     * @param shard the shard's key, for messages
     * @param size  the shard's size, which {@link #size()} reports
     * @param bytes the shard's first bytes (all of them, for a decoded shard), from position to limit
     */
    HeaderReader(String shard, long size, ByteBuffer bytes) {
        this.shard = shard;
        this.size = size;
        this.bytes = bytes.slice();
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public ByteBuffer read(long offset, int length) throws EOFException {
        if (offset < 0 || length < 0 || offset > bytes.remaining() - (long) length) {
            throw new EOFException("range [" + offset + ", +" + length + ") of shard '" + shard + "': past the "
                    + bytes.remaining() + " bytes read for its index (expected: within them)");
        }
        return bytes.slice((int) offset, length).asReadOnlyBuffer();
    }
}
