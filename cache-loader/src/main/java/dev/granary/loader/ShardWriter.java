// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.IllegalFormatException;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;

/**
 * Packs samples into WebDataset tar shards — the fix for the "one small object per sample" layout that makes an
 * object store pay a request per sample. Each sample is a key and named fields; a field becomes the member
 * {@code key.field} ({@code train/n0153} + {@code jpg} → {@code train/n0153.jpg}), the fields of a sample are
 * consecutive, and a shard is closed when it holds {@link Builder#maxCount(int)} samples or would pass
 * {@link Builder#maxBytes(long)}. {@link WebDataset} reads the result; so do Python's webdataset, {@code tarfile} and
 * GNU tar (long or non-ASCII names get PAX headers).
 *
 * {@snippet :
 * try (ShardWriter shards = ShardWriter.builder(Path.of("out")).pattern("train-%06d.tar").maxCount(10_000).build()) {
 *     for (Example e : examples) {
 *         shards.write("train/" + e.id(), Map.of("jpg", e.jpeg(), "cls", e.label().getBytes(US_ASCII)));
 *     }
 * }
 * }
 *
 * <p>Into a directory, each shard is written to a temporary file and renamed when complete, so a crashed run never
 * leaves a truncated shard under its final name. With {@link #builder(Sink)} the shards go wherever the sink's
 * streams go (an upload, a pipe). Not thread-safe.
 *
 * <h2>Index files</h2>
 * Beside every shard goes its index file, {@code <shard>.gidx} (format: {@code docs/shard-index.md}), from which
 * {@link WebDataset#of} indexes the shard with one small read instead of a pass over it. Into a directory, the index is
 * written like the shard (a temporary file, renamed), right after the shard. With a sink, the writer opens a second
 * stream per shard, {@code sink.open(index, name + ".gidx")}, right after closing the shard's: store it beside the
 * shard under that name. The index records the shard's size and no version (the writer cannot know the ETag or
 * generation an upload will get): a reader checks each sample against the CRC32C the index records, and
 * {@link WebDataset#writeIndex} rebinds the index to the stored version. Turn indexes off with
 * {@link Builder#indexes(boolean)}. A sample's key may appear once per shard ({@link #write} refuses it again).
 */
public final class ShardWriter implements AutoCloseable {

    /** Opens the stream a shard is written to. */
    @FunctionalInterface
    public interface Sink {

        /**
         * Opens shard number {@code index}.
         *
         * @param index the shard's number, from 0
         * @param name  its name from the pattern, such as {@code shard-000003.tar}
         * @return a stream the writer closes when the shard is complete
         * @throws IOException if it cannot be opened
         */
        OutputStream open(int index, String name) throws IOException;
    }

    private final Sink sink;
    private final Path directory;
    private final String pattern;
    private final int maxCount;
    private final long maxBytes;
    private final boolean indexes;
    private final List<String> written = new ArrayList<>();
    /** The current shard's samples and their extents' CRC32C, for its index. */
    private final List<ShardSamples.Entry> entries = new ArrayList<>();

    private final Set<String> keys = new HashSet<>();
    private int[] crcs = new int[64];
    private Tap tap;
    private OutputStream stream;
    private TarWriter tar;
    private Path partial;
    private int inShard;
    private String pendingName;
    private boolean closed;

    private ShardWriter(Builder b) {
        this.sink = b.sink;
        this.directory = b.directory;
        this.pattern = b.pattern;
        this.maxCount = b.maxCount;
        this.maxBytes = b.maxBytes;
        this.indexes = b.indexes;
    }

    /**
     * Starts configuring a writer of shard files into a directory (created if missing).
     *
     * @param directory where the shards go
     * @return a builder
     * @throws IllegalArgumentException if null
     */
    public static Builder builder(Path directory) {
        if (directory == null) {
            throw new IllegalArgumentException("directory: null (expected: where the shards go)");
        }
        return new Builder(null, directory);
    }

    /**
     * Starts configuring a writer of shards into streams a sink opens.
     *
     * @param sink opens one stream per shard
     * @return a builder
     * @throws IllegalArgumentException if null
     */
    public static Builder builder(Sink sink) {
        if (sink == null) {
            throw new IllegalArgumentException("sink: null (expected: a function opening one stream per shard)");
        }
        return new Builder(sink, null);
    }

