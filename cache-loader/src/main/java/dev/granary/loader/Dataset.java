// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.TieredCache;
import java.io.IOException;
import java.util.List;

/**
 * A fixed, ordered set of samples read through a {@link TieredCache}: what a {@link DataLoader} draws its epochs from.
 * Sample {@code i} is the same sample on every run and every machine, so a seeded sampler gives the same order
 * everywhere.
 *
 * <ul>
 *   <li>{@link #ofObjects(TieredCache, String)}: one sample per object under a prefix, keys in UTF-8 byte order;</li>
 *   <li>{@link #ofKeys(TieredCache, List)}: one sample per given key, in the given order;</li>
 *   <li>{@link WebDataset#of(TieredCache, List)}: the samples inside tar shards;</li>
 *   <li>{@link ShardedDataset#of(TieredCache, List, ShardFormat)}: the samples inside shards of any
 *       {@link ShardFormat}, a user's own included.</li>
 * </ul>
 *
 * <p>Immutable and thread-safe.
 */
public abstract sealed class Dataset permits ObjectDataset, ShardedDataset {

    Dataset() {}

    /**
     * One sample per object whose key starts with {@code prefix}, in UTF-8 byte order of the keys (whatever order the
     * origin lists in). The objects' sizes and versions come from the listing, so a dataset of a million objects costs
     * the listing's pages, not a request per object, and every sample is read pinned to its listed version: the
     * origin is asked for its bytes only, however many objects there are and however long ago the listing was (the
     * cache's {@code metadataTtl} and {@code metadataCapacity} do not apply). An object changed since the listing
     * fails its sample with {@link dev.granary.ObjectChangedException}, a deleted one with
     * {@link dev.granary.NoSuchObjectException}, both naming the key; build the dataset again to take changes in.
     * The dataset keeps a few tens of bytes of heap per object (front-coded keys, compact sizes and versions).
     *
     * @param cache  the cache to read through
     * @param prefix a key prefix such as {@code "train/"}; empty for every object
     * @return the dataset
     * @throws IllegalArgumentException if the cache or prefix is null or the prefix invalid, or nothing is listed
     * @throws IOException              if the listing fails
     */
    public static Dataset ofObjects(TieredCache cache, String prefix) throws IOException {
        return ObjectDataset.list(cache, prefix);
    }

    /**
     * One sample per key, in the given order. Nothing is asked of the origin now: a key that does not exist fails the
     * batch that reads it. Each read asks for the object's current version as {@link TieredCache#read(String)} does
     * (a stat once per {@code metadataTtl}); the dataset keeps the keys front-coded, not the caller's strings.
     *
     * @param cache the cache to read through
     * @param keys  object keys, each once
     * @return the dataset
     * @throws IllegalArgumentException if the cache or the list is null, empty, or has a null, invalid or repeated key
     */
    public static Dataset ofKeys(TieredCache cache, List<String> keys) {
        return ObjectDataset.of(cache, keys);
    }

    /** {@return the number of samples} */
    public abstract int size();

    /**
     * {@return sample {@code index}'s key}
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= index < size()}
     */
    public abstract String key(int index);

    /**
     * {@return the bytes sample {@code index} will read, or {@code -1} if not known before reading it}
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= index < size()}
     */
    public abstract long byteSize(int index);

    /** {@return where sample {@code index} comes from, for messages: its key, or its shard and offset} */
    String source(int index) {
        return key(index);
    }

    /** {@return the cache the samples are read through} */
    public abstract TieredCache cache();

    /** Reads sample {@code index} through the cache; the caller releases it. */
    abstract Sample read(int index) throws IOException;

    static void checkCache(TieredCache cache) {
        if (cache == null) {
            throw new IllegalArgumentException("cache: null (expected: a TieredCache)");
        }
    }
}
