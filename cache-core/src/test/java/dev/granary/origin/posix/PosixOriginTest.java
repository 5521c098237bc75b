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
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link PosixOrigin} on real files: the origin contract, plus what only a file system can get wrong. */
class PosixOriginTest extends OriginContractTest {

    @TempDir
    Path temp;

    private Path root;

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
    void aSymlinkToAFileInsideTheRootIsAnObject() throws Exception {
        byte[] bytes = put("real/data.bin", 100);
        Files.createSymbolicLink(root.resolve("alias.bin"), root.resolve("real/data.bin"));
        ObjectInfo info = origin.stat("alias.bin");
        assertEquals(100, info.size());
        assertArrayEquals(bytes, read(info, 0, 100));
        try (Stream<ObjectInfo> listing = origin.list("")) {
            assertEquals(List.of("alias.bin", "real/data.bin"), listing.map(ObjectInfo::key).toList());
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
}