    /**
     * Appends a sample, starting a new shard first if the current one is full.
     *
     * @param key    the sample key: a relative path whose last component has no dot ({@code train/n0153})
     * @param fields field name to bytes, in the order to store them (use a {@code LinkedHashMap} or a sorted map for
     *               reproducible shards); names such as {@code jpg}, {@code cls}, {@code seg.png}
     * @throws IllegalArgumentException if the key or a field name breaks the convention, or there is no field
     * @throws IllegalStateException    if the writer is closed
     * @throws UncheckedIOException     if a shard cannot be written
     */
    public void write(String key, Map<String, byte[]> fields) {
        if (closed) {
            throw new IllegalStateException("shard writer is closed (expected: write before close())");
        }
        checkKey(key);
        if (fields == null || fields.isEmpty()) {
            throw new IllegalArgumentException("fields of '" + key + "': " + (fields == null ? "null" : "none")
                    + " (expected: at least one field, such as jpg or cls)");
        }
        long bytes = 0;
        for (Map.Entry<String, byte[]> field : fields.entrySet()) {
            String name = field.getKey();
            if (name == null || name.isEmpty() || name.startsWith(".") || name.endsWith(".") || name.contains("/")) {
                throw new IllegalArgumentException(
                        "field of '" + key + "': " + (name == null ? "null" : "'" + name + "'")
                                + " (expected: a name such as jpg, cls or seg.png; no '/', not starting or ending"
                                + " with '.')");
            }
            if (field.getValue() == null) {
                throw new IllegalArgumentException("field '" + name + "' of '" + key + "': null (expected: bytes)");
            }
            bytes += 1024 + field.getValue().length; // header (PAX perhaps) + data, padded
        }
        if (tar != null && (inShard >= maxCount || (inShard > 0 && tar.size() + bytes > maxBytes))) {
            finishShard();
        }
        if (tar == null) {
            openShard();
        }
        if (!keys.add(key)) {
            throw new IllegalArgumentException("sample key: '" + key + "' already written to shard " + pendingName
                    + " (expected: each key once per shard; readers refuse a key that comes back)");
        }
        long before = tar.size();
        tap.arm();
        List<ShardSamples.Field> placed = new ArrayList<>(fields.size());
        for (Map.Entry<String, byte[]> field : fields.entrySet()) {
            long offset = tar.add(key + "." + field.getKey(), field.getValue());
            placed.add(new ShardSamples.Field(field.getKey(), offset, field.getValue().length));
        }
        ShardSamples.Field last = placed.getLast();
        long start = placed.getFirst().offset();
        long end = last.offset() + last.size();
        int crc = tap.disarm((int) (start - before), (int) (end - before));
        if (indexes) {
            if (entries.size() == crcs.length) {
                crcs = Arrays.copyOf(crcs, crcs.length * 2);
            }
            crcs[entries.size()] = crc;
            entries.add(new ShardSamples.Entry(key, start, end, placed));
        }
        inShard++;
    }

    /** {@return the names of the shards completed so far, in order} */
    public List<String> shards() {
        return List.copyOf(written);
    }

    /**
     * Completes the last shard. Idempotent.
     *
     * @throws UncheckedIOException if it cannot be written
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (tar != null) {
            finishShard();
        }
    }

    private static void checkKey(String key) {
        if (key == null
                || key.isEmpty()
                || key.startsWith("/")
                || key.endsWith("/")
                || key.contains("//")
                || key.equals("..")
                || key.startsWith("../")
                || key.contains("/../")
                || key.endsWith("/..")) {
            throw new IllegalArgumentException("sample key: " + (key == null ? "null" : "'" + key + "'")
                    + " (expected: a relative path such as train/n0153)");
        }
        int slash = key.lastIndexOf('/');
        if (key.indexOf('.', slash + 1) >= 0) {
            throw new IllegalArgumentException("sample key: '" + key + "' has a '.' in its last component (expected:"
                    + " none — readers split a member's name at the first dot after the last '/')");
        }
    }

    private void openShard() {
        int index = written.size();
        String name = String.format(Locale.ROOT, pattern, index);
        try {
            if (directory != null) {
                Files.createDirectories(directory);
                Path target = directory.resolve(name);
                partial = target.resolveSibling(target.getFileName() + ".partial");
                stream = new BufferedOutputStream(Files.newOutputStream(partial), 1 << 16);
            } else {
                stream = sink.open(index, name);
                if (stream == null) {
                    throw new IOException("the sink opened no stream (null) for shard " + name);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open shard " + name, e);
        }
        tap = new Tap(stream);
        tar = new TarWriter(tap);
        inShard = 0;
        pendingName = name;
        entries.clear();
        keys.clear();
    }

    private void finishShard() {
        String name = pendingName;
        try {
            tar.finish();
            long size = tar.size();
            stream.close();
            if (partial != null) {
                Files.move(
                        partial,
                        directory.resolve(name),
                        StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
            }
            if (indexes) {
                writeIndex(name, ShardIndexFile.encode(size, "", entries, Arrays.copyOf(crcs, entries.size())));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot complete shard " + name, e);
        } finally {
            tar = null;
            tap = null;
            stream = null;
            partial = null;
            entries.clear();
            keys.clear();
        }
        written.add(name);
    }

    /** Writes a shard's index beside it: a temporary file renamed, or a second stream of the sink. */
    private void writeIndex(String shardName, byte[] index) throws IOException {
        String name = shardName + ShardIndexFile.SUFFIX;
        if (directory != null) {
            Path target = directory.resolve(name);
            Path temporary = target.resolveSibling(target.getFileName() + ".partial");
            Files.write(temporary, index);
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } else {
            try (OutputStream out = sink.open(written.size(), name)) {
                if (out == null) {
                    throw new IOException("the sink opened no stream (null) for index " + name);
                }
                out.write(index);
            }
        }
    }

