// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.posix;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import dev.granary.testkit.OriginContractTest;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link PosixOrigin} on real files: the origin contract, plus what only a file system can get wrong. */
@SuppressWarnings("restricted") // FFM downcall to renameat2 (tests run with --enable-native-access)
class PosixOriginTest extends OriginContractTest {

    @TempDir
    Path temp;

    private Path root;

    @Override
    protected boolean writes() {
        return true;
    }

    @Override
    protected Fixture createFixture() throws Exception {
        root = Files.createDirectories(temp.resolve("root"));
        PosixOrigin posix = PosixOrigin.of(root);
        return new Fixture() {
            @Override
            public void put(String key, byte[] bytes) throws IOException {
                Path file = root.resolve(key);
                Files.createDirectories(file.getParent());
                Path tmp = Files.createTempFile(file.getParent(), ".put", ".tmp");
                Files.write(tmp, bytes);
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            }

            @Override
            public void delete(String key) throws IOException {
                Files.delete(root.resolve(key));
            }

            @Override
            public Origin origin() {
                return posix;
            }
        };
    }

    @Test
    void uriIsTheRealRootDirectory() throws Exception {
        assertEquals(root.toRealPath().toUri(), origin.uri());
    }

    @ParameterizedTest
    @ValueSource(strings = {"../outside", "a/../../outside", "/etc/passwd", "a/./b", "a//b", "a/", ".", ".."})
    void keysThatAreNotNormalisedOrEscapeTheRootAreRejected(String key) throws Exception {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> origin.stat(key));
        assertTrue(e.getMessage().contains("key: '" + key + "'"), e.getMessage());
    }

    @Test
    void aSymlinkLeadingOutOfTheRootIsRejected() throws Exception {
        Path secret = Files.writeString(temp.resolve("secret.txt"), "not yours");
        Files.createSymbolicLink(root.resolve("link"), secret);
        Files.createDirectories(temp.resolve("outside-dir"));
        Files.writeString(temp.resolve("outside-dir/f"), "not yours either");
        Files.createSymbolicLink(root.resolve("dirlink"), temp.resolve("outside-dir"));

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> origin.stat("link"));
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> origin.stat("dirlink/f"));
        ObjectInfo fake = new ObjectInfo("link", 9, "whatever");
        assertThrows(IllegalArgumentException.class, () -> origin.read(fake, 0, MemorySegment.ofArray(new byte[9])));
        try (Stream<ObjectInfo> listing = origin.list("")) {
            assertEquals(List.of(), listing.map(ObjectInfo::key).toList(), "escaping links are not listed");
        }
    }

    @Test
    void aWriteNeverFollowsALinkOutOfTheRoot() throws Exception {
        Path outside = Files.createDirectories(temp.resolve("outside-w"));
        Path secret = Files.writeString(temp.resolve("secret-w.txt"), "not yours");
        Files.createSymbolicLink(root.resolve("dirlink-w"), outside);
        Files.createSymbolicLink(root.resolve("filelink-w"), secret);

        IOException e = assertThrows(IOException.class, () -> origin.write("dirlink-w/x.gidx", new byte[] {1}));
        assertTrue(e.getMessage().contains("symbolic link"), e.getMessage());
        try (Stream<Path> files = Files.list(outside)) {
            assertEquals(List.of(), files.toList(), "nothing written through the link");
        }
        // A link at the key itself is replaced by the file, not followed: the target outside keeps its bytes.
        ObjectInfo info = origin.write("filelink-w", new byte[] {7, 8});
        assertEquals(2, info.size());
        assertEquals("not yours", Files.readString(secret));
        assertTrue(Files.isRegularFile(root.resolve("filelink-w"), LinkOption.NOFOLLOW_LINKS));
    }

    @Test
    void aSymlinkToAFileInsideTheRootIsAnObject() throws Exception {
        byte[] bytes = put("real/data.bin", 100);
        Files.createSymbolicLink(root.resolve("alias.bin"), root.resolve("real/data.bin"));
        ObjectInfo info = origin.stat("alias.bin");
        assertEquals(100, info.size());
        assertArrayEquals(bytes, read(info, 0, 100));
        try (Stream<ObjectInfo> listing = origin.list("")) {
            assertEquals(
                    List.of("alias.bin", "real/data.bin"),
                    listing.map(ObjectInfo::key).toList());
        }
    }

    @Test
    void aDirectoryIsNotAnObject() throws Exception {
        put("dir/file", 1);
        NoSuchObjectException e = assertThrows(NoSuchObjectException.class, () -> origin.stat("dir"));
        assertTrue(e.getMessage().contains("'dir'"), e.getMessage());
    }

    @Test
    void aPathThroughAFileIsNoSuchObject() throws Exception {
        put("file", 1);
        assertThrows(NoSuchObjectException.class, () -> origin.stat("file/child"));
    }

    @Test
    void anInPlaceModificationChangesTheVersion() throws Exception {
        put("inplace", 100);
        ObjectInfo before = origin.stat("inplace");
        Files.write(root.resolve("inplace"), new byte[] {1, 2, 3}, StandardOpenOption.APPEND);
        ObjectInfo after = origin.stat("inplace");
        assertNotEquals(before.version(), after.version());
        assertThrows(ObjectChangedException.class, () -> read(before, 0, 100));
    }

    @Test
    void badRootsAndConcurrencyAreRejectedWithClearMessages() throws Exception {
        Path missing = temp.resolve("missing");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PosixOrigin.of(missing));
        assertTrue(e.getMessage().startsWith("root directory: " + missing), e.getMessage());
        Path file = Files.writeString(temp.resolve("a-file"), "x");
        e = assertThrows(IllegalArgumentException.class, () -> PosixOrigin.of(file));
        assertTrue(e.getMessage().contains("expected: a directory"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> PosixOrigin.of(null));
        assertEquals("root directory: null (expected: an existing directory)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> PosixOrigin.of(root, 0));
        assertEquals("max concurrency: 0 (expected: >= 1)", e.getMessage());
    }

    @Test
    void listingRejectsEscapingPrefixes() {
        assertThrows(IllegalArgumentException.class, () -> origin.list("../"));
        assertThrows(IllegalArgumentException.class, () -> origin.list("/abs"));
        assertThrows(IllegalArgumentException.class, () -> origin.list(null));
    }

    @Test
    void listingIsLazy() throws Exception {
        for (int d = 0; d < 50; d++) {
            put("lazy/" + d + "/f", 1);
        }
        try (Stream<ObjectInfo> listing = origin.list("lazy/")) {
            // Taking the first object must not need the whole tree: delete the rest first, then consume.
            var it = listing.iterator();
            assertEquals("lazy/0/f", it.next().key());
            for (int d = 10; d < 50; d++) {
                fixture.delete("lazy/" + d + "/f");
            }
            long rest = 0;
            while (it.hasNext()) {
                it.next();
                rest++;
            }
            assertTrue(rest < 49, "objects deleted before the walk reached them are not listed: " + rest);
        }
    }

    /**
     * A swapper thread replaces a directory inside the root with a symbolic link to a directory outside it, and back,
     * as fast as it can, while readers read a file below that directory with the version they saw inside. A read may
     * fail (the file vanished, the link leads out), but none may ever return the outside file's bytes. Before reads
     * opened the path component by component without following links, about one read in a thousand did.
     */
    @Test
    @Timeout(60)
    void swappingADirectoryForASymlinkMidReadNeverServesAFileOutsideTheRoot() throws Exception {
        int size = 4096;
        byte[] inside = new byte[size];
        Arrays.fill(inside, (byte) 'i');
        byte[] outside = new byte[size];
        Arrays.fill(outside, (byte) 'o');
        fixture.put("d/f", inside);
        Path outsideDir = Files.createDirectories(temp.resolve("outside"));
        Files.write(outsideDir.resolve("f"), outside);
        Path dir = root.resolve("d");
        Path link = Files.createSymbolicLink(root.resolve("d.link"), outsideDir);
        ObjectInfo info = origin.stat("d/f");

        // Bounded: 8 s, or the first leak.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
        var stop = new AtomicBoolean();
        var leaks = new AtomicInteger();
        var reads = new AtomicInteger();
        var served = new AtomicInteger();
        var swaps = new AtomicLong();
        var unexpected = new ConcurrentLinkedQueue<Throwable>();
        Thread swapper = Thread.ofPlatform().name("swapper").start(() -> {
            try {
                // renameat2(RENAME_EXCHANGE) swaps the two names in one step, so the directory never goes missing
                // and every swap flips what a reader's next path lookup finds.
                var linker = Linker.nativeLinker();
                var renameat2 = linker.downcallHandle(
                        linker.defaultLookup().findOrThrow("renameat2"),
                        FunctionDescriptor.of(
                                ValueLayout.JAVA_INT,
                                ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS,
                                ValueLayout.JAVA_INT,
                                ValueLayout.ADDRESS,
                                ValueLayout.JAVA_INT));
                int atFdCwd = -100;
                int renameExchange = 2;
                try (var arena = Arena.ofConfined()) {
                    MemorySegment a = arena.allocateFrom(dir.toString());
                    MemorySegment b = arena.allocateFrom(link.toString());
                    while (!stop.get()) {
                        int rc = (int) renameat2.invokeExact(atFdCwd, a, atFdCwd, b, renameExchange);
                        if (rc != 0) {
                            throw new IOException("renameat2(RENAME_EXCHANGE) failed");
                        }
                        swaps.incrementAndGet();
                    }
                    // Leave the real directory in place.
                    if (Files.isSymbolicLink(dir)
                            && (int) renameat2.invokeExact(atFdCwd, a, atFdCwd, b, renameExchange) != 0) {
                        throw new IOException("renameat2(RENAME_EXCHANGE) back failed");
                    }
                }
            } catch (Throwable t) {
                unexpected.add(t);
            }
        });
        List<Thread> readers = new ArrayList<>();
        for (int r = 0; r < 4; r++) {
            readers.add(Thread.ofPlatform().name("reader-" + r).start(() -> {
                byte[] buffer = new byte[size];
                while (!stop.get() && System.nanoTime() < deadline) {
                    reads.incrementAndGet();
                    Arrays.fill(buffer, (byte) 0);
                    try {
                        origin.read(info, 0, MemorySegment.ofArray(buffer));
                    } catch (IllegalArgumentException | IOException e) {
                        if (e.getMessage() == null || !e.getMessage().contains("'d/f'")) {
                            unexpected.add(e);
                        }
                        continue;
                    }
                    if (Arrays.equals(buffer, outside)) {
                        leaks.incrementAndGet();
                        stop.set(true);
                    } else if (Arrays.equals(buffer, inside)) {
                        served.incrementAndGet();
                    } else {
                        unexpected.add(new AssertionError("read neither file's bytes"));
                    }
                }
            }));
        }
        for (Thread reader : readers) {
            reader.join();
        }
        stop.set(true);
        swapper.join();
        assertEquals(List.of(), List.copyOf(unexpected), "failures other than naming the key");
        assertEquals(0, leaks.get(), "reads that returned the bytes of a file outside the root, of " + reads.get());
        assertTrue(
                reads.get() > 100 && swaps.get() > 100,
                "the race ran: " + reads.get() + " reads, " + served.get() + " served, " + swaps.get() + " swaps");
    }
}
