// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.Lease;
import dev.granary.LoaderSupport;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Semaphore;

/**
 * The samples inside WebDataset tar shards: each shard is indexed by reading only its headers through ranged reads,
 * members are grouped into samples by basename with fields by extension, and a sample is read as one ranged read of
 * its own bytes — never the whole shard.
 *
 * <p>The convention is webdataset's: a member's sample key is its path up to the first dot of its last path
 * component, the rest is the field name ({@code train/n0153.seg.png} → sample {@code train/n0153}, field
 * {@code seg.png}); consecutive members with one key form one sample. Shards are plain tar as real tools write them:
 * ustar, GNU (long names) and PAX (Python's {@code tarfile} default, webdataset's {@code ShardWriter}); directories,
 * links and other non-file members are skipped, as are files without an extension.
 *
 * <h2>Cost</h2>
 * Indexing reads one 512-byte header per member (plus the extended-header data of PAX and GNU long names), shard
 * after shard in parallel — except through runs of small members (under ~3.5 KiB: labels, JSON, small images), where
 * it reads 64 KiB windows and parses every header inside, so a shard of tiny samples costs a few requests per
 * hundred samples rather than two per sample; larger members' data is never read. Single header reads are cached like
 * any extent, so a second index of the same shards — in this JVM or after a restart over a disk tier — is served by
 * the cache; windows are not kept (they would hold a second copy of the samples, and take the room the loader's first
 * epoch fills). A sample read is one extent from the first
 * byte of its first field to the last byte of its last (the headers of later fields in between are read too: 512
 * bytes each). The index lives in this object: build it once and reuse it across epochs and loaders.
 *
 * <h2>Versions</h2>
 * Each shard is indexed at one version (S3 ETag, GCS generation, POSIX size+mtime), and every later read of it is
 * pinned to that version ({@link dev.granary.LoaderSupport#readExtent(dev.granary.ObjectInfo, long, int)}): cached samples of the
 * indexed version keep being served, and a sample that must come from the origin after the shard was rewritten fails
 * its batch with an {@link dev.granary.ObjectChangedException} — the index's offsets are never applied to other
 * bytes. Index the shards again to pick up a new version.
 *
 * <p>A corrupt shard (bad header checksum, truncated) fails {@link #of} with a {@link CorruptShardException} naming
 * the shard and the byte offset. Immutable and thread-safe.
 */
public final class WebDataset extends Dataset {

    private static final int INDEX_CONCURRENCY = 64;

    private final TieredCache cache;
    private final List<String> shards;
    /** Each shard's version when it was indexed: every read is pinned to it, so the index's offsets stay valid. */
    private final ObjectInfo[] versions;
    private final int[] shardOf;
    private final long[] start;
    private final int[] length;
    private final String[] keys;
    private final String[][] fieldNames;
    private final long[][] fieldOffsets;
    private final int[][] fieldSizes;

    private WebDataset(TieredCache cache, List<String> shards, ObjectInfo[] versions,
            List<List<ShardSamples.Entry>> index) {
        this.cache = cache;
        this.shards = shards;
        this.versions = versions;
        int n = 0;
        for (List<ShardSamples.Entry> entries : index) {
            n += entries.size();
        }
        shardOf = new int[n];
        start = new long[n];
        length = new int[n];
        keys = new String[n];
        fieldNames = new String[n][];
        fieldOffsets = new long[n][];
        fieldSizes = new int[n][];
        int i = 0;
        for (int s = 0; s < index.size(); s++) {
            for (ShardSamples.Entry e : index.get(s)) {
                long extent = e.end() - e.start();
                if (extent > Integer.MAX_VALUE - 8) {
                    throw new IllegalArgumentException("sample '" + e.key() + "' of shard '" + shards.get(s) + "': "
                            + extent + " bytes (expected: at most " + (Integer.MAX_VALUE - 8) + " per sample)");
                }
                shardOf[i] = s;
                start[i] = e.start();
                length[i] = (int) extent;
                keys[i] = e.key();
                int f = e.fields().size();
                fieldNames[i] = new String[f];
                fieldOffsets[i] = new long[f];
                fieldSizes[i] = new int[f];
                for (int k = 0; k < f; k++) {
                    ShardSamples.Field field = e.fields().get(k);
                    fieldNames[i][k] = field.name();
                    fieldOffsets[i][k] = field.offset() - e.start();
                    fieldSizes[i][k] = (int) field.size();
                }
                i++;
            }
        }
    }