    /**
     * Passes a shard's bytes through, and keeps a copy of one sample's while armed, so that the CRC32C of its extent
     * — data and the headers between its fields, not the padding after its last — can be taken.
     */
    private static final class Tap extends OutputStream {
        private final OutputStream out;
        private byte[] copy = new byte[1 << 16];
        private int size;
        private boolean armed;

        Tap(OutputStream out) {
            this.out = out;
        }

        void arm() {
            armed = true;
            size = 0;
        }

        /** Stops copying; returns the CRC32C of the copy's bytes {@code [from, to)}. */
        int disarm(int from, int to) {
            armed = false;
            CRC32C crc = new CRC32C();
            crc.update(copy, from, to - from);
            if (copy.length > 64 << 20) {
                copy = new byte[1 << 16]; // a huge sample's copy is not kept for the next
            }
            return (int) crc.getValue();
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            if (armed) {
                if (size + len > copy.length) {
                    copy = Arrays.copyOf(copy, Math.max(size + len, (int)
                            Math.min((long) copy.length * 2, Integer.MAX_VALUE - 8)));
                }
                System.arraycopy(b, off, copy, size, len);
                size += len;
            }
        }

        @Override
        public void flush() throws IOException {
            out.flush();
        }

        @Override
        public void close() throws IOException {
            out.close();
        }
    }

    @Override
    public String toString() {
        return "ShardWriter[" + (directory != null ? directory.resolve(pattern) : pattern) + ", " + written.size()
                + " shards done]";
    }

    /** Configures a {@link ShardWriter}. Setters validate at once. */
    public static final class Builder {

        private final Sink sink;
        private final Path directory;
        private String pattern = "shard-%06d.tar";
        private int maxCount = 10_000;
        private long maxBytes = 1L << 30;
        private boolean indexes = true;

        private Builder(Sink sink, Path directory) {
            this.sink = sink;
            this.directory = directory;
        }

        /**
         * Sets the shard names: a {@link String#format} pattern of the shard's number. Default
         * {@code shard-%06d.tar}.
         *
         * @param pattern such as {@code train-%06d.tar} or {@code shards/%05d.tar}
         * @return this builder
         * @throws IllegalArgumentException if it does not format one integer into a relative name ending in .tar
         */
        public Builder pattern(String pattern) {
            String sample;
            try {
                sample = pattern == null ? null : String.format(Locale.ROOT, pattern, 0);
            } catch (IllegalFormatException e) {
                sample = null;
            }
            if (sample == null
                    || sample.equals(String.format(Locale.ROOT, pattern, 1))
                    || !sample.endsWith(".tar")
                    || sample.startsWith("/")
                    || sample.contains("..")) {
                throw new IllegalArgumentException(
                        "shard name pattern: " + (pattern == null ? "null" : "'" + pattern + "'")
                                + " (expected: a relative name ending in .tar with one integer, such as"
                                + " train-%06d.tar)");
            }
            this.pattern = pattern;
            return this;
        }

        /**
         * Sets the most samples per shard. Default 10 000.
         *
         * @param samples {@code >= 1}
         * @return this builder
         * @throws IllegalArgumentException if less than 1
         */
        public Builder maxCount(int samples) {
            if (samples < 1) {
                throw new IllegalArgumentException("max samples per shard: " + samples + " (expected: >= 1)");
            }
            this.maxCount = samples;
            return this;
        }

        /**
         * Sets the size a shard should not pass: a sample that would take it over starts the next shard (a sample
         * larger than this goes alone into a shard of its own). Default 1 GiB.
         *
         * @param bytes {@code >= 1024}
         * @return this builder
         * @throws IllegalArgumentException if less than 1024
         */
        public Builder maxBytes(long bytes) {
            if (bytes < 1024) {
                throw new IllegalArgumentException("max bytes per shard: " + bytes + " (expected: >= 1024)");
            }
            this.maxBytes = bytes;
            return this;
        }

        /**
         * Sets whether an index file goes beside each shard (see the class comment). Default true.
         *
         * @param indexes whether to write {@code <shard>.gidx} files
         * @return this builder
         */
        public Builder indexes(boolean indexes) {
            this.indexes = indexes;
            return this;
        }

        /** {@return a new writer} */
        public ShardWriter build() {
            return new ShardWriter(this);
        }
    }
}
