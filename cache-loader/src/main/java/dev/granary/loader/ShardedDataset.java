// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.Lease;
import dev.granary.NoSuchObjectException;
import dev.granary.ObjectInfo;
import dev.granary.OriginStats;
import dev.granary.TieredCache;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * The samples inside shards — objects that each hold many samples — in a {@link ShardFormat}: the one dataset every
 * shard format is read through, so that the loader's planning (shard-block orders, stable partitions, shards read
 * whole in parts, the exact dry run, resume, pre-staging, the tiers' epoch-aware policy) serves them all.
 *
 * <h2>Indexing, and what it costs</h2>
 * {@link #of} lists the shards' directories first (one request per 1 000 objects, however many shards), learning each
 * shard's size and version and which of the index files its format looks for ({@link ShardFormat#indexKeys}) lie
 * beside it. Then, shard by shard, up to 64 at once: a shard with an index file costs one small read of it
 * ({@link ShardFormat#readIndex}); a shard without one is read once in large sequential parts (8 MiB, cut at fixed
 * offsets) for its format to {@linkplain ShardFormat#scan scan}, and those parts are cached as extents, so that a
 * first epoch reading the shard in parts finds them there. An index file that does not apply (stale) is logged and
 * the shard scanned. Samples are numbered shard by shard, in the order the shards are given, then in shard order.
 *
 * <h2>Versions</h2>
 * Every shard is indexed at the version the listing reported (S3 ETag, GCS generation, POSIX size, mtime and inode),
 * and every later read of it is pinned to that version: cached samples of that version keep being served, and a
 * sample that must come from the origin after the shard was rewritten fails its batch with an
 * {@link dev.granary.ObjectChangedException} — an index's offsets are never applied to other bytes. Index the shards
 * again to pick up a new version.
 *
 * <p>Immutable and thread-safe; build it once and reuse it across epochs and loaders.
 */
public sealed class ShardedDataset extends Dataset permits WebDataset {

    /** The largest sample: what one buffer can hold. */
    static final int MAX_SAMPLE_BYTES = Integer.MAX_VALUE - 8;

    private static final int INDEX_CONCURRENCY = 64;
    /** The default budget of decoded encoded shards held on the heap ({@link DecodedShards}). */
    static final long DEFAULT_DECODED_BYTES = 256L << 20;
    /** Marks the version of a decoded shard, so that no read of it can reach the origin as if it were the object. */
    static final String DECODED_VERSION = "|decoded";

    private static final System.Logger LOG = System.getLogger(ShardedDataset.class.getName());

    private final TieredCache cache;
    private final ShardFormat format;
    private final List<String> shards;
    /** Each shard's version when it was indexed: every read is pinned to it, so the index's offsets stay valid. */
    private final ObjectInfo[] versions;
    /**
     * Each shard as the planner sees it: its listed version, or for a shard stored encoded, its decoded bytes (the
     * decoded size, the version marked {@link #DECODED_VERSION}).
     */
    private final ObjectInfo[] planned;
    /** The decoded bytes of encoded shards; null when no shard is encoded. */
    private final DecodedShards decoded;

    private final ShardIndex[] indexes;
    /** Per shard: whether it was indexed from an index file (else by a scan). */
    private final boolean[] fromIndexFile;
    /** Shard {@code s} holds samples {@code [firstSample[s], firstSample[s + 1])}. */
    private final int[] firstSample;

    /**
     * What indexing found, for a subclass's constructor: see {@link #index}.
     *
     * @param cache         the cache the shards are read through
     * @param format        their format
     * @param shards        the shards' keys, in the order given
     * @param versions      each shard's version, as listed
     * @param indexes       each shard's index
     * @param fromIndexFile whether each shard was indexed from an index file
     */
    record Indexed(
            TieredCache cache,
            ShardFormat format,
            List<String> shards,
            ObjectInfo[] versions,
            ShardIndex[] indexes,
            boolean[] fromIndexFile,
            ObjectInfo[] planned,
            DecodedShards decoded) {

        Indexed(
                TieredCache cache,
                ShardFormat format,
                List<String> shards,
                ObjectInfo[] versions,
                ShardIndex[] indexes,
                boolean[] fromIndexFile) {
            this(cache, format, shards, versions, indexes, fromIndexFile, versions, null);
        }
    }

    /**
     * What decoding a dataset's encoded shards (MDS {@code .mds.zstd}) has cost so far: zero for a dataset whose
     * shards are stored plain. See docs/decisions/0024-compressed-shards.md.
     *
     * @param shardsDecoded how many times a shard was decoded (read whole from the cache, then decoded)
     * @param shardsReused  how many reads found a shard decoded already (held, or being decoded)
     * @param storedBytes   the bytes of the stored shards decoded
     * @param decodedBytes  the bytes they decoded to
     * @param decodeNanos   the time spent decoding (excluding the reads), summed over threads
     * @param heldBytes     the decoded bytes held now
     */
    public record Decoding(
            long shardsDecoded,
            long shardsReused,
            long storedBytes,
            long decodedBytes,
            long decodeNanos,
            long heldBytes) {}

    ShardedDataset(Indexed indexed) {
        this.cache = indexed.cache();
        this.format = indexed.format();
        this.shards = List.copyOf(indexed.shards());
        this.versions = indexed.versions().clone();
        this.indexes = indexed.indexes().clone();
        this.fromIndexFile = indexed.fromIndexFile().clone();
        this.planned = indexed.planned().clone();
        this.decoded = indexed.decoded();
        int s = indexes.length;
        firstSample = new int[s + 1];
        long n = 0;
        for (int i = 0; i < s; i++) {
            firstSample[i] = (int) n;
            n += indexes[i].size();
            if (n > MAX_SAMPLE_BYTES) {
                throw new IllegalArgumentException("shards " + shards.size() + ": " + n + " samples (expected: below"
                        + " 2^31 in one dataset; split the shards over several datasets)");
            }
        }
        firstSample[s] = (int) n;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Indexing

    /**
     * Indexes shards in a format (see the class comment): lists their directories, then reads each shard's index
     * file, or scans the shard in large parts where it has none, in parallel over the shards.
     *
     * @param cache     the cache to read through
     * @param shardKeys the shards' object keys, each once
     * @param format    how samples sit in the shards
     * @return the dataset
     * @throws IllegalArgumentException if the cache, list or format is null, the list is empty, a key is invalid or
     *                                  repeated, or the shards hold no sample
     * @throws CorruptShardException    if a shard or an index file is not valid in the format (names it and where)
     * @throws NoSuchObjectException    if a shard does not exist
     * @throws IOException              if the origin fails
     */
    public static ShardedDataset of(TieredCache cache, List<String> shardKeys, ShardFormat format) throws IOException {
        return of(cache, shardKeys, format, progress -> {});
    }

    /**
     * Indexes shards as {@link #of(TieredCache, List, ShardFormat)} does, reporting each shard as it is done.
     *
     * @param cache     the cache to read through
     * @param shardKeys the shards' object keys, each once
     * @param format    how samples sit in the shards
     * @param listener  called once per shard indexed, from the indexing threads but never concurrently (calls are
     *                  serialised, with {@code shardsDone} increasing); it should return quickly
     * @return the dataset
     * @throws IllegalArgumentException as {@link #of(TieredCache, List, ShardFormat)}, or if {@code listener} is null
     * @throws CorruptShardException    as {@link #of(TieredCache, List, ShardFormat)}
     * @throws NoSuchObjectException    if a shard does not exist
     * @throws IOException              if the origin fails (a RuntimeException the listener throws propagates)
     */
    public static ShardedDataset of(
            TieredCache cache, List<String> shardKeys, ShardFormat format, Consumer<IndexingProgress> listener)
            throws IOException {
        return new ShardedDataset(index(cache, shardKeys, format, listener));
    }

    /** The indexing behind {@link #of}; a subclass passes its result to its constructor. */
    static Indexed index(
            TieredCache cache, List<String> shardKeys, ShardFormat format, Consumer<IndexingProgress> listener)
            throws IOException {
        return index(cache, shardKeys, format, listener, DEFAULT_DECODED_BYTES);
    }

    /** {@link #index}, holding up to {@code decodedBytes} of decoded shards for a format of {@link EncodedShards}. */
    static Indexed index(
            TieredCache cache,
            List<String> shardKeys,
            ShardFormat format,
            Consumer<IndexingProgress> listener,
            long decodedBytes)
            throws IOException {
        checkCache(cache);
        ObjectDataset.of(cache, shardKeys); // validates the keys: non-empty, relative, each once
        if (format == null) {
            throw new IllegalArgumentException("format: null (expected: a ShardFormat)");
        }
        if (listener == null) {
            throw new IllegalArgumentException("listener: null (expected: a Consumer of IndexingProgress)");
        }
        List<String> shards = List.copyOf(shardKeys);
        long t0 = System.nanoTime();
        OriginStats before = cache.stats().origin();
        List<List<String>> indexKeys = new ArrayList<>(shards.size());
        for (String shard : shards) {
            indexKeys.add(List.copyOf(format.indexKeys(shard)));
        }
        Map<String, ObjectInfo> listed = listShards(cache, shards, indexKeys);
        ObjectInfo[] versions = new ObjectInfo[shards.size()];
        for (int s = 0; s < shards.size(); s++) {
            versions[s] = listed.get(shards.get(s));
            if (versions[s] == null) {
                throw new NoSuchObjectException(cache.originUri(), shards.get(s));
            }
        }
        ShardIndex[] indexes = new ShardIndex[shards.size()];
        boolean[] fromFile = new boolean[shards.size()];
        ObjectInfo[] planned = versions.clone();
        DecodedShards decoded = format instanceof EncodedShards ? new DecodedShards(decodedBytes) : null;
        AtomicLong bytes = new AtomicLong();
        int[] done = {0};
        parallel(shards.size(), "indexing " + shards.size() + " shards", s -> {
            ObjectInfo index = null;
            for (String key : indexKeys.get(s)) {
                index = index == null ? listed.get(key) : index;
            }
            String note = decoded != null && ((EncodedShards) format).decodedSize(versions[s]) >= 0
                    ? indexDecoded(cache, (EncodedShards) format, versions, planned, decoded, bytes, indexes, s)
                    : indexShard(cache, format, versions[s], index, bytes, indexes, fromFile, s);
            synchronized (done) {
                done[0]++;
                OriginStats now = cache.stats().origin();
                listener.accept(new IndexingProgress(
                        shards.get(s),
                        fromFile[s],
                        done[0],
                        shards.size(),
                        bytes.get(),
                        now.reads() + now.metadataRequests() - before.reads() - before.metadataRequests(),
                        System.nanoTime() - t0,
                        note));
            }
        });
        long samples = 0;
        for (ShardIndex index : indexes) {
            samples += index.size();
        }
        if (samples == 0) {
            throw new IllegalArgumentException("shards " + (shards.size() <= 3 ? shards : shards.subList(0, 3) + "…")
                    + " of " + cache.originUri() + ": no samples in format '" + format.name() + "' (expected: shards"
                    + " that hold samples)");
        }
        return new Indexed(cache, format, shards, versions, indexes, fromFile, planned, decoded);
    }

    /**
     * Indexes an encoded shard: reads it whole through the cache and decodes it (the decoded bytes are held for the
     * first epoch), then scans the decoded bytes. The index's extents are in the decoded shard.
     */
    private static String indexDecoded(
            TieredCache cache,
            EncodedShards format,
            ObjectInfo[] versions,
            ObjectInfo[] planned,
            DecodedShards decoded,
            AtomicLong bytes,
            ShardIndex[] indexes,
            int s)
            throws IOException {
        ObjectInfo stored = versions[s];
        long size = format.decodedSize(stored);
        planned[s] = new ObjectInfo(stored.key(), size, stored.version() + DECODED_VERSION);
        ByteBuffer whole = decoded.get(s, () -> decode(cache, format, stored, decoded, bytes));
        indexes[s] = checked(
                (ShardFormat) format,
                planned[s],
                ((ShardFormat) format).scan(planned[s], new HeaderReader(stored.key(), size, whole)));
        return "stored encoded: decoded to index it";
    }

    /** Reads an encoded shard whole, pinned to its version and cached as one unit, and decodes it (counted). */
    private static ByteBuffer decode(
            TieredCache cache, EncodedShards format, ObjectInfo stored, DecodedShards decoded, AtomicLong bytes)
            throws IOException {
        if (stored.size() > MAX_SAMPLE_BYTES) {
            throw new CorruptShardException(
                    stored.key(),
                    0,
                    "a stored encoded shard of " + stored.size() + " bytes (expected: at most " + MAX_SAMPLE_BYTES
                            + ", what one buffer holds)");
        }
        try (Lease lease = cache.loaderSupport().readExtent(stored, 0, (int) stored.size())) {
            if (bytes != null) {
                bytes.addAndGet(stored.size());
            }
            long t0 = System.nanoTime();
            ByteBuffer out = format.decode(stored, lease.bytes());
            long expected = format.decodedSize(stored);
            if (out == null || out.remaining() != expected) {
                throw new CorruptShardException(
                        stored.key(),
                        0,
                        "decoded to " + (out == null ? "nothing" : out.remaining() + " bytes") + " (expected: "
                                + expected + ")");
            }
            decoded.counted(stored.size(), expected, System.nanoTime() - t0);
            return out.slice();
        }
    }

    /** Indexes one shard into {@code indexes[s]}; returns the note for its progress (why it was scanned). */
    private static String indexShard(
            TieredCache cache,
            ShardFormat format,
            ObjectInfo shard,
            ObjectInfo index,
            AtomicLong bytes,
            ShardIndex[] indexes,
            boolean[] fromFile,
            int s)
            throws IOException {
        String note = "no index file";
        if (index != null) {
            if (index.size() > MAX_SAMPLE_BYTES) {
                throw new CorruptShardException(
                        shard.key(),
                        "index '" + index.key() + "' of shard '" + shard.key()
                                + "' is damaged: size: " + index.size() + " bytes (expected: at most "
                                + MAX_SAMPLE_BYTES
                                + ")",
                        null);
            }
            try (Lease lease = cache.loaderSupport().readExtent(index, 0, (int) index.size())) {
                bytes.addAndGet(index.size());
                indexes[s] = checked(format, shard, format.readIndex(shard, index, lease.bytes()));
                fromFile[s] = true;
                return "";
            } catch (ShardFormat.StaleIndexException e) {
                note = e.getMessage();
                LOG.log(System.Logger.Level.WARNING, note);
            }
        }
        long header = format.headerLength(shard);
        if (header >= 0 && header <= shard.size()) {
            try (Lease lease = cache.loaderSupport().readExtent(shard, 0, (int) header)) {
                bytes.addAndGet(header);
                indexes[s] = checked(
                        format, shard, format.scan(shard, new HeaderReader(shard.key(), shard.size(), lease.bytes())));
            }
            return index == null ? "" : note;
        }
        try (PartReader reader = new PartReader(cache.loaderSupport(), shard, ShardParts.DEFAULT_PART_SIZE, bytes)) {
            indexes[s] = checked(format, shard, format.scan(shard, reader));
        }
        return note;
    }

    /** Refuses an index whose extents do not lie inside the shard: a format's bug must not become a wrong read. */
    private static ShardIndex checked(ShardFormat format, ObjectInfo shard, ShardIndex index)
            throws CorruptShardException {
        if (index == null) {
            throw new IllegalStateException("format '" + format.name() + "' gave no index for shard '" + shard.key()
                    + "' (expected: a ShardIndex, possibly of no samples)");
        }
        for (int i = 0, n = index.size(); i < n; i++) {
            long start = index.start(i);
            int length = index.length(i);
            if (start < 0 || length < 0 || start > shard.size() - length) {
                throw new CorruptShardException(
                        shard.key(),
                        start,
                        "sample " + i + " of shard '" + shard.key()
                                + "' in format '" + format.name() + "': [" + start + ", +" + length
                                + ") (expected: within the"
                                + " shard's " + shard.size() + " bytes)");
            }
        }
        return index;
    }

    /**
     * Lists what the shards' directories hold: for each directory, one listing of the longest prefix its shards share
     * (so {@code train-000000.tar} … {@code train-000999.tar} list {@code train-000}, not the whole directory), and
     * keeps the shards and the index files their format looks for.
     *
     * @return the listed shards and index files by key
     */
    private static Map<String, ObjectInfo> listShards(
            TieredCache cache, List<String> shards, List<List<String>> indexKeys) throws IOException {
        Set<String> wanted = new HashSet<>(shards.size() * 4);
        Map<String, String> prefixes = new LinkedHashMap<>();
        for (int s = 0; s < shards.size(); s++) {
            String shard = shards.get(s);
            wanted.add(shard);
            for (String index : indexKeys.get(s)) {
                wanted.add(index);
                String dir = index.substring(0, index.lastIndexOf('/') + 1);
                prefixes.merge(dir, index, ShardedDataset::commonPrefix);
            }
            String dir = shard.substring(0, shard.lastIndexOf('/') + 1);
            prefixes.merge(dir, shard, ShardedDataset::commonPrefix);
        }
        List<String> lists = List.copyOf(prefixes.values());
        Map<String, ObjectInfo> found = new ConcurrentHashMap<>();
        parallel(lists.size(), "listing " + lists.size() + " shard prefixes", i -> {
            try (Stream<ObjectInfo> listing = cache.list(lists.get(i))) {
                listing.filter(o -> wanted.contains(o.key())).forEach(o -> found.put(o.key(), o));
            } catch (UncheckedIOException e) {
                throw e.getCause();
            }
        });
        return found;
    }

    private static String commonPrefix(String a, String b) {
        int n = Math.min(a.length(), b.length());
        int i = 0;
        while (i < n && a.charAt(i) == b.charAt(i)) {
            i++;
        }
        if (i > 0 && Character.isHighSurrogate(a.charAt(i - 1))) {
            i--; // never split a surrogate pair: the prefix must stay valid UTF-8
        }
        return a.substring(0, i);
    }

    /** A task over one index of {@code [0, count)} that may fail with an I/O error. */
    @FunctionalInterface
    interface Task {
        void run(int i) throws IOException;
    }

    /** Runs {@code task} for {@code 0 … count - 1} on virtual threads, at most {@link #INDEX_CONCURRENCY} at once. */
    static void parallel(int count, String what, Task task) throws IOException {
        Semaphore permits = new Semaphore(INDEX_CONCURRENCY);
        Throwable[] failure = new Throwable[1];
        List<Thread> threads = new ArrayList<>(count);
        try {
            for (int i = 0; i < count; i++) {
                int item = i;
                permits.acquire();
                synchronized (failure) {
                    if (failure[0] != null) {
                        break; // stop starting work once one failed
                    }
                }
                threads.add(Thread.ofVirtual().name("granary-shard-index").start(() -> {
                    try {
                        task.run(item);
                    } catch (Throwable e) {
                        synchronized (failure) {
                            if (failure[0] == null) {
                                failure[0] = e;
                            }
                        }
                    } finally {
                        permits.release();
                    }
                }));
            }
            for (Thread t : threads) {
                t.join();
            }
        } catch (InterruptedException e) {
            threads.forEach(Thread::interrupt);
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while " + what);
        }
        switch (failure[0]) {
            case null -> {}
            case IOException io -> throw io;
            case RuntimeException re -> throw re;
            case Error err -> throw err;
            default -> throw new IOException(what + ": " + failure[0], failure[0]);
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // The samples

    @Override
    public int size() {
        return firstSample[firstSample.length - 1];
    }

    @Override
    public String key(int index) {
        int s = shardOf(index);
        int local = index - firstSample[s];
        String key = indexes[s].key(local);
        return key != null ? key : shards.get(s) + "#" + local;
    }

    @Override
    public long byteSize(int index) {
        int s = shardOf(index);
        return indexes[s].length(index - firstSample[s]);
    }

    @Override
    public TieredCache cache() {
        return cache;
    }

    /** {@return the format the shards are read in} */
    public ShardFormat format() {
        return format;
    }

    /** {@return the shards, in the order given} */
    public List<String> shards() {
        return shards;
    }

    /**
     * {@return the shard holding sample {@code index}}
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= index < size()}
     */
    public String shard(int index) {
        return shards.get(shardOf(index));
    }

    /** {@return the number of shards} */
    int shardCount() {
        return shards.size();
    }

    /**
     * {@return shard {@code shard} as the planner sees it}: the version every read is pinned to, or for a shard stored
     * encoded its decoded bytes (decoded size, a version no origin has). Read it with {@link #readShard}, never
     * through the cache directly.
     */
    ObjectInfo shardInfo(int shard) {
        return planned[shard];
    }

    /** {@return the stored object of shard {@code shard}, as listed} */
    ObjectInfo storedInfo(int shard) {
        return versions[shard];
    }

    /** {@return whether shard {@code shard} is stored encoded: its extents are of its decoded bytes} */
    boolean decodedShard(int shard) {
        return !planned[shard].equals(versions[shard]);
    }

    /**
     * Reads an extent of a shard in the planner's coordinates: through the cache, pinned to the shard's version; or,
     * for an encoded shard, a slice of its decoded bytes (decoding it, once, if they are not held).
     *
     * @param shard  the shard
     * @param offset the extent's start
     * @param length its length
     * @return a lease on the bytes
     */
    Lease readShard(int shard, long offset, int length) throws IOException {
        if (!decodedShard(shard)) {
            return cache.loaderSupport().readExtent(versions[shard], offset, length);
        }
        ObjectInfo stored = versions[shard];
        ByteBuffer whole = decoded.get(shard, () -> decode(cache, (EncodedShards) format, stored, decoded, null));
        if (offset < 0 || length < 0 || offset > whole.remaining() - (long) length) {
            throw new java.io.EOFException("range [" + offset + ", +" + length + ") of decoded shard '" + stored.key()
                    + "': past its end (expected: within its " + whole.remaining() + " bytes)");
        }
        return cache.loaderSupport().wrap(stored.key(), offset, whole.slice((int) offset, length));
    }

    /**
     * {@return what decoding this dataset's encoded shards has cost so far}: all zero when its shards are stored plain
     */
    public Decoding decoding() {
        return decoded == null ? new Decoding(0, 0, 0, 0, 0, 0) : decoded.stats();
    }

    /** {@return shard {@code shard}'s index} */
    ShardIndex shardIndex(int shard) {
        return indexes[shard];
    }

    /** {@return whether shard {@code shard} was indexed from its index file (else by a scan)} */
    boolean indexedFromFile(int shard) {
        return fromIndexFile[shard];
    }

    /** {@return the shard holding sample {@code sample}} */
    int shardOf(int sample) {
        Objects.checkIndex(sample, size());
        int s = Arrays.binarySearch(firstSample, sample);
        if (s < 0) {
            return -s - 2;
        }
        while (s + 1 < firstSample.length && firstSample[s + 1] == sample) {
            s++; // skip shards without samples
        }
        return s;
    }

    /** {@return the first sample of shard {@code shard}}: it holds {@code [firstSample(s), firstSample(s + 1))} */
    int firstSample(int shard) {
        return firstSample[shard];
    }

    /** {@return the offset in its shard of sample {@code sample}'s extent} */
    long sampleStart(int sample) {
        int s = shardOf(sample);
        return indexes[s].start(sample - firstSample[s]);
    }

    /** {@return the length of sample {@code sample}'s extent} */
    int sampleLength(int sample) {
        int s = shardOf(sample);
        return indexes[s].length(sample - firstSample[s]);
    }

    /**
     * Decodes a sample from its extent's bytes through the format.
     *
     * @param sample the sample
     * @param extent exactly the sample's extent bytes, from its position to its limit (not moved)
     * @return the fields
     * @throws CorruptShardException    if the bytes are not a valid sample
     * @throws IllegalArgumentException if {@code extent} does not hold exactly the sample's length
     */
    Map<String, ByteBuffer> fieldsOf(int sample, ByteBuffer extent) throws IOException {
        int s = shardOf(sample);
        int local = sample - firstSample[s];
        int length = indexes[s].length(local);
        if (extent.remaining() != length) {
            throw new IllegalArgumentException(
                    "extent of sample " + sample + ": " + extent.remaining() + " bytes (expected: " + length + ")");
        }
        return format.decode(indexes[s], local, extent);
    }

    /** {@return the sample's whole besides its fields ({@link ShardFormat#bytes}), or null}, after {@link #fieldsOf} */
    ByteBuffer wholeOf(int sample, ByteBuffer extent) throws IOException {
        int s = shardOf(sample);
        return format.bytes(indexes[s], sample - firstSample[s], extent);
    }

    /** Where a sample's bytes are, for messages: {@code shard@offset}. */
    @Override
    String source(int index) {
        return "shard '" + shard(index) + "' at offset " + sampleStart(index);
    }

    @Override
    Sample read(int index) throws IOException {
        int s = shardOf(index);
        int local = index - firstSample[s];
        Lease lease = readShard(s, indexes[s].start(local), indexes[s].length(local));
        try {
            ByteBuffer extent = lease.bytes();
            Map<String, ByteBuffer> fields = fieldsOf(index, extent);
            return new Sample(key(index), index, source(index), fields, wholeOf(index, extent), lease);
        } catch (IOException | RuntimeException | Error e) {
            lease.close();
            throw e;
        }
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + size() + " samples in " + shards.size() + " shards of "
                + cache.originUri() + ", format " + format.name() + "]";
    }
}
