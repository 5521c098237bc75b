// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.posix;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import java.util.concurrent.TimeUnit;

/**
 * An origin over a directory of a POSIX file system: a local disk, or a mount of Lustre, NFS, GPFS, JuiceFS or
 * Alluxio FUSE.
 *
 * <h2>Keys and the root</h2>
 * A key is a relative path below the root, with {@code /} as separator. Keys that are not normalised ({@code .} or
 * empty segments, a trailing {@code /}), that are absolute, that contain {@code ..}, or whose real path (after
 * symbolic links) lies outside the root's real path are rejected with {@link IllegalArgumentException}: one key can
 * never read a file outside the root. Only regular files are objects.
 *
 * <h2>Versions</h2>
 * An object's version is its size, modification time (nanoseconds where the file system keeps them) and inode. A read
 * opens the file, checks that it still has the version it was asked for, reads, and checks again: if the file was
 * replaced or modified meanwhile the read fails with {@link ObjectChangedException}. (A writer that changes bytes in
 * place without changing size or mtime cannot be detected by any POSIX reader; datasets are written, then read.)
 *
 * <h2>Listing</h2>
 * {@link #list(String)} walks the tree lazily, one directory at a time, and yields keys in ascending UTF-8 byte order
 * (the order S3 lists in), so that datasets list identically on every origin. Symbolic links to files inside the root
 * are listed; links to directories are not followed (no cycles); links that lead out of the root are skipped.
 *
 * <p>Thread-safe; reads use positional I/O on a channel opened per read.
 */
public final class PosixOrigin implements Origin {

    private static final int DEFAULT_CONCURRENCY = 64;
    private static final boolean UNIX_VIEW =
            java.nio.file.FileSystems.getDefault().supportedFileAttributeViews().contains("unix");

    private final Path root;
    private final Path realRoot;
    private final URI uri;
    private final int maxConcurrency;

    private PosixOrigin(Path root, Path realRoot, int maxConcurrency) {
        this.root = root;
        this.realRoot = realRoot;
        this.uri = realRoot.toUri();
        this.maxConcurrency = maxConcurrency;
    }

    /**
     * Creates an origin over a directory, with up to 64 reads in flight.
     *
     * @param root an existing directory
     * @return the origin
     * @throws IllegalArgumentException if {@code root} is null, does not exist or is not a directory
     */
    public static PosixOrigin of(Path root) {
        return of(root, DEFAULT_CONCURRENCY);
    }

    /**
     * Creates an origin over a directory.
     *
     * @param root           an existing directory
     * @param maxConcurrency how many reads the cache may have in flight, {@code >= 1}
     * @return the origin
     * @throws IllegalArgumentException if {@code root} is null, does not exist or is not a directory, or
     *                                  {@code maxConcurrency < 1}
     */
    public static PosixOrigin of(Path root, int maxConcurrency) {
        if (root == null) {
            throw new IllegalArgumentException("root directory: null (expected: an existing directory)");
        }
        if (maxConcurrency < 1) {
            throw new IllegalArgumentException("max concurrency: " + maxConcurrency + " (expected: >= 1)");
        }
        Path real;
        try {
            real = root.toRealPath();
        } catch (IOException e) {
            throw new IllegalArgumentException("root directory: " + root + " (expected: an existing directory; "
                    + e + ")", e);
        }
        if (!Files.isDirectory(real)) {
            throw new IllegalArgumentException("root directory: " + root + " (expected: a directory, found a file)");
        }
        return new PosixOrigin(root, real, maxConcurrency);
    }

    @Override
    public URI uri() {
        return uri;
    }

    /** {@return the root directory, as given} */
    public Path root() {
        return root;
    }

    @Override
    public int maxConcurrency() {
        return maxConcurrency;
    }

