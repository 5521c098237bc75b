// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;

/** Files of random bytes under {@code <root>/train/}, remembered so a test can check every byte read back. */
final class ExampleData {

    private final Path root;
    private final Map<String, byte[]> objects = new TreeMap<>();

    private ExampleData(Path root) {
        this.root = root;
    }

    /** {@code count} files {@code train/c<class>/<n>.bin} of 1 to {@code maxSize} random bytes. */
    static ExampleData write(Path root, int count, int maxSize) throws IOException {
        ExampleData data = new ExampleData(root);
        SplittableRandom random = new SplittableRandom(count * 31L + maxSize);
        for (int i = 0; i < count; i++) {
            String key = String.format("train/c%d/%05d.bin", i % 7, i);
            byte[] bytes = new byte[1 + random.nextInt(maxSize)];
            random.nextBytes(bytes);
            Path file = root.resolve(key);
            Files.createDirectories(file.getParent());
            Files.write(file, bytes);
            data.objects.put(key, bytes);
        }
        return data;
    }

    Path root() {
        return root;
    }

    Map<String, byte[]> objects() {
        return objects;
    }

    int count() {
        return objects.size();
    }

    long totalBytes() {
        return objects.values().stream().mapToLong(b -> b.length).sum();
    }

    /** Asserts that {@code read} holds every object exactly once, each with its exact bytes. */
    void assertEveryObjectOnce(Collection<? extends Map.Entry<String, byte[]>> read, String what) {
        assertEquals(count(), read.size(), what + ": samples");
        Set<String> seen = new HashSet<>();
        for (Map.Entry<String, byte[]> e : read) {
            byte[] expected = objects.get(e.getKey());
            assertNotNull(expected, what + ": a sample that is not a file: " + e.getKey());
            assertArrayEquals(expected, e.getValue(), what + ": the bytes of " + e.getKey());
            assertEquals(true, seen.add(e.getKey()), what + ": " + e.getKey() + " twice");
        }
    }
}
