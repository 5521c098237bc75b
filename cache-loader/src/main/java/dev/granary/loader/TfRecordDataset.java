// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * The records of TensorFlow TFRecord files, one sample per record, read through a {@link TieredCache}: the
 * {@link ShardedDataset} of the TFRecord format, so every loader feature (shard-block orders, files read whole in
 * parts, stable partitions, resume, the dry run, pre-staging) applies.
 *
 * {@snippet :
 * Dataset records = TfRecordDataset.of(cache, List.of("tfr/train-00000.tfrecord", "tfr/train-00001.tfrecord"));
 * DataLoader<Example> loader = DataLoader.builder(records, sample -> {
 *     ByteBuffer image = sample.fields().get("image/encoded");   // a bytes_list feature: its first value
 *     ByteBuffer label = sample.fields().get("image/class/label"); // an int64_list: little-endian int64s
 *     return decode(image, label.order(ByteOrder.LITTLE_ENDIAN).getLong(0));
 * }).shuffle(Shuffle.shardBlocks(42L, 8)).build();
 * }
 *
 * <ul>
 *   <li><b>Framing is checked</b> on every read: the masked CRC32C of each record's length and of its data. A record
 *       that fails is a {@link CorruptShardException} naming the file and the offset, never wrong bytes.</li>
 *   <li><b>Indexes</b>: a DALI {@code tfrecord2idx} index beside a file ({@code train-00000.idx} for
 *       {@code train-00000.tfrecord}, or {@code train-00000.tfrecord.idx}) is read in one request; one that does not
 *       cover the file record by record is stale (logged; the file is scanned). Without one, the file is scanned
 *       once, in large cached parts. {@link #writeIndex} writes one ({@code granary index --format tfrecord}).</li>
 *   <li><b>Fields</b>: {@link Sample#bytes()} is the record's data; for a {@code tf.train.Example},
 *       {@link Sample#fields()} maps each feature's name to a {@code bytes_list}'s first value (raw), an
 *       {@code int64_list} as little-endian int64s, or a {@code float_list} as little-endian float32s. A record that is
 *       not an Example has one field, {@code record}.</li>
 *   <li><b>Compressed files</b> (GZIP, ZLIB) are refused with a clear error, not read: decompress them first.</li>
 * </ul>
 *
 * <p>Stateless: the datasets it makes are immutable and thread-safe.
 */
public final class TfRecordDataset {

    private TfRecordDataset() {}

    /**
     * Indexes TFRecord files (see the class comment).
     *
     * @param cache     the cache to read through
     * @param fileKeys  the files' object keys, each once
     * @return the dataset: one sample per record, file by file in the order given, then in file order
     * @throws IllegalArgumentException if the cache or list is null or empty, a key is invalid or repeated, or the
     *                                  files hold no record
     * @throws CorruptShardException    if a file is not a valid TFRecord file, or compressed (names file and offset),
     *                                  or an index file is damaged
     * @throws NoSuchObjectException    if a file does not exist
     * @throws IOException              if the origin fails
     */
    public static ShardedDataset of(TieredCache cache, List<String> fileKeys) throws IOException {
        return of(cache, fileKeys, progress -> {});
    }

    /**
     * Indexes TFRecord files as {@link #of(TieredCache, List)} does, reporting each file as it is done.
     *
     * @param cache    the cache to read through
     * @param fileKeys the files' object keys, each once
     * @param listener called once per file indexed, never concurrently
     * @return the dataset
     * @throws IllegalArgumentException as {@link #of(TieredCache, List)}, or if {@code listener} is null
     * @throws CorruptShardException    as {@link #of(TieredCache, List)}
     * @throws NoSuchObjectException    if a file does not exist
     * @throws IOException              if the origin fails
     */
    public static ShardedDataset of(TieredCache cache, List<String> fileKeys, Consumer<IndexingProgress> listener)
            throws IOException {
        return ShardedDataset.of(cache, fileKeys, format(), listener);
    }

    /** {@return the TFRecord format, for {@link ShardedDataset#of(TieredCache, List, ShardFormat)}} */
    public static ShardFormat format() {
        return TfRecordFormat.INSTANCE;
    }

    /**
     * Writes the DALI index of a TFRecord file beside it: {@code <file minus its extension>.idx}, one line
     * {@code "<offset> <framed length>"} per record, as DALI's {@code tfrecord2idx} writes it. The file is scanned in
     * large cached parts, its framing checked.
     *
     * @param cache   the cache over the file's origin, which must support writes
     * @param fileKey the file's key
     * @return the written index file's key, size and version
     * @throws IllegalArgumentException      if the cache is null or the key invalid
     * @throws CorruptShardException         if the file is not a valid, uncompressed TFRecord file
     * @throws NoSuchObjectException         if the file does not exist
     * @throws UnsupportedOperationException if the origin cannot write objects
     * @throws IOException                   if the origin fails
     */
    public static ObjectInfo writeIndex(TieredCache cache, String fileKey) throws IOException {
        Dataset.checkCache(cache);
        ObjectDataset.of(cache, List.of(fileKey == null ? "" : fileKey)); // validates the key
        ObjectInfo info = cache.stat(fileKey);
        ShardIndex index;
        try (PartReader reader =
                new PartReader(cache.loaderSupport(), info, ShardParts.DEFAULT_PART_SIZE, new AtomicLong())) {
            index = TfRecordFormat.INSTANCE.scan(info, reader);
        }
        StringBuilder text = new StringBuilder(index.size() * 12);
        for (int i = 0; i < index.size(); i++) {
            text.append(index.start(i)).append(' ').append(index.length(i)).append('\n');
        }
        return cache.loaderSupport()
                .writeObject(
                        TfRecordFormat.INSTANCE.indexKeys(fileKey).getFirst(),
                        text.toString().getBytes(StandardCharsets.US_ASCII));
    }
}