    @Override
    public ObjectInfo stat(String key) throws IOException {
        Path file = resolve(key);
        FileState state = attributes(key, file);
        return new ObjectInfo(key, state.size(), state.version());
    }

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        if (position < 0) {
            throw new IllegalArgumentException("position in '" + object.key() + "': " + position + " (expected: >= 0)");
        }
        String key = object.key();
        Path file = resolve(key);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            checkVersion(object, file);
            long length = dst.byteSize();
            if (position + length > object.size()) {
                throw new EOFException("range [" + position + ", " + (position + length) + ") of '" + key + "' in "
                        + uri + ": past the end (expected: within the object's " + object.size() + " bytes)");
            }
            ByteBuffer buffer = dst.asByteBuffer();
            long at = position;
            while (buffer.hasRemaining()) {
                int n = channel.read(buffer, at);
                if (n < 0) {
                    // The file shrank under us: that is a new version, whatever its mtime says.
                    throw new ObjectChangedException(uri, key, object.version(), null);
                }
                at += n;
            }
            checkVersion(object, file);
        } catch (NoSuchFileException e) {
            throw new NoSuchObjectException(uri, key, e);
        }
    }

    @Override
    public Stream<ObjectInfo> list(String prefix) throws IOException {
        if (prefix == null) {
            throw new IllegalArgumentException("prefix: null (expected: a key prefix, possibly empty)");
        }
        if (prefix.startsWith("/") || prefix.contains("\0") || containsDotDot(prefix)) {
            throw new IllegalArgumentException("prefix: '" + prefix + "' (expected: a relative prefix without '..')");
        }
        int slash = prefix.lastIndexOf('/');
        String dirKey = slash < 0 ? "" : prefix.substring(0, slash + 1);
        String namePrefix = prefix.substring(slash + 1);
        Path dir = dirKey.isEmpty() ? realRoot : realRoot.resolve(dirKey);
        if (!dirKey.isEmpty()) {
            Path realDir;
            try {
                realDir = dir.toRealPath();
            } catch (FileSystemException e) {
                if (absent(e)) {
                    return Stream.empty();
                }
                throw e;
            }
            if (!realDir.startsWith(realRoot) || !Files.isDirectory(realDir)) {
                return Stream.empty();
            }
        }
        Walker walker = new Walker(dir, dirKey, namePrefix);
        return StreamSupport.stream(Spliterators.spliteratorUnknownSize(walker,
                Spliterator.ORDERED | Spliterator.NONNULL | Spliterator.DISTINCT), false);
    }

    @Override
    public void close() {}

    @Override
    public String toString() {
        return "PosixOrigin[" + realRoot + "]";
    }

    // ------------------------------------------------------------------------------------------------- internals

    /** Resolves a key to the real path of a file inside the root, or rejects it. */
    private Path resolve(String key) throws IOException {
        if (key == null || key.isEmpty() || key.startsWith("/") || key.endsWith("/") || key.contains("\0")
                || key.contains("//")) {
            throw new IllegalArgumentException("key: " + (key == null ? "null" : "'" + key + "'")
                    + " (expected: a normalised relative path below " + realRoot + ")");
        }
        for (String segment : key.split("/")) {
            if (segment.equals("..") || segment.equals(".")) {
                throw new IllegalArgumentException("key: '" + key + "' (expected: no '.' or '..' segment;"
                        + " keys may not escape the root " + realRoot + ")");
            }
        }
        Path path = realRoot.resolve(key);
        Path real;
        try {
            real = path.toRealPath();
        } catch (FileSystemException e) {
            if (absent(e)) {
                throw new NoSuchObjectException(uri, key, e);
            }
            throw e;
        }
        if (!real.startsWith(realRoot)) {
            throw new IllegalArgumentException("key: '" + key + "' leads to " + real
                    + " through a symbolic link (expected: a file inside the root " + realRoot + ")");
        }
        return real;
    }

    /** What one stat of a file says: enough for a version. */
    private record FileState(boolean regular, long size, String version) {}

    /** Reads a file's state with one stat call (the unix attribute view), or the basic view where there is none. */
    private static FileState state(Path file) throws IOException {
        if (UNIX_VIEW) {
            Map<String, Object> a = Files.readAttributes(file, "unix:isRegularFile,size,lastModifiedTime,ino",
                    LinkOption.NOFOLLOW_LINKS);
            long size = (Long) a.get("size");
            long mtime = ((FileTime) a.get("lastModifiedTime")).to(TimeUnit.NANOSECONDS);
            return new FileState((Boolean) a.get("isRegularFile"), size, version(size, mtime, a.get("ino")));
        }
        BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        return new FileState(a.isRegularFile(), a.size(),
                version(a.size(), a.lastModifiedTime().to(TimeUnit.NANOSECONDS), a.fileKey()));
    }

    /** size-mtime-inode, each in hex. */
    private static String version(long size, long mtimeNanos, Object inode) {
        return Long.toHexString(size) + "-" + Long.toHexString(mtimeNanos)
                + (inode == null ? "" : "-" + (inode instanceof Long l ? Long.toHexString(l) : inode));
    }

    private FileState attributes(String key, Path file) throws IOException {
        FileState state;
        try {
            state = state(file);
        } catch (NoSuchFileException e) {
            throw new NoSuchObjectException(uri, key, e);
        }
        if (!state.regular()) {
            throw new NoSuchObjectException(uri, key,
                    new IOException(file + " is not a regular file (a directory is not an object)"));
        }
        return state;
    }

    private void checkVersion(ObjectInfo expected, Path file) throws IOException {
        FileState state;
        try {
            state = attributes(expected.key(), file);
        } catch (NoSuchObjectException e) {
            throw new ObjectChangedException(uri, expected.key(), expected.version(), null, e);
        }
        if (!state.version().equals(expected.version())) {
            throw new ObjectChangedException(uri, expected.key(), expected.version(), state.version());
        }
    }

    /** Whether a path lookup failed because the path does not exist: ENOENT, or ENOTDIR (a file in the middle). */
    private static boolean absent(FileSystemException e) {
        return e instanceof NoSuchFileException || e instanceof NotDirectoryException
                || "Not a directory".equals(e.getReason());
    }

    private static boolean containsDotDot(String prefix) {
        for (String segment : prefix.split("/", -1)) {
            if (segment.equals("..")) {
                return true;
            }
        }
        return false;
    }

    /** Orders keys by their UTF-8 bytes, which for Java strings is code point order. */
    static final Comparator<String> UTF8_ORDER = (a, b) -> {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int ca = a.codePointAt(i);
            int cb = b.codePointAt(j);
            if (ca != cb) {
                return Integer.compare(ca, cb);
            }
            i += Character.charCount(ca);
            j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    };

    /**
     * A depth-first walk that yields keys in UTF-8 order. Within a directory, entries are sorted with directories
     * compared as {@code name + "/"}, which makes the concatenation of the per-directory orders the global key order.
     * Memory: one sorted directory listing per level of the current path.
     */
    private final class Walker implements Iterator<ObjectInfo> {

        private record Item(String key, Path path, boolean directory) {}

        private final Deque<Iterator<Item>> stack = new ArrayDeque<>();
        private ObjectInfo next;

        Walker(Path dir, String dirKey, String namePrefix) {
            stack.push(entries(dir, dirKey, namePrefix).iterator());
        }

        @Override
        public boolean hasNext() {
            while (next == null && !stack.isEmpty()) {
                Iterator<Item> top = stack.peek();
                if (!top.hasNext()) {
                    stack.pop();
                    continue;
                }
                Item item = top.next();
                if (item.directory) {
                    stack.push(entries(item.path, item.key, "").iterator());
                } else {
                    next = object(item);
                }
            }
            return next != null;
        }

        @Override
        public ObjectInfo next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            ObjectInfo result = next;
            next = null;
            return result;
        }

        private ObjectInfo object(Item item) {
            try {
                FileState state = state(item.path.toRealPath());
                return state.regular() ? new ObjectInfo(item.key, state.size(), state.version()) : null;
            } catch (NoSuchFileException e) {
                return null; // deleted while listing: not an object any more
            } catch (IOException e) {
                throw new UncheckedIOException("listing " + uri + ": cannot read " + item.path, e);
            }
        }

        private List<Item> entries(Path dir, String dirKey, String namePrefix) {
            List<Item> items = new ArrayList<>();
            try (DirectoryStream<Path> stream = Files.newDirectoryStream(dir)) {
                for (Path child : stream) {
                    String name = child.getFileName().toString();
                    if (!name.startsWith(namePrefix)) {
                        continue;
                    }
                    BasicFileAttributes attrs;
                    try {
                        attrs = Files.readAttributes(child, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                    } catch (NoSuchFileException e) {
                        continue;
                    }
                    if (attrs.isDirectory()) {
                        items.add(new Item(dirKey + name + "/", child, true));
                    } else if (attrs.isRegularFile()) {
                        items.add(new Item(dirKey + name, child, false));
                    } else if (attrs.isSymbolicLink() && linksToFileInside(child)) {
                        items.add(new Item(dirKey + name, child, false));
                    }
                }
            } catch (NoSuchFileException | NotDirectoryException e) {
                return List.of();
            } catch (IOException e) {
                throw new UncheckedIOException("listing " + uri + ": cannot read directory " + dir, e);
            }
            items.sort(Comparator.comparing(Item::key, UTF8_ORDER));
            return items;
        }

        private boolean linksToFileInside(Path link) {
            try {
                Path real = link.toRealPath();
                return real.startsWith(realRoot) && Files.isRegularFile(real);
            } catch (IOException e) {
                return false;
            }
        }
    }
}
