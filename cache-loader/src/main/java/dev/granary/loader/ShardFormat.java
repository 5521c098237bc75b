// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.ObjectInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

/**
 * How the samples of a shard — one object holding many samples — sit in its bytes: the contract a shard format
 * implements so that a {@link ShardedDataset} reads it. A format answers three questions and nothing else:
 * <ol>
 *   <li><b>Where are the samples?</b> From an index file beside the shard ({@link #indexKeys}, {@link #readIndex}),
 *       one small read; or from one sequential read of the shard itself ({@link #scan}), whose parts stay in the cache
 *       so that a first epoch reading the shard in parts finds them there.</li>
 *   <li><b>Which bytes does a sample need?</b> One extent of the shard, {@code [start, start + length)}
 *       ({@link ShardIndex}).</li>
 *   <li><b>What are its fields?</b> {@link #decode} turns exactly those bytes into named buffers.</li>
 * </ol>
 * Everything above it — listing and indexing shards in parallel, versions pinned, the orders (shard blocks, stable
 * partitions), reading shards whole in parts or sample by sample, the exact dry run, resume, pre-staging and the tiers'
 * epoch-aware policy — is format-blind: a format gets all of it by implementing this interface. The built-in formats
 * are WebDataset tar shards ({@link WebDataset}); {@code docs/extending.md} shows a format written from scratch.
 *
 * <p>Implementations are stateless (or immutable) and thread-safe: indexing calls {@link #readIndex} and
 * {@link #scan} for many shards at once, and the loader's workers call {@link #decode} concurrently.
 */
public interface ShardFormat {

    /** {@return a short name for messages and stats, such as {@code "webdataset"} or {@code "tfrecord"}} */
    String name();

    /**
     * {@return the keys of the index files that may lie beside a shard, in order of preference} The dataset learns from
     * one listing of the shards' directory which of them exist, and reads the first that does with {@link #readIndex}.
     * Default: none, every shard is {@linkplain #scan scanned}.
     *
     * @param shardKey the shard's object key
     */
    default List<String> indexKeys(String shardKey) {
        return List.of();
    }

    /**
     * Builds a shard's index from an index file that lies beside it.
     *
     * @param shard the shard's key, size and version, as listed
     * @param index the index file's key, size and version, as listed
     * @param bytes the index file's bytes (read-only, valid during the call)
     * @return the shard's samples
     * @throws StaleIndexException   if the index file does not describe this shard's bytes (written for another size,
     *                               or in a version of the format this code does not know): the dataset logs the
     *                               exception's message as a warning, reports it in {@link IndexingProgress#note()},
     *                               and {@linkplain #scan scans} the shard instead
     * @throws CorruptShardException if the index file is damaged (it names the index and the shard)
     * @throws IOException           if it cannot be read otherwise
     */
    default ShardIndex readIndex(ObjectInfo shard, ObjectInfo index, ByteBuffer bytes)
            throws StaleIndexException, IOException {
        throw new StaleIndexException("format '" + name() + "' reads no index file (" + index.key() + ")");
    }

    /**
     * {@return how many bytes at the start of a shard {@link #scan} reads, when the format knows it before reading, or
     * {@code -1}} A format whose index is a header of known length (MDS: a sample count and an offset table whose size
     * {@code index.json} gives) returns it, and the dataset serves {@link #scan} from one read of exactly those bytes
     * — one small request per shard — instead of the shard's large parts; a read past them is an
     * {@link java.io.EOFException}. Default {@code -1}: scanned in parts.
     *
     * @param shard the shard's key, size and version, as listed
     */
    default long headerLength(ObjectInfo shard) {
        return -1;
    }

    /**
     * Builds a shard's index by reading its bytes once, from the start, in order: what indexing does for a shard with
     * no (usable) index file. {@code reader} reads the shard in large parts that are cached, so the bytes read here are
     * not read again by a first epoch that reads the shard in parts.
     *
     * @param shard  the shard's key, size and version
     * @param reader the shard's bytes
     * @return the shard's samples
     * @throws CorruptShardException if the shard is not valid in this format (it names the shard and the offset)
     * @throws IOException           if reading fails
     */
    ShardIndex scan(ObjectInfo shard, ShardReader reader) throws IOException;

    /**
     * Decodes one sample from exactly the bytes of its extent.
     *
     * @param index  the index of the sample's shard, as {@link #readIndex} or {@link #scan} made it
     * @param sample the sample's number in that shard, {@code 0 <= sample < index.size()}
     * @param extent the sample's bytes, from its position to its limit (do not move its position); read-only, valid
     *               only until the decoder of the sample returns
     * @return the sample's fields by name, in the format's order: slices of {@code extent} (zero-copy) or buffers of
     *     the
     *     format's own; one field for a format whose sample is one record
     * @throws CorruptShardException if the bytes are not a valid sample (a checksum that fails, framing that does not
     *                               match the index): never wrong bytes
     * @throws IOException           if decoding fails otherwise
     */
    Map<String, ByteBuffer> decode(ShardIndex index, int sample, ByteBuffer extent) throws IOException;

    /**
     * {@return what {@link Sample#bytes()} gives for a sample that has a whole besides its fields}: a TFRecord's record
     * (its features are the fields), a token window. Called after {@link #decode} succeeded on the same bytes. Default
     * {@code null}: {@code bytes()} is then the sample's one field, and refused for a sample of several.
     *
     * @param index  the index of the sample's shard
     * @param sample the sample's number in that shard
     * @param extent the sample's bytes, as for {@link #decode}
     * @throws IOException if it cannot be made
     */
    default ByteBuffer bytes(ShardIndex index, int sample, ByteBuffer extent) throws IOException {
        return null;
    }

    /**
     * An index file that does not describe its shard's bytes (stale, or of a version this code does not read): not
     * damage, and not a failure — the shard is scanned instead. The message says which index, which shard and why,
     * for the warning the dataset logs.
     */
    final class StaleIndexException extends Exception {

        private static final long serialVersionUID = 1L;

        /**
         * Makes one.
         *
         * @param message which index, which shard, and why it does not apply
         */
        public StaleIndexException(String message) {
            super(message);
        }
    }
}
