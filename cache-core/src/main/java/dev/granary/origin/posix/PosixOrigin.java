// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.posix;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

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
 * <h2>Symbolic links</h2>
 * A file is opened from a descriptor of the root one path component at a time with {@code openat(…, O_NOFOLLOW)}, and
 * read and checked through its own descriptor ({@code pread}, {@code statx}), so a link is never followed unchecked:
 * when the walk meets one, the key's real path is resolved, checked to lie inside the root, and that link-free path is
 * opened the same way. A directory swapped for a link between the check and the open (a race that served files
 * outside the root when files were opened by path) makes the read fail with an {@link IOException} naming the key;
 * it never returns another file's bytes. {@link #stat} and {@link #list} follow the same rule. This needs Linux on
 * x86-64 or aarch64; {@link #of} refuses elsewhere.
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
 * <p>Thread-safe; each read opens its own descriptor and reads with {@code pread} straight into the destination when
 * it is native memory (through a native bounce buffer when it is a heap segment).
 */
public final class PosixOrigin implements Origin {

    private static final int DEFAULT_CONCURRENCY = 64;
    /** The native bounce buffer for reads into heap segments. */
    private static final long HEAP_CHUNK = 1 << 20;

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
     * @throws UnsupportedOperationException if this is not Linux on x86-64 or aarch64 (see the class comment)
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
            throw new IllegalArgumentException(
                    "root directory: " + root + " (expected: an existing directory; " + e + ")", e);
        }
        if (!Files.isDirectory(real)) {
            throw new IllegalArgumentException("root directory: " + root + " (expected: a directory, found a file)");
        }
        if (NoFollow.UNAVAILABLE != null) {
            throw new UnsupportedOperationException("PosixOrigin opens files with openat(O_NOFOLLOW) and statx, which"
                    + " need Linux on x86-64 or aarch64: " + NoFollow.UNAVAILABLE);
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
        checkKey(key);
        int fd = open(key, NoFollow.O_PATH);
        try {
            NoFollow.Stat state = rawStat(key, fd);
            if (state.link()) {
                // O_PATH | O_NOFOLLOW opened the link itself: resolve and check where it leads.
                NoFollow.close(fd);
                fd = -1;
                fd = openResolved(key, NoFollow.O_PATH);
                state = fstat(key, fd);
            }
            if (!state.regular()) {
                throw new NoSuchObjectException(
                        uri,
                        key,
                        new IOException("'" + key + "' in " + realRoot
                                + " is not a regular file (a directory is not an object)"));
            }
            return new ObjectInfo(key, state.size(), version(state));
        } finally {
            if (fd >= 0) {
                NoFollow.close(fd);
            }
        }
    }

    @Override
    public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
        String key = object.key();
        if (position < 0) {
            throw new IllegalArgumentException("position in '" + key + "': " + position + " (expected: >= 0)");
        }
        checkKey(key);
        long length = dst.byteSize();
        // O_NONBLOCK: opening a FIFO that replaced the file must not block; it changes nothing for regular files.
        int fd = open(key, NoFollow.O_RDONLY | NoFollow.O_NONBLOCK);
        try {
            checkVersion(object, fd);
            if (position + length > object.size()) {
                throw new EOFException("range [" + position + ", " + (position + length) + ") of '" + key + "' in "
                        + uri + ": past the end (expected: within the object's " + object.size() + " bytes)");
            }
            if (dst.isNative()) {
                readFully(object, fd, dst, position);
            } else {
                // A heap segment cannot be handed to a non-critical downcall: read through native chunks.
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment chunk = arena.allocate(Math.min(length, HEAP_CHUNK));
                    for (long done = 0; done < length; ) {
                        MemorySegment part = chunk.asSlice(0, Math.min(chunk.byteSize(), length - done));
                        readFully(object, fd, part, position + done);
                        MemorySegment.copy(part, 0, dst, done, part.byteSize());
                        done += part.byteSize();
                    }
                }
            }
            checkVersion(object, fd);
        } finally {
            NoFollow.close(fd);
        }
    }

    private void readFully(ObjectInfo object, int fd, MemorySegment dst, long position) throws IOException {
        long done = 0;
        while (done < dst.byteSize()) {
            long n;
            try {
                n = NoFollow.pread(fd, dst.asSlice(done), position + done);
            } catch (NoFollow.Failure e) {
                throw new IOException(
                        "read of '" + object.key() + "' in " + uri + " at " + (position + done) + " failed: "
                                + e.getMessage(),
                        e);
            }
            if (n == 0) {
                // The file shrank under us: that is a new version, whatever its mtime says.
                throw new ObjectChangedException(uri, object.key(), object.version(), null);
            }
            done += n;
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
        if (!dirKey.isEmpty()) {
            // The prefix's directory may be reached through links inside the root; below it, links to directories
            // are not followed.
            Path realDir;
            try {
                realDir = realRoot.resolve(dirKey).toRealPath();
            } catch (FileSystemException e) {
                if (absent(e)) {
                    return Stream.empty();
                }
                throw e;
            }
            if (!realDir.startsWith(realRoot) || !Files.isDirectory(realDir)) {
                return Stream.empty();
            }
            String relative = realRoot.relativize(realDir).toString();
            Walker walker = new Walker(relative.isEmpty() ? "" : relative + "/", dirKey, namePrefix);
            return StreamSupport.stream(
                    Spliterators.spliteratorUnknownSize(
                            walker, Spliterator.ORDERED | Spliterator.NONNULL | Spliterator.DISTINCT),
                    false);
        }
        Walker walker = new Walker("", "", namePrefix);
        return StreamSupport.stream(
                Spliterators.spliteratorUnknownSize(
                        walker, Spliterator.ORDERED | Spliterator.NONNULL | Spliterator.DISTINCT),
                false);
    }

    /**
     * Writes a file whole: into a new temporary file in the key's directory (created if missing), flushed to disk,
     * then renamed over the key, so that readers see the old file or the new one, never a part. Every directory on
     * the way is opened from the root's descriptor without following links, and the file is created and renamed
     * relative to its directory's descriptor: a write never follows a symbolic link, nor lands outside the root. A
     * link at the key itself is replaced, not followed.
     *
     * @throws IllegalArgumentException if the key is invalid
     * @throws IOException              if a directory on the way is a symbolic link or not a directory, or the write
     *                                  fails (the temporary file is then removed)
     */
    @Override
    public ObjectInfo write(String key, byte[] bytes) throws IOException {
        checkKey(key);
        if (bytes == null) {
            throw new IllegalArgumentException("bytes of '" + key + "': null (expected: the file's bytes)");
        }
        int slash = key.lastIndexOf('/');
        String name = key.substring(slash + 1);
        int dir = openParentForWrite(key, slash < 0 ? "" : key.substring(0, slash));
        try {
            // The directory's descriptor, by its /proc link: the path is not looked up again from the root.
            Path directory = Path.of("/proc/self/fd/" + dir);
            Path temporary = directory.resolve("." + name + "." + Long.toHexString(System.nanoTime())
                    + Long.toHexString(Thread.currentThread().threadId()) + ".partial");
            try {
                try (FileChannel channel = FileChannel.open(
                        temporary,
                        StandardOpenOption.CREATE_NEW,
                        StandardOpenOption.WRITE,
                        LinkOption.NOFOLLOW_LINKS)) {
                    ByteBuffer buffer = ByteBuffer.wrap(bytes);
                    while (buffer.hasRemaining()) {
                        channel.write(buffer);
                    }
                    channel.force(true);
                }
                Files.move(temporary, directory.resolve(name), StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException | RuntimeException e) {
                try {
                    Files.deleteIfExists(temporary);
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw new IOException("write of '" + key + "' in " + uri + " failed: " + e, e);
            }
        } finally {
            NoFollow.close(dir);
        }
        return stat(key);
    }

    /** Opens (creating where missing) the directories of a key from the root, never following a link. */
    private int openParentForWrite(String key, String relative) throws IOException {
        int dir = NoFollow.openDirectory(realRoot.toString());
        if (relative.isEmpty()) {
            return dir;
        }
        try {
            for (String component : relative.split("/")) {
                int next;
                try {
                    next = openDirectoryAt(dir, component);
                } catch (NoFollow.Failure e) {
                    if (e.errno != NoFollow.ENOENT) {
                        throw e;
                    }
                    try {
                        Files.createDirectory(Path.of("/proc/self/fd/" + dir, component));
                    } catch (FileAlreadyExistsException raced) {
                        // made meanwhile by another writer: open it below like any other
                    }
                    next = openDirectoryAt(dir, component);
                }
                NoFollow.close(dir);
                dir = next;
            }
            return dir;
        } catch (NoFollow.Failure e) {
            NoFollow.close(dir);
            if (e.errno == NoFollow.ELOOP || e.errno == NoFollow.ENOTDIR) {
                throw new IOException(
                        "write of '" + key + "' in " + uri + " refused: a component of '" + relative
                                + "' is a symbolic link or not a directory (writes never follow links)",
                        e);
            }
            throw new IOException("write of '" + key + "' in " + uri + " failed: " + e.getMessage(), e);
        } catch (IOException | RuntimeException e) {
            NoFollow.close(dir);
            throw e;
        }
    }

    private static int openDirectoryAt(int dir, String name) throws NoFollow.Failure {
        return NoFollow.openat(
                dir, name, NoFollow.O_PATH | NoFollow.O_DIRECTORY | NoFollow.O_NOFOLLOW | NoFollow.O_CLOEXEC);
    }

    @Override
    public void close() {}

    @Override
    public String toString() {
        return "PosixOrigin[" + realRoot + "]";
    }

    // ------------------------------------------------------------------------------------------------- internals

    /** Rejects keys that are not normalised relative paths (the cache calls it for {@code invalidate} too). */
    @Override
    public void checkKey(String key) {
        if (key == null
                || key.isEmpty()
                || key.startsWith("/")
                || key.endsWith("/")
                || key.contains("\0")
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
    }

    /**
     * Opens the file a key names, never following a link that was not checked: first component by component with
     * {@code O_NOFOLLOW}; if that meets a link, the key's real path is resolved and checked to lie inside the root,
     * and that path (which then has no links) is opened the same way. A link that appears between the check and the
     * open makes the open fail; it is never followed.
     *
     * @param flags the flags of the last component's open
     * @return a descriptor of the file (which may be of any type: the caller checks)
     * @throws NoSuchObjectException    if there is no such file
     * @throws IllegalArgumentException if the key leads out of the root through a link
     * @throws IOException              if the tree changed under the open, or the open failed otherwise
     */
    private int open(String key, int flags) throws IOException {
        try {
            return openChain(key, flags);
        } catch (NoFollow.Failure e) {
            if (e.errno == NoFollow.ENOENT) {
                throw new NoSuchObjectException(uri, key, e);
            }
            if (e.errno != NoFollow.ELOOP && e.errno != NoFollow.ENOTDIR) {
                throw new IOException("open of '" + key + "' in " + uri + " failed: " + e.getMessage(), e);
            }
        }
        return openResolved(key, flags);
    }

    /** The slow path of {@link #open}: a link on the way (or a file where a directory should be). */
    private int openResolved(String key, int flags) throws IOException {
        Path real;
        try {
            real = realRoot.resolve(key).toRealPath();
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
        try {
            return openChain(realRoot.relativize(real).toString(), flags);
        } catch (NoFollow.Failure e) {
            if (e.errno == NoFollow.ENOENT) {
                throw new NoSuchObjectException(uri, key, e);
            }
            if (e.errno == NoFollow.ELOOP || e.errno == NoFollow.ENOTDIR) {
                throw new IOException(
                        "open of '" + key + "' in " + uri + " refused: its real path " + real
                                + " changed to go through a symbolic link while it was being opened (" + e.getMessage()
                                + "; links are never followed unchecked)",
                        e);
            }
            throw new IOException("open of '" + key + "' in " + uri + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Opens a relative path from the root, one component at a time with {@code O_NOFOLLOW}. The last component is
     * opened with {@code flags}; with {@code O_PATH} a link there opens the link itself, which the caller sees in its
     * mode.
     */
    private int openChain(String relative, int flags) throws NoFollow.Failure {
        int dir = NoFollow.openDirectory(realRoot.toString());
        try {
            int from = 0;
            while (true) {
                int slash = relative.indexOf('/', from);
                if (slash < 0) {
                    return NoFollow.openat(
                            dir, relative.substring(from), flags | NoFollow.O_NOFOLLOW | NoFollow.O_CLOEXEC);
                }
                int next = NoFollow.openat(
                        dir,
                        relative.substring(from, slash),
                        NoFollow.O_PATH | NoFollow.O_DIRECTORY | NoFollow.O_NOFOLLOW | NoFollow.O_CLOEXEC);
                NoFollow.close(dir);
                dir = next;
                from = slash + 1;
            }
        } finally {
            NoFollow.close(dir);
        }
    }

    /** {@return the state of an open file, which may be a link itself} */
    private NoFollow.Stat rawStat(String key, int fd) throws IOException {
        try {
            return NoFollow.stat(fd);
        } catch (NoFollow.Failure e) {
            throw new IOException("stat of '" + key + "' in " + uri + " failed: " + e.getMessage(), e);
        }
    }

    /** {@return the state of an open file}; a link (only an {@code O_PATH} open yields one) means the tree changed */
    private NoFollow.Stat fstat(String key, int fd) throws IOException {
        NoFollow.Stat state = rawStat(key, fd);
        if (state.link()) {
            // The last component was a link checked to lead inside the root, then replaced by another link.
            throw new IOException("stat of '" + key + "' in " + uri + " refused: it became a symbolic link while it"
                    + " was being opened (links are never followed unchecked)");
        }
        return state;
    }

    /** size-mtime-inode, each in hex (the same as before reads went through descriptors, so versions persist). */
    private static String version(NoFollow.Stat state) {
        return Long.toHexString(state.size()) + "-" + Long.toHexString(state.mtimeNanos()) + "-"
                + Long.toHexString(state.inode());
    }

    /** Checks that the open file is still the version asked for: the descriptor's own state, not a path's. */
    private void checkVersion(ObjectInfo expected, int fd) throws IOException {
        NoFollow.Stat state = fstat(expected.key(), fd);
        String version = state.regular() ? version(state) : "not a regular file";
        if (!version.equals(expected.version())) {
            throw new ObjectChangedException(uri, expected.key(), expected.version(), version);
        }
    }

    /** Whether a path lookup failed because the path does not exist: ENOENT, or ENOTDIR (a file in the middle). */
    private static boolean absent(FileSystemException e) {
        return e instanceof NoSuchFileException
                || e instanceof NotDirectoryException
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
     * Each directory is opened from the root without following links (as files are) and read through its descriptor
     * ({@code /proc/self/fd/N}), so a directory swapped for a link mid-walk is skipped, never followed out of the root.
     * Memory: one sorted directory listing per level of the current path.
     */
    private final class Walker implements Iterator<ObjectInfo> {

        /** An entry: its key, its path relative to the real root (for directories, ending in '/'), its kind. */
        private record Item(String key, String relative, boolean directory) {}

        private final Deque<Iterator<Item>> stack = new ArrayDeque<>();
        private ObjectInfo next;

        Walker(String relative, String dirKey, String namePrefix) {
            stack.push(entries(relative, dirKey, namePrefix).iterator());
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
                    stack.push(entries(item.relative, item.key, "").iterator());
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
                return stat(item.key);
            } catch (NoSuchObjectException | IllegalArgumentException e) {
                return null; // deleted, or turned into a link out of the root, while listing: not an object
            } catch (IOException e) {
                throw new UncheckedIOException("listing " + uri + ": cannot read '" + item.key + "'", e);
            }
        }

        private List<Item> entries(String relative, String dirKey, String namePrefix) {
            int fd;
            try {
                fd = relative.isEmpty()
                        ? NoFollow.openDirectory(realRoot.toString())
                        : openChain(
                                relative.substring(0, relative.length() - 1), NoFollow.O_PATH | NoFollow.O_DIRECTORY);
            } catch (NoFollow.Failure e) {
                if (e.errno == NoFollow.ENOENT || e.errno == NoFollow.ENOTDIR || e.errno == NoFollow.ELOOP) {
                    return List.of(); // gone, or now a link: links to directories are not followed
                }
                throw new UncheckedIOException("listing " + uri + ": cannot open directory '" + relative + "'", e);
            }
            List<Item> items = new ArrayList<>();
            try (DirectoryStream<Path> stream = Files.newDirectoryStream(Path.of("/proc/self/fd/" + fd))) {
                for (Path child : stream) {
                    String name = child.getFileName().toString();
                    if (!name.startsWith(namePrefix)) {
                        continue;
                    }
                    NoFollow.Stat attrs;
                    try {
                        attrs = NoFollow.statAt(fd, name);
                    } catch (NoFollow.Failure e) {
                        if (e.errno == NoFollow.ENOENT) {
                            continue;
                        }
                        throw e;
                    }
                    if (attrs.directory()) {
                        items.add(new Item(dirKey + name + "/", relative + name + "/", true));
                    } else if (attrs.regular()) {
                        items.add(new Item(dirKey + name, relative + name, false));
                    } else if (attrs.link() && linksToFileInside(dirKey + name)) {
                        items.add(new Item(dirKey + name, relative + name, false));
                    }
                }
            } catch (NoSuchFileException | NotDirectoryException e) {
                return List.of();
            } catch (IOException e) {
                throw new UncheckedIOException("listing " + uri + ": cannot read directory '" + relative + "'", e);
            } finally {
                NoFollow.close(fd);
            }
            items.sort(Comparator.comparing(Item::key, UTF8_ORDER));
            return items;
        }

        private boolean linksToFileInside(String key) {
            try {
                stat(key);
                return true;
            } catch (IOException | IllegalArgumentException e) {
                return false;
            }
        }
    }
}
