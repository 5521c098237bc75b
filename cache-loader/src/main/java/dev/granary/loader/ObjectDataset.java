// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.Lease;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * One sample per object: {@link Dataset#ofObjects} and {@link Dataset#ofKeys}.
 *
 * <h2>Memory</h2>
 * Nothing per sample is an object: keys are front-coded UTF-8 ({@link FrontCodedStrings}), sizes an {@code int[]}
 * ({@code long[]} only if an object is 2 GiB or larger), versions stored by their shape ({@link ObjectVersions}). A
 * listing of 5 million ImageNet-like keys with S3 ETags keeps about 30 bytes per sample (docs/benchmarks.md). Keys,
 * versions and {@link ObjectInfo}s are rebuilt when a sample is read.
 *
 * <h2>Reads</h2>
 * A listed sample is read pinned to the size and version the listing gave
 * ({@link dev.granary.LoaderSupport#readExtent(ObjectInfo, long, int)}): no stat, so the cache's metadata (and its
 * {@code metadataCapacity}) plays no part, and an object changed or deleted since the listing fails with
 * {@link dev.granary.ObjectChangedException} or {@link dev.granary.NoSuchObjectException} naming its key, rather than
 * yield bytes of another version under the listed size. A sample is one extent {@code [0, size)}: for an object no
 * larger than the cache's page size that is exactly the page {@code cache.read(key)} caches; a larger one is one unit
 * of its own (a zero-copy view, where {@code cache.read} would copy its pages into one buffer) — unless the tiers
 * hold the object's pages (a prestage), which then serve it by one copy, without the origin — and one larger than a
 * tier holds in one piece (a memory slab, a disk segment) is not cached there (the tier logs it once). A sample of
 * {@link Dataset#ofKeys} (nothing listed) reads the object's current version through {@link TieredCache#read}.
 *
 * <p>Immutable and thread-safe: every field is final and its arrays are never written after construction.
 */
final class ObjectDataset extends Dataset {

    private final TieredCache cache;
    private final FrontCodedStrings keys;
    /** Sizes while every object is below 2 GiB; else null and {@link #longSizes} holds them; both null for ofKeys. */
    private final int[] sizes;

    private final long[] longSizes;
    /** The listed versions, or null when nothing was listed (ofKeys). */
    private final ObjectVersions versions;

    private ObjectDataset(
            TieredCache cache, FrontCodedStrings keys, int[] sizes, long[] longSizes, ObjectVersions versions) {
        this.cache = cache;
        this.keys = keys;
        this.sizes = sizes;
        this.longSizes = longSizes;
        this.versions = versions;
    }

    static ObjectDataset list(TieredCache cache, String prefix) throws IOException {
        checkCache(cache);
        if (prefix == null) {
            throw new IllegalArgumentException("prefix: null (expected: a key prefix such as \"train/\", or \"\")");
        }
        Listing listing = new Listing();
        // LoaderSupport.list: the versions stay here, not in the cache's metadata as well; reads are pinned to them.
        try (Stream<ObjectInfo> stream = cache.loaderSupport().list(prefix)) {
            Iterator<ObjectInfo> it = stream.iterator();
            while (it.hasNext()) {
                listing.add(it.next(), prefix);
            }
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        if (listing.size == 0) {
            throw new IllegalArgumentException("prefix '" + prefix + "' of " + cache.originUri()
                    + ": no objects (expected: a prefix with at least one object)");
        }
        return listing.build(cache, prefix);
    }

    static ObjectDataset of(TieredCache cache, List<String> keys) {
        checkCache(cache);
        if (keys == null || keys.isEmpty()) {
            throw new IllegalArgumentException(
                    "keys: " + (keys == null ? "null" : "empty") + " (expected: at least one object key)");
        }
        int n = keys.size();
        if (n > 1 << 29) {
            throw new IllegalArgumentException("keys: " + n + " (expected: at most 2^29; list a prefix with"
                    + " Dataset.ofObjects, or split the dataset)");
        }
        // Repeats are found with an open-addressing table of indices (4 bytes a slot, at most half full) rather than
        // a HashSet of the keys (about 50 bytes a key): the caller's list holds the keys meanwhile.
        int[] table = new int[Integer.highestOneBit(Math.max(2, n - 1)) << 2];
        int mask = table.length - 1;
        FrontCodedStrings.Builder encoded = new FrontCodedStrings.Builder();
        for (int i = 0; i < n; i++) {
            String key = keys.get(i);
            if (key == null
                    || key.isEmpty()
                    || key.startsWith("/")
                    || key.equals("..")
                    || key.startsWith("../")
                    || key.contains("/../")
                    || key.endsWith("/..")) {
                throw new IllegalArgumentException("key " + i + ": " + (key == null ? "null" : "'" + key + "'")
                        + " (expected: a relative object key without '..' segments)");
            }
            int slot = mix(key.hashCode()) & mask;
            for (int other; (other = table[slot]) != 0; slot = (slot + 1) & mask) {
                if (keys.get(other - 1).equals(key)) {
                    throw new IllegalArgumentException(
                            "key " + i + ": '" + key + "' appears twice (expected: each" + " key once)");
                }
            }
            table[slot] = i + 1;
            try {
                encoded.add(key);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("key " + i + ": " + e.getMessage(), e);
            }
        }
        return new ObjectDataset(cache, encoded.build(), null, null, null);
    }

    private static int mix(int h) {
        h *= 0x9E3779B9;
        return h ^ (h >>> 16);
    }

    @Override
    public int size() {
        return keys.size();
    }

    @Override
    public String key(int index) {
        return keys.get(index);
    }

    @Override
    public long byteSize(int index) {
        if (sizes != null) {
            return sizes[index];
        }
        if (longSizes != null) {
            return longSizes[index];
        }
        Objects.checkIndex(index, keys.size());
        return -1;
    }

    @Override
    public TieredCache cache() {
        return cache;
    }

    /**
     * {@return the object sample {@code index} is read pinned to: its key and its listed size and version}, or null
     * for a dataset of keys, whose samples read the current version
     */
    ObjectInfo object(int index) {
        if (versions == null) {
            Objects.checkIndex(index, keys.size());
            return null;
        }
        long size = byteSize(index);
        return new ObjectInfo(keys.get(index), size, versions.get(index, size));
    }

    @Override
    Sample read(int index) throws IOException {
        ObjectInfo object = object(index);
        String key;
        Lease lease;
        if (object == null) {
            key = keys.get(index);
            lease = cache.read(key);
        } else {
            key = object.key();
            if (object.size() > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("object '" + key + "' has " + object.size() + " bytes (expected:"
                        + " at most " + (Integer.MAX_VALUE - 8) + " for one sample)");
            }
            lease = cache.loaderSupport().readExtent(object, 0, (int) object.size());
        }
        ByteBuffer bytes = lease.bytes();
        return new Sample(key, index, key, Map.of(extension(key), bytes), lease);
    }

    /** The field name of an object: its key's extension after the first dot of the last path component. */
    static String extension(String key) {
        int slash = key.lastIndexOf('/');
        int dot = key.indexOf('.', slash + 1);
        return dot < 0 ? "" : key.substring(dot + 1);
    }

    /** {@return the heap bytes of the per-sample arrays} (for tests and the heap benchmark's cross-check) */
    long heapBytes() {
        return keys.heapBytes()
                + (sizes == null ? 0 : 16 + 4L * sizes.length)
                + (longSizes == null ? 0 : 16 + 8L * longSizes.length);
    }

    @Override
    public String toString() {
        return "Dataset[" + keys.size() + " objects of " + cache.originUri() + "]";
    }

    /**
     * A listing being collected: keys front-coded as they come, sizes in a growing {@code int[]}, versions as
     * front-coded strings until their shape is known. Origins list in key order, so the keys are usually final as
     * they are; a listing in another order is sorted once at the end.
     *
     * <p>Peak memory: the encoded keys, the staged versions (their UTF-8 bytes, 1–3 bytes more each), the sizes (an
     * array that grows by half when full) and, at the end, the encoded versions: about twice what the dataset keeps,
     * nothing per object. A listing out of order needs the keys decoded once more to be sorted.
     */
    private static final class Listing {
        private final FrontCodedStrings.Builder keys = new FrontCodedStrings.Builder();
        private final FrontCodedStrings.Builder versions = new FrontCodedStrings.Builder();
        private int[] sizes = new int[1024];
        private long[] longSizes;
        private int size;

        void add(ObjectInfo info, String prefix) {
            if (size == Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("prefix '" + prefix + "': more than " + size
                        + " objects (expected: fewer than 2^31 samples per dataset)");
            }
            FrontCodedStrings.checkUnicode(info.key());
            byte[] key = info.key().getBytes(StandardCharsets.UTF_8);
            keys.add(key, key.length);
            versions.add(info.version());
            long bytes = info.size();
            if (longSizes == null && bytes > Integer.MAX_VALUE) {
                longSizes = new long[Math.max(sizes.length, size + 1)];
                for (int i = 0; i < size; i++) {
                    longSizes[i] = sizes[i];
                }
                sizes = null;
            }
            if (longSizes != null) {
                if (size == longSizes.length) {
                    longSizes = Arrays.copyOf(longSizes, grow(size));
                }
                longSizes[size] = bytes;
            } else {
                if (size == sizes.length) {
                    sizes = Arrays.copyOf(sizes, grow(size));
                }
                sizes[size] = (int) bytes;
            }
            size++;
        }

        private static int grow(int n) {
            return (int) Math.min(Integer.MAX_VALUE - 8, n + (n >> 1) + 16L);
        }

        ObjectDataset build(TieredCache cache, String prefix) {
            int[] s = sizes == null ? null : Arrays.copyOf(sizes, size);
            long[] l = longSizes == null ? null : Arrays.copyOf(longSizes, size);
            sizes = null;
            longSizes = null;
            FrontCodedStrings k = keys.build();
            FrontCodedStrings v = versions.build();
            if (!keys.sorted()) {
                int[] order = sortedOrder(k);
                byte[] scratch = new byte[k.maxLength()];
                FrontCodedStrings.Builder sortedKeys = new FrontCodedStrings.Builder();
                FrontCodedStrings.Builder sortedVersions = new FrontCodedStrings.Builder();
                for (int i : order) {
                    sortedKeys.add(scratch, k.decode(i, scratch));
                    sortedVersions.add(v.get(i));
                }
                if (!sortedKeys.sorted()) { // ascending but not strictly: a key was listed twice
                    throw new IllegalArgumentException("prefix '" + prefix + "' of " + cache.originUri()
                            + ": the origin listed a key twice (expected: each object once)");
                }
                k = sortedKeys.build();
                v = sortedVersions.build();
                s = s == null ? null : permute(s, order);
                l = l == null ? null : permute(l, order);
            }
            int[] fs = s;
            long[] fl = l;
            ObjectVersions encoded = ObjectVersions.of(v, i -> fs != null ? fs[i] : fl[i]);
            return new ObjectDataset(cache, k, s, l, encoded);
        }

        /** The indices of the keys in ascending order of their UTF-8 bytes (a stable merge sort). */
        private static int[] sortedOrder(FrontCodedStrings keys) {
            int n = keys.size();
            byte[][] raw = new byte[n][];
            byte[] scratch = new byte[keys.maxLength()];
            for (int i = 0; i < n; i++) {
                raw[i] = Arrays.copyOf(scratch, keys.decode(i, scratch));
            }
            int[] order = new int[n];
            for (int i = 0; i < n; i++) {
                order[i] = i;
            }
            int[] buffer = new int[n];
            for (int width = 1; width < n; width <<= 1) {
                for (int lo = 0; lo < n - width; lo += width << 1) {
                    int mid = lo + width;
                    int hi = Math.min(n, mid + width);
                    int a = lo;
                    int b = mid;
                    int o = lo;
                    while (a < mid && b < hi) {
                        buffer[o++] =
                                Arrays.compareUnsigned(raw[order[b]], raw[order[a]]) < 0 ? order[b++] : order[a++];
                    }
                    while (a < mid) {
                        buffer[o++] = order[a++];
                    }
                    while (b < hi) {
                        buffer[o++] = order[b++];
                    }
                    System.arraycopy(buffer, lo, order, lo, hi - lo);
                }
            }
            return order;
        }

        private static int[] permute(int[] values, int[] order) {
            int[] out = new int[values.length];
            for (int i = 0; i < order.length; i++) {
                out[i] = values[order[i]];
            }
            return out;
        }

        private static long[] permute(long[] values, int[] order) {
            long[] out = new long[values.length];
            for (int i = 0; i < order.length; i++) {
                out[i] = values[order[i]];
            }
            return out;
        }
    }
}
