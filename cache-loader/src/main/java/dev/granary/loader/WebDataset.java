// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static java.nio.charset.StandardCharsets.UTF_8;

import dev.granary.Lease;
import dev.granary.LoaderSupport;
import dev.granary.NoSuchObjectException;
import dev.granary.ObjectInfo;
import dev.granary.OriginStats;
import dev.granary.TieredCache;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
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
 * The index is held in flat arrays — extents, CRCs, keys as one UTF-8 byte array, fields as name ids into one shared
 * table of field names — about 44 bytes per two-field sample plus its key's bytes. Build it once and reuse it across
 * epochs and loaders. Immutable and thread-safe.
 */
public final class WebDataset extends Dataset {

    /** The largest sample extent: what one buffer can hold. */
    static final int MAX_SAMPLE_BYTES = Integer.MAX_VALUE - 8;

    private static final int INDEX_CONCURRENCY = 64;
    private static final System.Logger LOG = System.getLogger(WebDataset.class.getName());

    private final TieredCache cache;
    private final List<String> shards;
    /** Each shard's version when it was indexed: every read is pinned to it, so the index's offsets stay valid. */
    private final ObjectInfo[] versions;
    /** Per shard: whether its samples are checked against the index's CRC32C on read (an unconfirmed index). */
    private final boolean[] verify;
    /** Per shard: whether it was indexed from its index file (else by a scan). */
    private final boolean[] fromIndexFile;
    /** Shard {@code s} holds samples {@code [firstSample[s], firstSample[s + 1])}. */
    private final int[] firstSample;
    private final long[] start;
    private final int[] length;
    /** The CRC32C of each sample's extent; only meaningful in shards with {@link #verify}. */
    private final int[] crc;
    /** Every key's UTF-8 bytes, one after the other: key {@code i} is {@code [keyEnd[i - 1], keyEnd[i])}. */
    private final byte[] keyBytes;
    private final int[] keyEnd;
    /** The field names, each once for the whole dataset. */
    private final String[] names;
    /** Sample {@code i}'s fields are {@code [firstField[i], firstField[i + 1])} of the three arrays below. */
    private final int[] firstField;
    private final char[] fieldName;
    /** Offsets relative to the sample's start. */
    private final int[] fieldOffset;
    private final int[] fieldSize;

