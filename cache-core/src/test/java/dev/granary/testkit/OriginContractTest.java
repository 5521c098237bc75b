// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The contract every {@link Origin} keeps, run against each implementation (POSIX, S3, GCS). A subclass provides a
 * {@link Fixture}: a way to put and delete real objects at the origin, and the origin over them.
 */
@Timeout(120)
public abstract class OriginContractTest {

    /** Real objects at a real (or the best available stand-in) origin. */
    protected interface Fixture extends AutoCloseable {
        /** Creates or replaces an object; a replacement must get a new version. */
        void put(String key, byte[] bytes) throws Exception;

        void delete(String key) throws Exception;

        Origin origin();

        @Override
        default void close() throws Exception {
            origin().close();
        }
    }

    /** Creates a fresh, empty fixture for one test. */
    protected abstract Fixture createFixture() throws Exception;

    /** Whether the origin pins reads to versions; stand-ins that cannot (no generations) return false. */
    protected boolean detectsChangedVersions() {
        return true;
    }

    /**
     * Whether {@link Origin#list(String)} is checked for UTF-8 byte order; a stand-in that lists in hash order (no
     * real server) returns false, and then only the set of keys is checked.
     */
    protected boolean listsInUtf8Order() {
        return true;
    }

    /**
     * Whether the origin implements {@link Origin#write}. Those that do not (the SPI's default) are checked to refuse
     * with {@link UnsupportedOperationException}; POSIX, S3 and GCS return true.
     */
    protected boolean writes() {
        return false;
    }

    private List<String> inCheckedOrder(List<String> keys) {
        return listsInUtf8Order()
                ? keys
                : keys.stream().sorted(OriginContractTest::compareUtf8).toList();
    }

