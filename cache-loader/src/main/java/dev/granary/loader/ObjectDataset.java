// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.Lease;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/** One sample per object: {@link Dataset#ofObjects} and {@link Dataset#ofKeys}. */
final class ObjectDataset extends Dataset {

    private final TieredCache cache;
    private final String[] keys;
    private final long[] sizes;

    private ObjectDataset(TieredCache cache, String[] keys, long[] sizes) {
        this.cache = cache;
        this.keys = keys;
        this.sizes = sizes;
    }

    static ObjectDataset list(TieredCache cache, String prefix) throws IOException {
        checkCache(cache);
        if (prefix == null) {
            throw new IllegalArgumentException("prefix: null (expected: a key prefix such as \"train/\", or \"\")");
        }
        List<ObjectInfo> listed = new ArrayList<>();
        try (Stream<ObjectInfo> stream = cache.list(prefix)) {
            stream.forEach(listed::add);
        } catch (java.io.UncheckedIOException e) {
            throw e.getCause();
        }
        if (listed.isEmpty()) {
            throw new IllegalArgumentException("prefix '" + prefix + "' of " + cache.originUri()
                    + ": no objects (expected: a prefix with at least one object)");
        }
        if (listed.size() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("prefix '" + prefix + "': " + listed.size()
                    + " objects (expected: fewer than 2^31 samples per dataset)");
        }
        ObjectInfo[] sorted = listed.toArray(ObjectInfo[]::new);
        byte[][] utf8 = new byte[sorted.length][];
        Integer[] order = new Integer[sorted.length];
        for (int i = 0; i < sorted.length; i++) {
            utf8[i] = sorted[i].key().getBytes(StandardCharsets.UTF_8);
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Arrays.compareUnsigned(utf8[a], utf8[b]));
        String[] keys = new String[sorted.length];
        long[] sizes = new long[sorted.length];
        for (int i = 0; i < sorted.length; i++) {
            keys[i] = sorted[order[i]].key();
            sizes[i] = sorted[order[i]].size();
        }
        return new ObjectDataset(cache, keys, sizes);
    }

    static ObjectDataset of(TieredCache cache, List<String> keys) {
        checkCache(cache);
        if (keys == null || keys.isEmpty()) {
            throw new IllegalArgumentException("keys: " + (keys == null ? "null" : "empty")
                    + " (expected: at least one object key)");
        }
        String[] array = new String[keys.size()];
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < array.length; i++) {
            String key = keys.get(i);
            if (key == null || key.isEmpty() || key.startsWith("/") || key.equals("..") || key.startsWith("../")
                    || key.contains("/../") || key.endsWith("/..")) {
                throw new IllegalArgumentException("key " + i + ": " + (key == null ? "null" : "'" + key + "'")
                        + " (expected: a relative object key without '..' segments)");
            }
            if (!seen.add(key)) {
                throw new IllegalArgumentException("key " + i + ": '" + key + "' appears twice (expected: each key"
                        + " once)");
            }
            array[i] = key;
        }
        long[] sizes = new long[array.length];
        Arrays.fill(sizes, -1);
        return new ObjectDataset(cache, array, sizes);
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
        return sizes[index];
    }

    @Override
    public TieredCache cache() {
        return cache;
    }

    @Override
    Sample read(int index) throws IOException {
        String key = keys[index];
        Lease lease = cache.read(key);
        ByteBuffer bytes = lease.bytes();
        return new Sample(key, index, key, Map.of(extension(key), bytes), lease);
    }

    /** The field name of an object: its key's extension after the first dot of the last path component. */
    static String extension(String key) {
        int slash = key.lastIndexOf('/');
        int dot = key.indexOf('.', slash + 1);
        return dot < 0 ? "" : key.substring(dot + 1);
    }

    @Override
    public String toString() {
        return "Dataset[" + keys.length + " objects of " + cache.originUri() + "]";
    }
}