    /**
     * Indexes tar shards: reads their headers (in parallel over the shards) and groups their members into samples.
     * Samples are numbered shard by shard, in the order given, then in tar order.
     *
     * @param cache     the cache to read through
     * @param shardKeys the shards' object keys, each once
     * @return the dataset
     * @throws IllegalArgumentException if the cache or list is null or empty, a key is invalid or repeated, or the
     *                                  shards hold no sample
     * @throws CorruptShardException    if a shard is not a valid tar (bad checksum, truncated): names shard and offset
     * @throws dev.granary.NoSuchObjectException if a shard does not exist
     * @throws IOException              if the origin fails
     */
    public static WebDataset of(TieredCache cache, List<String> shardKeys) throws IOException {
        checkCache(cache);
        ObjectDataset.of(cache, shardKeys); // validates the keys: non-empty, relative, each once
        List<String> shards = List.copyOf(shardKeys);
        List<List<ShardSamples.Entry>> index = new ArrayList<>(shards.size());
        ObjectInfo[] versions = new ObjectInfo[shards.size()];
        for (int i = 0; i < shards.size(); i++) {
            index.add(null);
        }
        Semaphore permits = new Semaphore(INDEX_CONCURRENCY);
        IOException[] failure = new IOException[1];
        List<Thread> threads = new ArrayList<>(shards.size());
        try {
            for (int s = 0; s < shards.size(); s++) {
                int shard = s;
                permits.acquire();
                threads.add(Thread.ofVirtual().name("granary-webdataset-index").start(() -> {
                    try {
                        ObjectInfo info = cache.stat(shards.get(shard));
                        versions[shard] = info;
                        index.set(shard, indexShard(cache, info));
                    } catch (IOException | RuntimeException e) {
                        synchronized (failure) {
                            if (failure[0] == null) {
                                failure[0] = e instanceof IOException io ? io : new IOException("shard '"
                                        + shards.get(shard) + "': " + e, e);
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
            throw new InterruptedIOException("interrupted while indexing " + shards.size() + " shards");
        }
        if (failure[0] != null) {
            throw failure[0];
        }
        WebDataset dataset = new WebDataset(cache, shards, versions, index);
        if (dataset.size() == 0) {
            throw new IllegalArgumentException("shards " + (shards.size() <= 3 ? shards : shards.subList(0, 3) + "…")
                    + " of " + cache.originUri() + ": no samples (expected: tar members named key.ext)");
        }
        return dataset;
    }

    private static List<ShardSamples.Entry> indexShard(TieredCache cache, ObjectInfo info) throws IOException {
        String shard = info.key();
        LoaderSupport extents = cache.loaderSupport();
        TarIndex.RangeReader reader = new TarIndex.RangeReader() {
            @Override
            public ByteBuffer read(long offset, int length) throws IOException {
                try (Lease lease = extents.readExtent(info, offset, length)) { // a header block: cached
                    return copy(lease);
                }
            }

            @Override
            public ByteBuffer readAhead(long offset, int length) throws IOException {
                try (Lease lease = extents.readExtentUncached(info, offset, length)) { // a window: not kept
                    return copy(lease);
                }
            }
        };
        List<TarIndex.Member> members = TarIndex.scan(shard, info.size(), reader, true);
        return ShardSamples.group(shard, members);
    }

    private static ByteBuffer copy(Lease lease) {
        ByteBuffer bytes = lease.bytes();
        ByteBuffer copy = ByteBuffer.allocate(bytes.remaining());
        copy.put(bytes).flip();
        return copy;
    }

    @Override
    public int size() {
        return keys.length;
    }

    @Override
    public String key(int index) {
        return keys[index];
    }

    @Override
    public long byteSize(int index) {
        return length[index];
    }

    @Override
    public TieredCache cache() {
        return cache;
    }

    /** {@return the number of shards} */
    int shardCount() {
        return shards.size();
    }

    /**
     * {@return the first sample of shard {@code shard}}: shard {@code s} holds samples
     * {@code [firstSample(s), firstSample(s + 1))}; {@code firstSample(shardCount())} is {@link #size()}
     */
    int firstSample(int shard) {
        int lo = 0;
        int hi = shardOf.length;
        while (lo < hi) { // the first sample whose shard is at least `shard`
            int mid = (lo + hi) >>> 1;
            if (shardOf[mid] < shard) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
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
        return shards.get(shardOf[index]);
    }

    /**
     * {@return the field names of sample {@code index}, in tar order}
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= index < size()}
     */
    public List<String> fields(int index) {
        return List.of(fieldNames[index]);
    }

    /** Where a sample's bytes are, for messages: {@code shard@offset}. */
    @Override
    String source(int index) {
        return "shard '" + shard(index) + "' at offset " + start[index];
    }

    @Override
    Sample read(int index) throws IOException {
        Lease lease = cache.loaderSupport().readExtent(versions[shardOf[index]], start[index], length[index]);
        try {
            ByteBuffer extent = lease.bytes();
            String[] names = fieldNames[index];
            Map<String, ByteBuffer> fields = new LinkedHashMap<>(names.length * 2);
            for (int k = 0; k < names.length; k++) {
                fields.put(names[k], extent.slice((int) fieldOffsets[index][k], fieldSizes[index][k])
                        .asReadOnlyBuffer());
            }
            return new Sample(keys[index], index, source(index), java.util.Collections.unmodifiableMap(fields),
                    lease);
        } catch (RuntimeException | Error e) {
            lease.close();
            throw e;
        }
    }

    @Override
    public String toString() {
        return "WebDataset[" + keys.length + " samples in " + shards.size() + " shards of " + cache.originUri() + "]";
    }
}
