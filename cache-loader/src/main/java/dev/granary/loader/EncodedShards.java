// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.ObjectInfo;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A {@link ShardFormat} whose shards may be stored encoded — compressed as one stream (MDS {@code .mds.zstd}) — so that
 * a sample is an extent of the decoded shard, not of the object (docs/decisions/0024-compressed-shards.md). The
 * dataset then plans, indexes and reads such a shard in decoded coordinates: its index is scanned from the decoded
 * bytes, its parts and samples are slices of them, and the stored object is read whole, through the cache, when the
 * shard is decoded. Package-private: the first step of decision 0022's unit plan, made for one format.
 */
interface EncodedShards {

    /**
     * {@return the size of the shard once decoded, or {@code -1} if it is stored plain (its samples are extents of the
     * object)}
     *
     * @param stored the stored object, as listed
     * @throws CorruptShardException if the stored object does not match what the format expects of it (its size)
     */
    long decodedSize(ObjectInfo stored) throws CorruptShardException;

    /**
     * Decodes a stored shard whole, checking whatever the format can check (frames, sizes, hashes).
     *
     * @param stored the stored object
     * @param bytes  all its bytes (read-only, valid during the call)
     * @return exactly {@link #decodedSize} bytes
     * @throws CorruptShardException if the bytes do not decode to what the format expects (names the shard)
     * @throws IOException           if decoding fails otherwise (a codec missing from the class path)
     */
    ByteBuffer decode(ObjectInfo stored, ByteBuffer bytes) throws IOException;
}