    private static int compareUtf8(String a, String b) {
        return Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));
    }

    protected Fixture fixture;
    protected Origin origin;
    private final SplittableRandom random = new SplittableRandom(7);

    @BeforeEach
    void createOrigin() throws Exception {
        fixture = createFixture();
        origin = fixture.origin();
    }

    @AfterEach
    void closeOrigin() throws Exception {
        fixture.close();
    }

    protected byte[] put(String key, int size) throws Exception {
        byte[] bytes = new byte[size];
        random.nextBytes(bytes);
        fixture.put(key, bytes);
        return bytes;
    }

    protected byte[] read(ObjectInfo info, long position, int length) throws IOException {
        byte[] out = new byte[length];
        origin.read(info, position, MemorySegment.ofArray(out));
        return out;
    }

    /**
     * {@link Origin#write}: a new object (in directories that do not exist yet), then a replacement with a new
     * version, an empty object, and nothing else left behind (no temporary file in a listing); or, if the origin
     * does not write ({@link #writes()}), a clear refusal.
     */
    @Test
    void writesObjectsWholeAndReplacesThem() throws Exception {
        String key = "w/new/dir/obj.bin";
        if (!writes()) {
            UnsupportedOperationException e =
                    assertThrows(UnsupportedOperationException.class, () -> origin.write(key, new byte[1]));
            assertTrue(e.getMessage().contains("cannot write objects"), e.getMessage());
            return;
        }
        byte[] first = new byte[3000];
        random.nextBytes(first);
        ObjectInfo a = origin.write(key, first);
        assertEquals(key, a.key());
        assertEquals(3000, a.size());
        assertEquals(a, origin.stat(key), "write returns the version stat reports");
        assertArrayEquals(first, read(a, 0, 3000));

        byte[] second = new byte[100];
        random.nextBytes(second);
        ObjectInfo b = origin.write(key, second);
        assertEquals(100, b.size());
        assertNotEquals(a.version(), b.version(), "a replacement gets a new version");
        assertEquals(b, origin.stat(key));
        assertArrayEquals(second, read(b, 0, 100));

        ObjectInfo empty = origin.write("w/empty", new byte[0]);
        assertEquals(0, empty.size());
        try (Stream<ObjectInfo> listing = origin.list("w/")) {
            assertEquals(
                    List.of("w/empty", key),
                    listing.map(ObjectInfo::key)
                            .sorted(OriginContractTest::compareUtf8)
                            .toList(),
                    "only the written objects: no temporary left behind");
        }
        assertThrows(IllegalArgumentException.class, () -> origin.write("../escape", new byte[1]));
    }

    @Test
    void statReportsSizeAndAStableVersion() throws Exception {
        put("a/b.bin", 1000);
        ObjectInfo first = origin.stat("a/b.bin");
        assertEquals("a/b.bin", first.key());
        assertEquals(1000, first.size());
        assertFalse(first.version().isEmpty());
        assertEquals(first, origin.stat("a/b.bin"), "stat of an unchanged object must give the same version");
    }

    @Test
    void statOfAnEmptyObject() throws Exception {
        put("empty", 0);
        assertEquals(0, origin.stat("empty").size());
    }

    @Test
    void statOfAMissingObjectNamesTheOriginAndKey() {
        NoSuchObjectException e = assertThrows(NoSuchObjectException.class, () -> origin.stat("no/such/key"));
        assertEquals("no/such/key", e.key());
        assertTrue(e.getMessage().contains("no/such/key"), e.getMessage());
        assertTrue(e.getMessage().contains(origin.uri().toString()), e.getMessage());
    }

    @Test
    void readsWholeObjectsAndRanges() throws Exception {
        byte[] bytes = put("data.bin", 100_000);
        ObjectInfo info = origin.stat("data.bin");
        assertArrayEquals(bytes, read(info, 0, bytes.length));
        for (int i = 0; i < 20; i++) {
            int position = random.nextInt(bytes.length);
            int length = random.nextInt(bytes.length - position + 1);
            byte[] expected = Arrays.copyOfRange(bytes, position, position + length);
            assertArrayEquals(expected, read(info, position, length), "range " + position + "+" + length);
        }
        assertArrayEquals(new byte[0], read(info, bytes.length, 0), "an empty read at the end");
    }

    @Test
    void readPastTheEndIsEof() throws Exception {
        put("short", 10);
        ObjectInfo info = origin.stat("short");
        assertThrows(EOFException.class, () -> read(info, 5, 6));
        assertThrows(EOFException.class, () -> read(info, 11, 0));
    }

    @Test
    void readOfAChangedObjectFailsRatherThanMixVersions() throws Exception {
        put("changing", 4096);
        ObjectInfo old = origin.stat("changing");
        byte[] replacement = put("changing", 4096);
        ObjectInfo now = origin.stat("changing");
        assertNotEquals(old.version(), now.version(), "a replaced object must get a new version");
        if (detectsChangedVersions()) {
            ObjectChangedException e = assertThrows(ObjectChangedException.class, () -> read(old, 0, 4096));
            assertEquals("changing", e.key());
            assertEquals(old.version(), e.expectedVersion());
        }
        assertArrayEquals(replacement, read(now, 0, 4096));
    }

    @Test
    void readOfADeletedObjectFails() throws Exception {
        put("doomed", 100);
        ObjectInfo info = origin.stat("doomed");
        fixture.delete("doomed");
        IOException e = assertThrows(IOException.class, () -> read(info, 0, 100));
        assertTrue(e instanceof NoSuchObjectException || e instanceof ObjectChangedException, e.toString());
    }

    @Test
    void listsByPrefixInUtf8OrderWithVersions() throws Exception {
        List<String> keys = List.of(
                "train/b.bin",
                "train/a.bin",
                "train/a/x.bin",
                "train.txt",
                "trial/1",
                "test/1",
                "train/\u00e9.bin",
                "train/z.bin",
                "train/\uD83D\uDE00.bin",
                "train/\uFF21.bin");
        for (String key : keys) {
            put(key, 10);
        }
        List<ObjectInfo> listed;
        try (Stream<ObjectInfo> stream = origin.list("train/")) {
            listed = stream.toList();
        }
        // UTF-8 byte order (S3's), which is code point order: U+FF21 sorts before U+1F600, unlike in UTF-16.
        List<String> expected = List.of(
                "train/a.bin",
                "train/a/x.bin",
                "train/b.bin",
                "train/z.bin",
                "train/\u00e9.bin",
                "train/\uFF21.bin",
                "train/\uD83D\uDE00.bin");
        assertEquals(
                expected, inCheckedOrder(listed.stream().map(ObjectInfo::key).toList()));
        for (ObjectInfo info : listed) {
            assertEquals(origin.stat(info.key()), info, "listing and stat must agree on " + info.key());
        }
        try (Stream<ObjectInfo> stream = origin.list("tr")) {
            assertEquals(
                    List.of(
                            "train.txt",
                            "train/a.bin",
                            "train/a/x.bin",
                            "train/b.bin",
                            "train/z.bin",
                            "train/\u00e9.bin",
                            "train/\uFF21.bin",
                            "train/\uD83D\uDE00.bin",
                            "trial/1"),
                    inCheckedOrder(stream.map(ObjectInfo::key).toList()),
                    "a prefix is not a directory name");
        }
        try (Stream<ObjectInfo> stream = origin.list("")) {
            assertEquals(keys.size(), stream.count());
        }
        try (Stream<ObjectInfo> stream = origin.list("nothing/here/")) {
            assertEquals(0, stream.count());
        }
    }

    @Test
    void concurrentReadsReturnTheRightBytes() throws Exception {
        int objects = 16;
        List<byte[]> contents = new ArrayList<>();
        for (int i = 0; i < objects; i++) {
            contents.add(put("c/" + i, 20_000 + i));
        }
        List<ObjectInfo> infos = new ArrayList<>();
        for (int i = 0; i < objects; i++) {
            infos.add(origin.stat("c/" + i));
        }
        Concurrently.run(8, thread -> {
            SplittableRandom r = new SplittableRandom(thread);
            for (int i = 0; i < 100; i++) {
                int o = r.nextInt(objects);
                byte[] bytes = contents.get(o);
                int position = r.nextInt(bytes.length);
                int length = r.nextInt(bytes.length - position + 1);
                assertArrayEquals(
                        Arrays.copyOfRange(bytes, position, position + length), read(infos.get(o), position, length));
            }
        });
    }
}