    private WebDataset(TieredCache cache, List<String> shards, ObjectInfo[] versions, List<Block> blocks) {
        this.cache = cache;
        this.shards = shards;
        this.versions = versions;
        int s = blocks.size();
        verify = new boolean[s];
        fromIndexFile = new boolean[s];
        firstSample = new int[s + 1];
        long n = 0;
        long keyTotal = 0;
        long fieldTotal = 0;
        Map<String, Integer> ids = new HashMap<>();
        List<String> table = new ArrayList<>();
        for (int i = 0; i < s; i++) {
            Block b = blocks.get(i);
            firstSample[i] = (int) n;
            n += b.count;
            keyTotal += b.keyBytes.length;
            fieldTotal += b.fieldName.length;
            verify[i] = b.verify;
            fromIndexFile[i] = b.fromIndexFile;
            if (n > MAX_SAMPLE_BYTES || keyTotal > MAX_SAMPLE_BYTES || fieldTotal > MAX_SAMPLE_BYTES) {
                throw new IllegalArgumentException("shards " + shards.size() + ": " + n + " samples, " + keyTotal
                        + " key bytes, " + fieldTotal + " fields (expected: each below 2^31 in one WebDataset;"
                        + " split the shards over several datasets)");
            }
            for (String name : b.names) {
                if (ids.putIfAbsent(name, table.size()) == null) {
                    table.add(name);
                }
            }
        }
        if (table.size() > 0x10000) {
            throw new IllegalArgumentException("field names: " + table.size() + " distinct (expected: at most 65536"
                    + " in one WebDataset)");
        }
        firstSample[s] = (int) n;
        names = table.toArray(String[]::new);
        int count = (int) n;
        start = new long[count];
        length = new int[count];
        crc = new int[count];
        keyBytes = new byte[(int) keyTotal];
        keyEnd = new int[count];
        firstField = new int[count + 1];
        fieldName = new char[(int) fieldTotal];
        fieldOffset = new int[(int) fieldTotal];
        fieldSize = new int[(int) fieldTotal];
        int keyAt = 0;
        int fieldAt = 0;
        for (int i = 0; i < s; i++) {
            Block b = blocks.get(i);
            int at = firstSample[i];
            System.arraycopy(b.start, 0, start, at, b.count);
            System.arraycopy(b.length, 0, length, at, b.count);
            System.arraycopy(b.crc, 0, crc, at, b.count);
            System.arraycopy(b.keyBytes, 0, keyBytes, keyAt, b.keyBytes.length);
            for (int j = 0; j < b.count; j++) {
                keyEnd[at + j] = keyAt + b.keyEnd[j];
                firstField[at + j] = fieldAt + b.firstField[j];
            }
            char[] remap = new char[b.names.size()];
            for (int k = 0; k < remap.length; k++) {
                remap[k] = (char) (int) ids.get(b.names.get(k));
            }
            for (int f = 0; f < b.fieldName.length; f++) {
                fieldName[fieldAt + f] = remap[b.fieldName[f]];
            }
            System.arraycopy(b.fieldOffset, 0, fieldOffset, fieldAt, b.fieldName.length);
            System.arraycopy(b.fieldSize, 0, fieldSize, fieldAt, b.fieldName.length);
            keyAt += b.keyBytes.length;
            fieldAt += b.fieldName.length;
        }
        firstField[count] = fieldAt;
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
        return of(cache, shardKeys, progress -> { });
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
        checkCache(cache);
        ObjectDataset.of(cache, shardKeys); // validates the keys: non-empty, relative, each once
        if (listener == null) {
            throw new IllegalArgumentException("listener: null (expected: a Consumer of IndexingProgress)");
        }
        List<String> shards = List.copyOf(shardKeys);
        long t0 = System.nanoTime();
        OriginStats before = cache.stats().origin();
        Map<String, ObjectInfo> listed = listShards(cache, shards);
        ObjectInfo[] versions = new ObjectInfo[shards.size()];
        for (int s = 0; s < shards.size(); s++) {
            versions[s] = listed.get(shards.get(s));
            if (versions[s] == null) {
                throw new NoSuchObjectException(cache.originUri(), shards.get(s));
            }
        }
        Block[] blocks = new Block[shards.size()];
        AtomicLong bytes = new AtomicLong();
        int[] done = {0};
        parallel(shards.size(), "indexing " + shards.size() + " shards", s -> {
            ObjectInfo index = listed.get(shards.get(s) + ShardIndexFile.SUFFIX);
            blocks[s] = indexShard(cache, versions[s], index, bytes);
            synchronized (done) {
                done[0]++;
                OriginStats now = cache.stats().origin();
                listener.accept(new IndexingProgress(shards.get(s), blocks[s].fromIndexFile, done[0], shards.size(),
                        bytes.get(), now.reads() + now.metadataRequests() - before.reads()
                        - before.metadataRequests(), System.nanoTime() - t0, blocks[s].note));
            }
        });
        WebDataset dataset = new WebDataset(cache, shards, versions, Arrays.asList(blocks));
        if (dataset.size() == 0) {
            throw new IllegalArgumentException("shards " + (shards.size() <= 3 ? shards : shards.subList(0, 3) + "…")
                    + " of " + cache.originUri() + ": no samples (expected: tar members named key.ext)");
        }
        return dataset;
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
            throw new NoSuchObjectException(cache.originUri(), shardKey);
        }
        AtomicLong bytes = new AtomicLong();
        List<ShardSamples.Entry> samples = scan(cache, info, bytes);
        int[] crcs = new int[samples.size()];
        try (PartReader reader = new PartReader(cache.loaderSupport(), info, ShardParts.DEFAULT_PART_SIZE, bytes)) {
            for (int i = 0; i < crcs.length; i++) {
                ShardSamples.Entry e = samples.get(i);
                int n = (int) (e.end() - e.start());
                crcs[i] = n == 0 ? ShardIndexFile.crc(ByteBuffer.allocate(0)) : ShardIndexFile.crc(
                        reader.read(e.start(), n));
            }
        }
        return ShardIndexFile.encode(info.size(), info.version(), samples, crcs);
    }

    /**
     * Lists what the shards' directories hold: for each directory, one listing of the longest prefix its shards share
     * (so {@code train-000000.tar} … {@code train-000999.tar} list {@code train-000}, not the whole directory).
     *
     * @return the listed shards and index files by key
     */
    private static Map<String, ObjectInfo> listShards(TieredCache cache, List<String> shards) throws IOException {
        Set<String> wanted = new HashSet<>(shards.size() * 4);
        Map<String, String> prefixes = new LinkedHashMap<>();
        for (String shard : shards) {
            wanted.add(shard);
            wanted.add(shard + ShardIndexFile.SUFFIX);
            String dir = shard.substring(0, shard.lastIndexOf('/') + 1);
            prefixes.merge(dir, shard, WebDataset::commonPrefix);
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

    /** Indexes one shard: from its index file when it has a usable one, else by scanning it in parts. */
    private static Block indexShard(TieredCache cache, ObjectInfo shard, ObjectInfo index, AtomicLong bytes)
            throws IOException {
        if (index != null) {
            if (index.size() > MAX_SAMPLE_BYTES) {
                throw corruptIndex(shard.key(), index.key(), "size: " + index.size() + " bytes (expected: at most "
                        + MAX_SAMPLE_BYTES + ")", null);
            }
            ShardIndexFile.Decoded decoded = null;
            String note = "";
            try (Lease lease = cache.loaderSupport().readExtent(index, 0, (int) index.size())) {
                bytes.addAndGet(index.size());
                decoded = ShardIndexFile.decode(lease.bytes());
            } catch (ShardIndexFile.UnknownVersion e) {
                note = "index '" + index.key() + "' of shard '" + shard.key() + "' has " + e.getMessage()
                        + ": indexing the shard by scanning it; rewrite the index with this version's"
                        + " WebDataset.writeIndex to skip the scan";
                LOG.log(System.Logger.Level.WARNING, note);
            } catch (ShardIndexFile.Damaged e) {
                throw corruptIndex(shard.key(), index.key(), e.getMessage(), null);
            }
            if (decoded != null && decoded.shardSize() != shard.size()) {
                note = "index '" + index.key() + "' is stale: it was written for a shard of " + decoded.shardSize()
                        + " bytes, and shard '" + shard.key() + "' has " + shard.size() + " bytes; indexing the shard"
                        + " by scanning it (if the shard was meant to change, write its index again with"
                        + " WebDataset.writeIndex; if not, the shard itself changed: check it against its source)";
                LOG.log(System.Logger.Level.WARNING, note);
                decoded = null;
            }
            if (decoded != null) {
                boolean confirmed = !decoded.shardVersion().isEmpty()
                        && decoded.shardVersion().equals(shard.version());
                return new Block(decoded.samples(), decoded.crcs(), !confirmed, true, shard.key(), "");
            }
            List<ShardSamples.Entry> samples = scan(cache, shard, bytes);
            return new Block(samples, new int[samples.size()], false, false, shard.key(), note);
        }
        List<ShardSamples.Entry> samples = scan(cache, shard, bytes);
        return new Block(samples, new int[samples.size()], false, false, shard.key(), "no index file");
    }

    private static CorruptShardException corruptIndex(String shard, String index, String problem, Throwable cause) {
        return new CorruptShardException(shard, "index '" + index + "' of shard '" + shard + "' is damaged: "
                + problem + " (the index file itself does not check out; the shard may be intact: check the shard"
                + " against its source first, then write a new index from it with WebDataset.writeIndex(cache, \""
                + shard + "\"))", cause);
    }

    /** Scans a shard's headers out of its parts, read sequentially (and cached) by the {@link ShardParts} rule. */
    private static List<ShardSamples.Entry> scan(TieredCache cache, ObjectInfo shard, AtomicLong bytes)
            throws IOException {
        try (PartReader reader = new PartReader(cache.loaderSupport(), shard, ShardParts.DEFAULT_PART_SIZE, bytes)) {
            List<TarIndex.Member> members = TarIndex.scan(shard.key(), shard.size(), reader);
            return ShardSamples.group(shard.key(), members);
        }
    }

    /** A task over one index of {@code [0, count)} that may fail with an I/O error. */
    @FunctionalInterface
    private interface Task {
        void run(int i) throws IOException;
    }

    /** Runs {@code task} for {@code 0 … count - 1} on virtual threads, at most {@link #INDEX_CONCURRENCY} at once. */
    private static void parallel(int count, String what, Task task) throws IOException {
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
                threads.add(Thread.ofVirtual().name("granary-webdataset-index").start(() -> {
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
            case null -> { }
            case IOException io -> throw io;
            case RuntimeException re -> throw re;
            case Error err -> throw err;
            default -> throw new IOException(what + ": " + failure[0], failure[0]);
        }
    }

    /**
     * Reads a shard for {@link TarIndex#scan} out of its parts: one cached extent per part, the next part fetched
     * while the current one is parsed. A range inside one part is a view of it; a range across a part boundary (a
     * header, a PAX record) is assembled by copying. Holds at most the current part and the next; not thread-safe.
     */
    static final class PartReader implements TarIndex.RangeReader, AutoCloseable {

        private final LoaderSupport support;
        private final ObjectInfo shard;
        private final int partSize;
        private final int parts;
        private final AtomicLong bytes;
        private int part = -1;
        private Lease lease;
        private ByteBuffer current;
        private CompletableFuture<Lease> next;
        private int nextPart = -1;

        PartReader(LoaderSupport support, ObjectInfo shard, int partSize, AtomicLong bytes) {
            this.support = support;
            this.shard = shard;
            this.partSize = partSize;
            this.parts = ShardParts.count(shard.size(), partSize);
            this.bytes = bytes;
        }

        @Override
        public ByteBuffer read(long offset, int length) throws IOException {
            if (offset < 0 || length < 0 || offset > shard.size() - length) {
                throw new EOFException("range [" + offset + ", +" + length + ") of shard '" + shard.key() + "': past"
                        + " the end (expected: within its " + shard.size() + " bytes)");
            }
            int p = ShardParts.partOf(offset, partSize);
            ByteBuffer first = part(p);
            int within = (int) (offset - ShardParts.start(p, partSize));
            if (within + length <= first.remaining()) {
                return first.slice(first.position() + within, length);
            }
            byte[] out = new byte[length];
            int done = 0;
            long pos = offset;
            while (done < length) {
                int q = ShardParts.partOf(pos, partSize);
                ByteBuffer b = part(q);
                int at = (int) (pos - ShardParts.start(q, partSize));
                int n = Math.min(length - done, b.remaining() - at);
                b.get(b.position() + at, out, done, n);
                done += n;
                pos += n;
            }
            return ByteBuffer.wrap(out);
        }

        private ByteBuffer part(int p) throws IOException {
            if (p == part) {
                return current;
            }
            closeCurrent();
            Lease l;
            if (p == nextPart) {
                CompletableFuture<Lease> f = next;
                next = null;
                nextPart = -1;
                l = await(f);
            } else {
                cancelNext();
                l = fetch(p);
            }
            lease = l;
            current = l.bytes();
            part = p;
            if (p + 1 < parts) {
                int q = p + 1;
                nextPart = q;
                next = new CompletableFuture<>();
                CompletableFuture<Lease> f = next;
                Thread.ofVirtual().name("granary-webdataset-part").start(() -> {
                    try {
                        f.complete(fetch(q));
                    } catch (Throwable t) {
                        f.completeExceptionally(t);
                    }
                });
            }
            return current;
        }

        private Lease fetch(int p) throws IOException {
            int n = ShardParts.length(p, shard.size(), partSize);
            Lease l = support.readExtent(shard, ShardParts.start(p, partSize), n);
            bytes.addAndGet(n);
            return l;
        }

        private static Lease await(CompletableFuture<Lease> f) throws IOException {
            try {
                return f.get();
            } catch (InterruptedException e) {
                var _ = f.thenAccept(Lease::close); // fire and forget: the lease, once read, is nobody's
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while reading a shard part");
            } catch (ExecutionException e) {
                switch (e.getCause()) {
                    case IOException io -> throw io;
                    case RuntimeException re -> throw re;
                    case Error err -> throw err;
                    default -> throw new IOException(e.getCause());
                }
            }
        }

        private void closeCurrent() {
            if (lease != null) {
                lease.close();
                lease = null;
                current = null;
                part = -1;
            }
        }

        /** Waits for a part read ahead but not needed, and releases it: no lease outlives the reader. */
        private void cancelNext() {
            if (next != null) {
                CompletableFuture<Lease> f = next;
                next = null;
                nextPart = -1;
                try {
                    f.join().close();
                } catch (RuntimeException ignored) {
                    // the read-ahead failed: nothing to release, and nobody needs its error
                }
            }
        }

        @Override
        public void close() {
            closeCurrent();
            cancelNext();
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // One shard's samples in flat arrays, as an indexing thread builds them; concatenated by the constructor.

    /** A shard's samples in the dataset's flat layout, with field-name ids local to the shard. */
    private static final class Block {
        final int count;
        final boolean verify;
        final boolean fromIndexFile;
        final String note;
        final long[] start;
        final int[] length;
        final int[] crc;
        final byte[] keyBytes;
        final int[] keyEnd;
        final List<String> names = new ArrayList<>();
        final int[] firstField;
        final char[] fieldName;
        final int[] fieldOffset;
        final int[] fieldSize;

        Block(List<ShardSamples.Entry> samples, int[] crcs, boolean verify, boolean fromIndexFile, String shard,
                String note) {
            this.count = samples.size();
            this.note = note;
            this.verify = verify;
            this.fromIndexFile = fromIndexFile;
            start = new long[count];
            length = new int[count];
            crc = crcs;
            keyEnd = new int[count];
            firstField = new int[count];
            int fields = 0;
            for (ShardSamples.Entry e : samples) {
                fields += e.fields().size();
            }
            fieldName = new char[fields];
            fieldOffset = new int[fields];
            fieldSize = new int[fields];
            Map<String, Integer> ids = new HashMap<>();
            ByteArrayOutputStream keys = new ByteArrayOutputStream(count * 16);
            int f = 0;
            for (int i = 0; i < count; i++) {
                ShardSamples.Entry e = samples.get(i);
                long extent = e.end() - e.start();
                if (extent > MAX_SAMPLE_BYTES) {
                    throw new IllegalArgumentException("sample '" + e.key() + "' of shard '" + shard + "': " + extent
                            + " bytes (expected: at most " + MAX_SAMPLE_BYTES + " per sample)");
                }
                start[i] = e.start();
                length[i] = (int) extent;
                keys.writeBytes(e.key().getBytes(UTF_8));
                keyEnd[i] = keys.size();
                firstField[i] = f;
                for (ShardSamples.Field field : e.fields()) {
                    Integer id = ids.get(field.name());
                    if (id == null) {
                        id = names.size();
                        if (id > 0xffff) {
                            throw new IllegalArgumentException("field names of shard '" + shard + "': more than"
                                    + " 65536 distinct (expected: at most 65536)");
                        }
                        ids.put(field.name(), id);
                        names.add(field.name());
                    }
                    fieldName[f] = (char) (int) id;
                    fieldOffset[f] = (int) (field.offset() - e.start());
                    fieldSize[f] = (int) field.size();
                    f++;
                }
            }
            keyBytes = keys.toByteArray();
        }
    }

    /** For measurements and tests: a dataset over decoded shard indexes, without reading anything. */
    static WebDataset ofIndexes(TieredCache cache, List<ObjectInfo> shards, List<List<ShardSamples.Entry>> samples) {
        List<Block> blocks = new ArrayList<>(shards.size());
        for (int s = 0; s < shards.size(); s++) {
            blocks.add(new Block(samples.get(s), new int[samples.get(s).size()], false, false, shards.get(s).key(),
                    ""));
        }
        return new WebDataset(cache, shards.stream().map(ObjectInfo::key).toList(),
                shards.toArray(ObjectInfo[]::new), blocks);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // The samples

    @Override
    public int size() {
        return length.length;
    }

    @Override
    public String key(int index) {
        Objects.checkIndex(index, length.length);
        int from = index == 0 ? 0 : keyEnd[index - 1];
        return new String(keyBytes, from, keyEnd[index] - from, UTF_8);
    }

    @Override
    public long byteSize(int index) {
        return length[index];
    }

    @Override
    public TieredCache cache() {
        return cache;
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

    /**
     * {@return the field names of sample {@code index}, in tar order}
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= index < size()}
     */
    public List<String> fields(int index) {
        Objects.checkIndex(index, length.length);
        String[] out = new String[firstField[index + 1] - firstField[index]];
        for (int k = 0; k < out.length; k++) {
            out[k] = names[fieldName[firstField[index] + k]];
        }
        return List.of(out);
    }

    /** {@return the number of shards} */
    int shardCount() {
        return shards.size();
    }

    /** {@return the version of shard {@code shard} that every read is pinned to} */
    ObjectInfo shardInfo(int shard) {
        return versions[shard];
    }

    /** {@return whether shard {@code shard} was indexed from its index file (else by a scan)} */
    boolean indexedFromFile(int shard) {
        return fromIndexFile[shard];
    }

    /** {@return whether shard {@code shard}'s samples are checked against its index's CRC32C (an unconfirmed index)} */
    boolean verifies(int shard) {
        return verify[shard];
    }

    /** {@return the shard holding sample {@code sample}} */
    int shardOf(int sample) {
        Objects.checkIndex(sample, length.length);
        int s = Arrays.binarySearch(firstSample, sample);
        if (s < 0) {
            return -s - 2;
        }
        while (s + 1 < firstSample.length && firstSample[s + 1] == sample) {
            s++; // skip shards without samples
        }
        return s;
    }

    /** {@return the first sample of shard {@code shard}}; shard {@code s} holds {@code [firstSample(s), firstSample(s + 1))} */
    int firstSample(int shard) {
        return firstSample[shard];
    }

    /** {@return the offset in its shard of sample {@code sample}'s extent} */
    long sampleStart(int sample) {
        return start[sample];
    }

    /** {@return the length of sample {@code sample}'s extent} */
    int sampleLength(int sample) {
        return length[sample];
    }

    /**
     * Slices a sample's fields out of its extent's bytes, checking the bytes against the index's CRC32C first when the
     * shard's index is unconfirmed (see the class comment).
     *
     * @param sample the sample
     * @param extent exactly the sample's extent bytes, from its position to its limit (not moved)
     * @return the fields, in tar order: read-only slices of {@code extent}, in an unmodifiable map
     * @throws CorruptShardException    if the bytes do not match the index's CRC32C: names shard, sample and offset
     * @throws IllegalArgumentException if {@code extent} does not hold exactly the sample's length
     */
    Map<String, ByteBuffer> fieldsOf(int sample, ByteBuffer extent) throws CorruptShardException {
        if (extent.remaining() != length[sample]) {
            throw new IllegalArgumentException("extent of sample " + sample + ": " + extent.remaining()
                    + " bytes (expected: " + length[sample] + ")");
        }
        int s = shardOf(sample);
        if (verify[s]) {
            int actual = ShardIndexFile.crc(extent);
            if (actual != crc[sample]) {
                throw new CorruptShardException(shards.get(s), start[sample], "sample '" + key(sample) + "': CRC32C "
                        + Integer.toHexString(actual) + " of its " + length[sample] + " bytes (expected: "
                        + Integer.toHexString(crc[sample]) + ", as its index '" + shards.get(s)
                        + ShardIndexFile.SUFFIX + "' records). Either the shard's bytes changed after the index was"
                        + " written (damage, or the shard rewritten in place at the same size), or the index was"
                        + " written for other bytes. To tell which, check the shard against its source (a checksum"
                        + " or the ETag it was uploaded with): if the shard is damaged, restore it; only if the"
                        + " shard is right, write its index again with WebDataset.writeIndex. Do not delete or"
                        + " rewrite the index first: the loader would then serve the damaged bytes unchecked.");
            }
        }
        int from = firstField[sample];
        int to = firstField[sample + 1];
        Map<String, ByteBuffer> fields = new LinkedHashMap<>((to - from) * 2);
        int base = extent.position();
        for (int f = from; f < to; f++) {
            fields.put(names[fieldName[f]], extent.slice(base + fieldOffset[f], fieldSize[f]).asReadOnlyBuffer());
        }
        return Collections.unmodifiableMap(fields);
    }

    /** Where a sample's bytes are, for messages: {@code shard@offset}. */
    @Override
    String source(int index) {
        return "shard '" + shard(index) + "' at offset " + start[index];
    }

    @Override
    Sample read(int index) throws IOException {
        Lease lease = cache.loaderSupport().readExtent(versions[shardOf(index)], start[index], length[index]);
        try {
            return new Sample(key(index), index, source(index), fieldsOf(index, lease.bytes()), lease);
        } catch (IOException | RuntimeException | Error e) {
            lease.close();
            throw e;
        }
    }

    @Override
    public String toString() {
        return "WebDataset[" + size() + " samples in " + shards.size() + " shards of " + cache.originUri() + "]";
    }
}
