// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A shard's bytes as a {@link ShardFormat#scan} reads them: ranges, read in large cached parts underneath, the next
 * part fetched while the current one is parsed. Reads should move forward through the shard (a range before the
 * current part reads that part again); a range inside one part is a view of it, a range across a part boundary a
 * copy. Not thread-safe: one scan uses it.
 */
public interface ShardReader {

    /** {@return the shard's size in bytes} */
    long size();

    /**
     * Reads a range of the shard.
     *
     * @param offset the first byte, {@code >= 0}
     * @param length the number of bytes, {@code >= 0}
     * @return the bytes, from the buffer's position to its limit; read-only, valid until the next call
     * @throws java.io.EOFException if the range ends past the shard's size
     * @throws IOException          if reading fails
     */
    ByteBuffer read(long offset, int length) throws IOException;
}
