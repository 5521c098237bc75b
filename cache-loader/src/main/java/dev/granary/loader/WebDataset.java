// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * The samples inside WebDataset tar shards: members are grouped into samples by basename with fields by extension,
 * and a sample is read as one ranged read of its own bytes — never the whole shard.
 *
 * <p>The convention is webdataset's: a member's sample key is its path up to the first dot of its last path
 * component, the rest is the field name ({@code train/n0153.seg.png} → sample {@code train/n0153}, field
 * {@code seg.png}); consecutive members with one key form one sample, and a key whose members are not adjacent is
 * refused ({@link CorruptShardException}: one key never names two samples of a shard). Shards are plain tar as real
 * tools write them: ustar, GNU (long names) and PAX (Python's {@code tarfile} default, webdataset's
 * {@code ShardWriter}); directories, links and other non-file members are skipped, as are files without an extension.
 *
 * <h2>Indexing, and what it costs</h2>
 * {@link #of} first lists the shards' directories (one request per 1 000 objects, instead of one per shard) to learn
 * each shard's size and version and whether an index file {@code <shard>.gidx} lies beside it
 * ({@link ShardWriter} writes one; {@link #writeIndex} writes one for a shard another tool made; the format is in
 * {@code docs/shard-index.md}). Then, shard by shard in parallel:
 * <ul>
 *   <li>with an index file: one read of the index — a shard costs one small request;</li>
 *   <li>without one (GNU tar, Python {@code tarfile}, webdataset's writer): the shard is read in large sequential
 *       parts (8 MiB each, cut at fixed offsets) and its headers parsed from
 *       them. The parts are cached as extents, so an epoch that streams the shard finds them in the cache.</li>
 * </ul>
 * Progress can be followed with {@link #of(TieredCache, List, Consumer)}.
 *
 * <h2>Index files and their shards</h2>
 * An index records the size and (when known) the version of the shard it was written for, and the CRC32C of every
 * sample's bytes. Its shard must not be read with it once rewritten:
 * <ul>
 *   <li>another size than the shard's: the index is stale; a warning names shard and sizes, and the shard is scanned
 *       instead;</li>
 *   <li>the same size and the recorded version equals the shard's: the index is trusted;</li>
 *   <li>the same size, and no version recorded (as {@link ShardWriter} writes, not knowing what version an upload
 *       will get) or another one: the index is <em>unconfirmed</em>, and every sample read is checked against its
 *       CRC32C — a mismatch fails with a {@link CorruptShardException} naming shard, sample and offset, never
 *       wrong bytes;</li>
 *   <li>a damaged index (bad magic, bad checksum, truncated, offsets past the shard) fails {@link #of} with a
 *       {@link CorruptShardException} naming index and shard. The index's own checksum failed, so the index file
 *       is what is damaged; once the shard is checked against its source, {@link #writeIndex} builds a new one.</li>
 * </ul>
 *
 * <h2>Versions</h2>
 * Each shard is indexed at the version the listing reported (S3 ETag, GCS generation, POSIX size+mtime+inode), and
 * every later read of it is pinned to that version
 * ({@link dev.granary.LoaderSupport#readExtent(dev.granary.ObjectInfo, long, int)}): cached samples of that version
 * keep being served, and a sample that must come from the origin after the shard was rewritten fails its batch with an
 * {@link dev.granary.ObjectChangedException} — the index's offsets are never applied to other bytes. Index the shards
 * again to pick up a new version.
 *
 * <h2>Memory</h2>
 * Each shard's index is held in flat arrays — extents, CRCs, keys as one UTF-8 byte array, fields as name ids into the
 * shard's table of field names — about 44 bytes per two-field sample plus its key's bytes. Build it once and reuse it
 * across epochs and loaders. Immutable and thread-safe.
 *
 * <p>A WebDataset is the {@link ShardedDataset} of the tar format ({@code TarFormat}): everything the loader does with
 * shards, it does through that class.
 */
public final class WebDataset extends ShardedDataset {

    /** The largest sample extent: what one buffer can hold. */
    static final int MAX_SAMPLE_BYTES = ShardedDataset.MAX_SAMPLE_BYTES;

    private WebDataset(Indexed indexed) {
        super(indexed);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Indexing

    /**
     * Indexes tar shards (see the class comment): lists their directories, then reads each shard's index file, or
     * scans the shard in large parts where it has none, in parallel over the shards. Samples are numbered shard by
     * shard, in the order given, then in tar order.
     *
     * @param cache     the cache to read through
     * @param shardKeys the shards' object keys, each once
     * @return the dataset
     * @throws IllegalArgumentException if the cache or list is null or empty, a key is invalid or repeated, or the
     *                                  shards hold no sample
     * @throws CorruptShardException    if a shard is not a valid tar (bad checksum, truncated; names shard and
     *                                  offset), two members of a sample are not adjacent, or an index file is damaged
     *                                  (names index and shard)
     * @throws dev.granary.NoSuchObjectException if a shard does not exist
     * @throws IOException              if the origin fails
     */
    public static WebDataset of(TieredCache cache, List<String> shardKeys) throws IOException {
        return of(cache, shardKeys, progress -> {});
    }

    /**
     * Indexes tar shards as {@link #of(TieredCache, List)} does, reporting each shard as it is done.
     *
     * @param cache     the cache to read through
     * @param shardKeys the shards' object keys, each once
     * @param listener  called once per shard indexed, from the indexing threads but never concurrently (calls are
     *                  serialised, with {@code shardsDone} increasing); it should return quickly
     * @return the dataset
     * @throws IllegalArgumentException as {@link #of(TieredCache, List)}, or if {@code listener} is null
     * @throws CorruptShardException    as {@link #of(TieredCache, List)}
     * @throws dev.granary.NoSuchObjectException if a shard does not exist
     * @throws IOException              if the origin fails (a RuntimeException the listener throws propagates)
     */
    public static WebDataset of(TieredCache cache, List<String> shardKeys, Consumer<IndexingProgress> listener)
            throws IOException {
        return new WebDataset(index(cache, shardKeys, TarFormat.INSTANCE, listener));
    }

    /**
     * Writes the index file of a shard — {@code <shardKey>.gidx}, beside it, through the cache's origin — for shards
     * another tool made ({@link ShardWriter} writes its own). The shard is read in large parts (cached, as when
     * {@link #of} scans it), and the index records the version the origin reports now, so that {@link #of} trusts it
     * for exactly that version. Rewriting a shard makes its index stale or unconfirmed (see the class comment): write
     * the index again after.
     *
     * @param cache    the cache over the shard's origin, which must support writes ({@link dev.granary.spi.Origin})
     * @param shardKey the shard's key
     * @return the written index file's key, size and version
     * @throws IllegalArgumentException      if the cache is null or the key invalid
     * @throws CorruptShardException         if the shard is not a valid tar or a sample's members are not adjacent
     * @throws dev.granary.NoSuchObjectException if the shard does not exist
     * @throws UnsupportedOperationException if the origin cannot write objects
     * @throws IOException                   if the origin fails
     */
    public static ObjectInfo writeIndex(TieredCache cache, String shardKey) throws IOException {
        byte[] index = indexBytes(cache, shardKey);
        return cache.loaderSupport().writeObject(shardKey + ShardIndexFile.SUFFIX, index);
    }

    /**
     * Builds the index file of a shard as {@link #writeIndex} would write it, without writing it: for operators who
     * upload it by other means (as {@code <shardKey>.gidx}, beside the shard).
     *
     * @param cache    the cache over the shard's origin
     * @param shardKey the shard's key
     * @return the index file's bytes
     * @throws IllegalArgumentException if the cache is null or the key invalid
     * @throws CorruptShardException    if the shard is not a valid tar or a sample's members are not adjacent
     * @throws dev.granary.NoSuchObjectException if the shard does not exist
     * @throws IOException              if the origin fails
     */
    public static byte[] indexBytes(TieredCache cache, String shardKey) throws IOException {
        checkCache(cache);
        ObjectDataset.of(cache, List.of(Objects.requireNonNullElse(shardKey, ""))); // validates the key
        // A fresh listing, not the cached metadata: the index must record the version the origin has now.
        ObjectInfo info;
        try (Stream<ObjectInfo> listing = cache.list(shardKey)) {
            info = listing.filter(o -> o.key().equals(shardKey)).findFirst().orElse(null);
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        if (info == null) {
            throw new dev.granary.NoSuchObjectException(cache.originUri(), shardKey);
        }
        AtomicLong bytes = new AtomicLong();
        List<ShardSamples.Entry> samples;
        try (PartReader reader = new PartReader(cache.loaderSupport(), info, ShardParts.DEFAULT_PART_SIZE, bytes)) {
            samples = TarFormat.samples(info, reader);
        }
        int[] crcs = new int[samples.size()];
        try (PartReader reader = new PartReader(cache.loaderSupport(), info, ShardParts.DEFAULT_PART_SIZE, bytes)) {
            for (int i = 0; i < crcs.length; i++) {
                ShardSamples.Entry e = samples.get(i);
                int n = (int) (e.end() - e.start());
                crcs[i] = n == 0
                        ? ShardIndexFile.crc(ByteBuffer.allocate(0))
                        : ShardIndexFile.crc(reader.read(e.start(), n));
            }
        }
        return ShardIndexFile.encode(info.size(), info.version(), samples, crcs);
    }

    /** For measurements and tests: a dataset over decoded shard indexes, without reading anything. */
    static WebDataset ofIndexes(TieredCache cache, List<ObjectInfo> shards, List<List<ShardSamples.Entry>> samples) {
        ShardIndex[] indexes = new ShardIndex[shards.size()];
        for (int s = 0; s < shards.size(); s++) {
            indexes[s] = new TarFormat.TarShardIndex(
                    samples.get(s),
                    new int[samples.get(s).size()],
                    false,
                    shards.get(s).key());
        }
        return new WebDataset(new Indexed(
                cache,
                TarFormat.INSTANCE,
                shards.stream().map(ObjectInfo::key).toList(),
                shards.toArray(ObjectInfo[]::new),
                indexes,
                new boolean[shards.size()]));
    }

    // ---------------------------------------------------------------------------------------------------------------
    // The samples

    /**
     * {@return the field names of sample {@code index}, in tar order}
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= index < size()}
     */
    public List<String> fields(int index) {
        int s = shardOf(index);
        return ((TarFormat.TarShardIndex) shardIndex(s)).fields(index - firstSample(s));
    }

    /** {@return whether shard {@code shard}'s samples are checked against its index's CRC32C (an unconfirmed index)} */
    boolean verifies(int shard) {
        return ((TarFormat.TarShardIndex) shardIndex(shard)).verifies();
    }

    @Override
    public String toString() {
        return "WebDataset[" + size() + " samples in " + shards().size() + " shards of " + cache().originUri() + "]";
    }
}
