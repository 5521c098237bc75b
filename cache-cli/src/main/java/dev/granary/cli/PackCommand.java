// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.loader.ShardWriter;
import java.awt.image.BufferedImage;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import javax.imageio.ImageIO;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code granary pack}: many small files, or IDX files (MNIST, Fashion-MNIST), into WebDataset shards with their
 * {@code .gidx} indexes, through the loader's {@link ShardWriter}.
 *
 * <p>Small files follow the WebDataset convention: a file's path up to the first dot of its last component is its
 * sample's key, the rest its field ({@code train/n0153.seg.png}: sample {@code train/n0153}, field {@code seg.png});
 * files sharing a key are one sample. Files are taken in the byte order of their paths, so the same directory always
 * packs into the same shards. Files with no extension, or whose name starts with a dot, are skipped and counted.
 *
 * <p>A directory holding {@code <name>-images-idx3-ubyte} and {@code <name>-labels-idx1-ubyte} (each possibly
 * {@code .gz}) is packed as images instead: sample {@code <name>/<index>} with fields {@code png} (the image, 8-bit
 * grey) and {@code cls} (the label as decimal text).
 */
@Command(
        name = "pack",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Pack a directory of small files (or IDX image/label files such as Fashion-MNIST's) into"
                    + " WebDataset tar shards, each with its .gidx index beside it.",
            "",
            "  granary pack ./images ./shards --max-count 10000 --max-size 1G"
        },
        footer = {"", ExitCodes.HELP})
