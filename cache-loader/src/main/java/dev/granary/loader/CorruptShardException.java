// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.io.IOException;
import java.util.Objects;

/**
 * A WebDataset tar shard that cannot be indexed: a damaged or truncated header, a member whose data runs past the end
 * of the shard, a malformed PAX record, a numeric field that is neither octal nor base-256, two members giving one
 * sample the same field, members of one sample that are not adjacent, a construct Granary refuses (sparse members,
 * metadata larger than 1 MiB), a damaged index file ({@code <shard>.gidx}), or a sample whose bytes do not match the
 * CRC32C its index file records.
 *
 * <p>The exception names the shard and the byte offset where the problem was found — for header problems the offset
 * of that header, for data problems the offset of the header that describes the data — so that the damage can be
 * inspected with {@code dd if=SHARD bs=1 skip=OFFSET count=512 | xxd}. Immutable, like any exception that is not
 * mutated after construction.
 */
public final class CorruptShardException extends IOException {

    private static final long serialVersionUID = 1L;

    /** The shard's name, as given to the indexer. */
    private final String shard;

    /** The byte offset in the shard where the problem was found. */
    private final long offset;

    /**
     * Creates an exception with the message {@code "shard '<shard>' at offset <offset>: <problem>"}.
     *
     * @param shard   the shard's name (typically its key in the cache, e.g. {@code "shards/000001.tar"})
     * @param offset  the byte offset in the shard where the problem was found
     * @param problem what is wrong, in the form {@code "<what>: <value> (expected: <constraint>)"}
     * @throws NullPointerException if {@code shard} or {@code problem} is null
     */
    public CorruptShardException(String shard, long offset, String problem) {
        this(shard, offset, problem, null);
    }

    /**
     * Creates an exception with the message {@code "shard '<shard>' at offset <offset>: <problem>"} and a cause, e.g.
     * the {@link java.io.EOFException} of a read that ran past the end of the shard.
     *
     * @param shard   the shard's name (typically its key in the cache, e.g. {@code "shards/000001.tar"})
     * @param offset  the byte offset in the shard where the problem was found
     * @param problem what is wrong, in the form {@code "<what>: <value> (expected: <constraint>)"}
     * @param cause   the exception that revealed the problem, or null
     * @throws NullPointerException if {@code shard} or {@code problem} is null
     */
    public CorruptShardException(String shard, long offset, String problem, Throwable cause) {
        super(
                "shard '" + Objects.requireNonNull(shard, "shard") + "' at offset " + offset + ": "
                        + Objects.requireNonNull(problem, "problem"),
                cause);
        this.shard = shard;
        this.offset = offset;
    }

    /**
     * Creates an exception about something that belongs to a shard rather than a place in it — its index file — with
     * a message of its own that names both; {@link #offset()} is then {@code -1}.
     *
     * @param shard   the shard's name
     * @param message the whole message, naming the shard and what to do
     * @param cause   the exception that revealed the problem, or null
     */
    CorruptShardException(String shard, String message, Throwable cause) {
        super(Objects.requireNonNull(message, "message"), cause);
        this.shard = Objects.requireNonNull(shard, "shard");
        this.offset = -1;
    }

    /** {@return the name of the shard that is corrupt} */
    public String shard() {
        return shard;
    }

    /** {@return the byte offset in the shard where the problem was found, or -1 if the problem is its index file} */
    public long offset() {
        return offset;
    }
}
