// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.loader.ShardWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;

public class PackShards {

    public static void main(String[] args) throws IOException {
        List<String> shards = pack(Path.of(args[0]), Path.of(args[1]), 10_000);
        System.out.println("wrote " + shards.size() + " shards: " + shards);
    }

    /**
     * Packs the files under {@code src} into shards in {@code dst}. A file {@code train/n0153.jpg} is the field
     * {@code jpg} of the sample {@code train/n0153}: files sharing a key up to the first dot are one sample.
     */
    public static List<String> pack(Path src, Path dst, int samplesPerShard) throws IOException {
        Map<String, List<Path>> samples = new TreeMap<>(); // sample key -> its files
        try (Stream<Path> files = Files.walk(src)) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                String name = src.relativize(file).toString(); // train/n0153.jpg
                int dot = name.indexOf('.', name.lastIndexOf('/') + 1);
                if (dot > 0) {
                    samples.computeIfAbsent(name.substring(0, dot), k -> new ArrayList<>())
                            .add(file);
                }
            }
        }
        List<String> keys = new ArrayList<>(samples.keySet());
        Collections.shuffle(keys, new Random(42)); // mix the classes over the shards, once

        ShardWriter writer = ShardWriter.builder(dst)
                .pattern("shard-%06d.tar")
                .maxCount(samplesPerShard)
                .maxBytes(1L << 30)
                .build();
        try (writer) {
            for (String key : keys) {
                Map<String, byte[]> fields = new TreeMap<>();
                for (Path file : samples.get(key)) {
                    String fileName = file.getFileName().toString();
                    fields.put(fileName.substring(fileName.indexOf('.') + 1), Files.readAllBytes(file));
                }
                writer.write(key, fields); // members train/n0153.cls, train/n0153.jpg, consecutive
            }
        }
        return writer.shards(); // each written with its index beside it: shard-000000.tar.gidx
    }
}
