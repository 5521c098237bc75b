// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Real files with random bytes in a directory, remembered so tests can compare what the cache returns. Thread-safe:
 * tests
 * replace objects from origin callbacks, which run on several fill threads at once.
 */
public final class Dataset {

    private final Path root;
    private final Map<String, byte[]> objects = new LinkedHashMap<>();
    private final SplittableRandom random;

    public Dataset(Path root, long seed) {
        this.root = root;
        this.random = new SplittableRandom(seed);
    }

    public Path root() {
        return root;
    }

    /** Writes a file of {@code size} random bytes under {@code key}; replaces it if it exists (a new inode). */
    public synchronized byte[] put(String key, int size) {
        byte[] bytes = new byte[size];
        random.nextBytes(bytes);
        put(key, bytes);
        return bytes;
    }

    public synchronized void put(String key, byte[] bytes) {
        try {
            Path file = root.resolve(key);
            Files.createDirectories(file.getParent());
            Path tmp = file.resolveSibling(file.getFileName() + ".tmp-" + random.nextInt(Integer.MAX_VALUE));
            Files.write(tmp, bytes);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            objects.put(key, bytes.clone());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public synchronized void delete(String key) {
        try {
            Files.delete(root.resolve(key));
            objects.remove(key);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public synchronized byte[] bytes(String key) {
        byte[] bytes = objects.get(key);
        if (bytes == null) {
            throw new IllegalArgumentException("no such test object: " + key);
        }
        return bytes;
    }

    public Map<String, byte[]> objects() {
        return objects;
    }

    /** {@return a copy of {@code length} bytes of an object from {@code offset}} */
    public byte[] range(String key, long offset, int length) {
        byte[] all = bytes(key);
        byte[] out = new byte[length];
        System.arraycopy(all, (int) offset, out, 0, length);
        return out;
    }
}