final class PackCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "<src-dir>", description = "The files to pack.")
    Path source;

    @Parameters(index = "1", paramLabel = "<dst-dir>", description = "Where the shards go (created if missing).")
    Path target;

    @Option(
            names = "--max-count",
            paramLabel = "<n>",
            defaultValue = "10000",
            description = "Samples per shard at most. Default: ${DEFAULT-VALUE}.")
    int maxCount;

    @Option(
            names = "--max-size",
            paramLabel = "<size>",
            converter = Sizes.class,
            defaultValue = "1G",
            description = "Bytes per shard at most (a larger sample goes alone). Default: ${DEFAULT-VALUE}.")
    long maxSize;

    @Option(
            names = "--pattern",
            paramLabel = "<pattern>",
            defaultValue = "shard-%06d.tar",
            description = "Shard names, a format of the shard's number. Default: ${DEFAULT-VALUE}.")
    String pattern;

    @Spec
    CommandSpec spec;

    private long samples;
    private long bytes;
    private long skipped;

    @Override
    public Integer call() throws IOException {
        if (!Files.isDirectory(source)) {
            throw new IllegalArgumentException("source directory: " + source + " (expected: an existing directory)");
        }
        if (Files.exists(target) && target.toRealPath().startsWith(source.toRealPath())) {
            throw new IllegalArgumentException("target directory: " + target + " is inside the source " + source
                    + " (expected: a directory outside it, or the shards would pack themselves)");
        }
        PrintWriter out = spec.commandLine().getOut();
        List<String[]> idx = idxPairs();
        List<String> shards;
        try (ShardWriter writer = ShardWriter.builder(target)
                .pattern(pattern)
                .maxCount(maxCount)
                .maxBytes(maxSize)
                .build()) {
            if (!idx.isEmpty()) {
                for (String[] pair : idx) {
                    packIdx(writer, pair[0], source.resolve(pair[1]), source.resolve(pair[2]));
                }
            } else {
                packFiles(writer);
            }
            writer.close();
            shards = writer.shards();
        }
        if (samples == 0) {
            throw new IllegalArgumentException("source directory: " + source + " has nothing to pack (expected:"
                    + " files named <key>.<field>, or IDX files <name>-images-idx3-ubyte and"
                    + " <name>-labels-idx1-ubyte)");
        }
        out.printf(
                Locale.ROOT,
                "packed %d samples (%s) into %d shards with indexes in %s%s%n",
                samples,
                Sizes.format(bytes),
                shards.size(),
                target,
                skipped > 0 ? "; skipped " + skipped + " files without an extension or starting with a dot" : "");
        for (String shard : shards) {
            out.println("  " + shard + " " + Sizes.format(Files.size(target.resolve(shard))));
        }
        out.flush();
        return ExitCodes.OK;
    }

    /** {name, images file, labels file} for each IDX pair in the source directory. */
    private List<String[]> idxPairs() throws IOException {
        List<String[]> pairs = new ArrayList<>();
        try (Stream<Path> files = Files.list(source)) {
            for (Path f : files.sorted().toList()) {
                String n = f.getFileName().toString();
                String base = n.endsWith(".gz") ? n.substring(0, n.length() - 3) : n;
                if (base.endsWith("-images-idx3-ubyte")) {
                    String name = base.substring(0, base.length() - "-images-idx3-ubyte".length());
                    for (String labels : List.of(name + "-labels-idx1-ubyte", name + "-labels-idx1-ubyte.gz")) {
                        if (Files.exists(source.resolve(labels))) {
                            pairs.add(new String[] {name, n, labels});
                        }
                    }
                }
            }
        }
        return pairs;
    }

    private void packIdx(ShardWriter writer, String name, Path imagesFile, Path labelsFile) throws IOException {
        try (DataInputStream images = new DataInputStream(open(imagesFile));
                DataInputStream labels = new DataInputStream(open(labelsFile))) {
            int magic = images.readInt();
            if (magic != 0x00000803) {
                throw new IllegalArgumentException("IDX images " + imagesFile + ": magic 0x"
                        + Integer.toHexString(magic) + " (expected: 0x803, unsigned bytes in 3 dimensions)");
            }
            int n = images.readInt();
            int rows = images.readInt();
            int cols = images.readInt();
            int labelMagic = labels.readInt();
            int labelCount = labels.readInt();
            if (labelMagic != 0x00000801 || labelCount != n) {
                throw new IllegalArgumentException("IDX labels " + labelsFile + ": magic 0x"
                        + Integer.toHexString(labelMagic) + ", " + labelCount + " labels (expected: 0x801 and " + n
                        + " labels, one per image)");
            }
            byte[] pixels = new byte[rows * cols];
            for (int i = 0; i < n; i++) {
                images.readFully(pixels);
                int label = labels.readUnsignedByte();
                BufferedImage image = new BufferedImage(cols, rows, BufferedImage.TYPE_BYTE_GRAY);
                image.getRaster().setDataElements(0, 0, cols, rows, pixels);
                ByteArrayOutputStream png = new ByteArrayOutputStream();
                ImageIO.write(image, "png", png);
                Map<String, byte[]> fields = new LinkedHashMap<>();
                fields.put("png", png.toByteArray());
                fields.put("cls", Integer.toString(label).getBytes(StandardCharsets.US_ASCII));
                write(writer, String.format(Locale.ROOT, "%s/%06d", name, i), fields);
            }
        }
    }

    private static InputStream open(Path file) throws IOException {
        InputStream in = Files.newInputStream(file);
        return file.getFileName().toString().endsWith(".gz")
                ? new GZIPInputStream(in, 1 << 16)
                : new BufferedInputStream(in, 1 << 16);
    }

    private void packFiles(ShardWriter writer) throws IOException {
        // Sorted by path bytes (as the key order of a listing); a sample's files are then one after another.
        TreeMap<String, Path> files = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(source)) {
            walk.filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)).forEach(p -> {
                String rel = source.relativize(p).toString().replace(File.separatorChar, '/');
                files.put(rel, p);
            });
        }
        String key = null;
        Map<String, byte[]> fields = new LinkedHashMap<>();
        for (Map.Entry<String, Path> e : files.entrySet()) {
            String rel = e.getKey();
            int slash = rel.lastIndexOf('/');
            String name = rel.substring(slash + 1);
            int dot = name.indexOf('.');
            if (dot <= 0 || dot == name.length() - 1) {
                skipped++;
                continue;
            }
            String sample = rel.substring(0, slash + 1 + dot);
            String field = name.substring(dot + 1);
            if (!sample.equals(key)) {
                if (key != null) {
                    write(writer, key, fields);
                }
                key = sample;
                fields = new LinkedHashMap<>();
            }
            fields.put(field, Files.readAllBytes(e.getValue()));
        }
        if (key != null) {
            write(writer, key, fields);
        }
    }

    private void write(ShardWriter writer, String key, Map<String, byte[]> fields) {
        writer.write(key, fields);
        samples++;
        for (byte[] b : fields.values()) {
            bytes += b.length;
        }
    }
}
