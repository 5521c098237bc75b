// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader.testkit;

import dev.granary.loader.ShardWriter;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;

/**
 * Fashion-MNIST from Debian's {@code dataset-fashion-mnist} package ({@code /usr/share/datasets/fashion-mnist}), read
 * from its IDX files and packed into WebDataset shards: sample {@code train/00042} has field {@code raw} (the 28 × 28
 * grey pixels, one byte each, row by row) and {@code cls} (the label 0–9 as ASCII). For the adapters' real training
 * tests; a missing package is an error that says how to install it, never a skip.
 */
public final class FashionMnist {

    /** Where the Debian package installs the files. */
    public static final Path DIR =
            Path.of(System.getProperty("granary.fashion-mnist.dir", "/usr/share/datasets/fashion-mnist"));

    /** Pixels per image. */
    public static final int PIXELS = 28 * 28;

    private FashionMnist() {}

    /**
     * One split: {@code count} images of {@link #PIXELS} bytes and their labels.
     *
     * @param count  the number of images
     * @param pixels {@code count × PIXELS} bytes, image after image
     * @param labels {@code count} labels, 0–9
     */
    public record Split(int count, byte[] pixels, byte[] labels) {

        /** {@return the pixels of image {@code i}} */
        public byte[] image(int i) {
            return Arrays.copyOfRange(pixels, i * PIXELS, (i + 1) * PIXELS);
        }
    }

    /**
     * Checks that the package is installed.
     *
     * @throws IllegalStateException naming the directory and the command that installs it
     */
    public static void requireInstalled() {
        for (String f : List.of(
                "train-images-idx3-ubyte.gz",
                "train-labels-idx1-ubyte.gz",
                "t10k-images-idx3-ubyte.gz",
                "t10k-labels-idx1-ubyte.gz")) {
            if (!Files.isRegularFile(DIR.resolve(f))) {
                throw new IllegalStateException("Fashion-MNIST is not installed: " + DIR.resolve(f) + " is missing."
                        + " Install Debian's package with 'sudo apt-get install dataset-fashion-mnist' (.ci/run does),"
                        + " or point -Dgranary.fashion-mnist.dir at a directory holding the four .gz IDX files.");
            }
        }
    }

    /**
     * Reads a split.
     *
     * @param name {@code "train"} (60 000 images) or {@code "t10k"} (10 000)
     * @return the split
     * @throws IOException if the files cannot be read or are not IDX files
     */
    public static Split read(String name) throws IOException {
        requireInstalled();
        byte[] images = idx(DIR.resolve(name + "-images-idx3-ubyte.gz"), 0x00000803);
        byte[] labels = idx(DIR.resolve(name + "-labels-idx1-ubyte.gz"), 0x00000801);
        if (images.length != labels.length * PIXELS) {
            throw new IOException(name + ": " + images.length + " pixel bytes for " + labels.length + " labels");
        }
        return new Split(labels.length, images, labels);
    }

    /** The payload of a gzipped IDX file, after its header (magic, dimensions). */
    private static byte[] idx(Path file, int magic) throws IOException {
        try (InputStream raw = Files.newInputStream(file);
                DataInputStream in = new DataInputStream(new GZIPInputStream(raw, 1 << 16))) {
            int found = in.readInt();
            if (found != magic) {
                throw new IOException(file + ": magic " + Integer.toHexString(found) + " (expected: "
                        + Integer.toHexString(magic) + ")");
            }
            int dims = magic & 0xff;
            long size = 1;
            for (int d = 0; d < dims; d++) {
                size *= in.readInt();
            }
            return in.readNBytes((int) size);
        }
    }

    /**
     * Packs the first {@code count} samples of a split into shards in {@code dir}.
     *
     * @param split     the images
     * @param count     how many, from the first
     * @param prefix    the key prefix, such as {@code "train"}
     * @param perShard  samples per shard
     * @param dir       where the shard files go
     * @return the shard file names, in order
     */
    public static List<String> pack(Split split, int count, String prefix, int perShard, Path dir) {
        try (ShardWriter writer = ShardWriter.builder(dir)
                .pattern(prefix + "-%05d.tar")
                .maxCount(perShard)
                .build()) {
            for (int i = 0; i < count; i++) {
                Map<String, byte[]> fields = new LinkedHashMap<>();
                fields.put("raw", split.image(i));
                fields.put("cls", Integer.toString(split.labels()[i]).getBytes(StandardCharsets.US_ASCII));
                writer.write(String.format("%s/%05d", prefix, i), fields);
            }
            writer.close();
            return writer.shards();
        }
    }
}
