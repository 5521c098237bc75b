// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.loader.ShardSamples.Entry;
import dev.granary.loader.ShardSamples.Field;
import dev.granary.loader.TarIndex.Member;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link TarIndex} against shards written by Python's {@code tarfile} and GNU tar (generated once by
 * {@code src/test/resources/tar/make_fixtures.py}, which also records what Python reads in them), against damaged
 * copies of them, and against headers built here for the cases no tool writes; and {@link ShardSamples}.
 */
@Timeout(60)
class TarIndexTest {

    private static final String SHARD = "shards/000001.tar";

    // ---------------------------------------------------------------------------------------------------------------
    // Fixtures and readers

    private static byte[] resource(String name) throws IOException {
        try (InputStream in = TarIndexTest.class.getResourceAsStream("/tar/" + name)) {
            assertNotNull(in, "test resource /tar/" + name + " (run make_fixtures.py)");
            return in.readAllBytes();
        }
    }

    private static byte[] fixture(String name) throws IOException {
        return resource(name + ".tar");
    }

    /** The members Python's tarfile found in the fixture. */
    private static List<Member> expected(String name) throws IOException {
        List<Member> members = new ArrayList<>();
        for (String line : new String(resource(name + ".expected"), UTF_8).split("\n")) {
            if (!line.isEmpty()) {
                String[] parts = line.split("\t");
                assertEquals(3, parts.length, line);
                members.add(new Member(parts[0], Long.parseLong(parts[1]), Long.parseLong(parts[2])));
            }
        }
        return members;
    }

    /** What make_fixtures.py stores in a member: the SHA-256 of its name, repeated to its size. */
    private static byte[] content(String name, long size) {
        try {
            byte[] seed = MessageDigest.getInstance("SHA-256").digest(name.getBytes(UTF_8));
            byte[] data = new byte[Math.toIntExact(size)];
            for (int i = 0; i < data.length; i++) {
                data[i] = seed[i % seed.length];
            }
            return data;
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    /**
     * Serves a byte array and records every read. Buffers alternate between direct ones and heap ones whose position
     * and array offset are not zero, with bytes around them that must not be read.
     */
    private static final class RecordingReader implements TarIndex.RangeReader {

        final byte[] bytes;
        final List<long[]> reads = new ArrayList<>();

        RecordingReader(byte[] bytes) {
            this.bytes = bytes;
        }

        @Override
        public ByteBuffer read(long offset, int length) throws IOException {
            assertTrue(offset >= 0 && length > 0, "read(" + offset + ", " + length + ")");
            reads.add(new long[] {offset, length});
            if (offset + length > bytes.length) {
                throw new EOFException("read(" + offset + ", " + length + ") past " + bytes.length);
            }
            if (reads.size() % 2 == 0) {
                ByteBuffer direct = ByteBuffer.allocateDirect(length);
                direct.put(bytes, (int) offset, length).flip();
                return direct;
            }
            byte[] padded = new byte[length + 10];
            Arrays.fill(padded, (byte) 0x5a);
            System.arraycopy(bytes, (int) offset, padded, 7, length);
            return ByteBuffer.wrap(padded, 2, length + 6).slice().position(5).limit(5 + length);
        }

        /** {@return the typeflags of the headers read, in order} */
        List<Character> typeflags() {
            List<Character> types = new ArrayList<>();
            for (long[] read : reads) {
                if (read[1] == TarIndex.BLOCK && bytes[(int) read[0]] != 0) {
                    types.add((char) bytes[(int) read[0] + 156]);
                }
            }
            return types;
        }
    }

    private static List<Member> scan(byte[] bytes) throws IOException {
        return TarIndex.scan(SHARD, bytes.length, new RecordingReader(bytes));
    }

    private static CorruptShardException corrupt(byte[] bytes) {
        return corrupt(bytes, bytes.length);
    }

    private static CorruptShardException corrupt(byte[] bytes, long shardSize) {
        CorruptShardException e = assertThrows(
                CorruptShardException.class, () -> TarIndex.scan(SHARD, shardSize, new RecordingReader(bytes)));
        assertEquals(SHARD, e.shard());
        assertTrue(e.getMessage().startsWith("shard '" + SHARD + "' at offset " + e.offset() + ": "), e.getMessage());
        return e;
    }

    private static void assertContains(String message, String... parts) {
        for (String part : parts) {
            assertTrue(message.contains(part), "'" + part + "' not in: " + message);
        }
    }

    /**
     * Checks that the scan read headers and metadata only, sequentially: every read is a 512-byte block at a block
     * boundary, or the data of the PAX/GNU metadata header just before it; none touches a listed member's data.
     */
    private static void assertReadOnlyHeaders(RecordingReader reader, List<Member> members) {
        long previousEnd = 0;
        long previousHeader = -1;
        for (long[] read : reader.reads) {
            long offset = read[0];
            long length = read[1];
            assertTrue(offset >= previousEnd, "reads go forward, each byte once: " + offset + " < " + previousEnd);
            assertEquals(0, offset % TarIndex.BLOCK, "read at " + offset + " is block-aligned");
            boolean afterMetadata = offset == previousHeader + TarIndex.BLOCK && isMetadata(reader, previousHeader);
            if (length != TarIndex.BLOCK || afterMetadata) {
                assertEquals(
                        previousHeader + TarIndex.BLOCK,
                        offset,
                        "a read of " + length + " at " + offset + " is the data of the header before it");
                assertTrue(isMetadata(reader, previousHeader), "the header at " + previousHeader + " is metadata");
                previousHeader = -1;
            } else {
                previousHeader = offset;
            }
            for (Member m : members) {
                assertTrue(
                        offset + length <= m.offset() || offset >= m.offset() + m.size(),
                        "read(" + offset + ", " + length + ") overlaps the data of " + m);
            }
            previousEnd = offset + length;
        }
    }

    private static boolean isMetadata(RecordingReader reader, long header) {
        if (header < 0) {
            return false;
        }
        byte type = reader.bytes[(int) header + 156];
        return type == 'x' || type == 'g' || type == 'L';
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Fixtures: what Python reads, TarIndex reads, touching headers only

    @ParameterizedTest
    @ValueSource(strings = {"pax", "gnu", "ustar", "mixed", "webdataset", "zero_size", "gnutar-gnu", "gnutar-posix"})
    void listsWhatPythonListsReadingOnlyHeaders(String fixture) throws IOException {
        byte[] bytes = fixture(fixture);
        RecordingReader reader = new RecordingReader(bytes);
        List<Member> members = TarIndex.scan("shards/" + fixture + ".tar", bytes.length, reader);

        assertEquals(expected(fixture), members);
        assertReadOnlyHeaders(reader, members);
        for (Member m : members) {
            byte[] data = Arrays.copyOfRange(bytes, (int) m.offset(), (int) (m.offset() + m.size()));
            assertArrayEquals(content(m.name(), m.size()), data, "data of " + m.name());
        }
        // The scan stopped at the first zero block: the last read is a header read of zeros.
        long[] last = reader.reads.getLast();
        assertEquals(TarIndex.BLOCK, last[1]);
        assertTrue(last[0] + 2L * TarIndex.BLOCK <= bytes.length, "the archive's end-of-archive blocks fit");
        for (int i = 0; i < 2 * TarIndex.BLOCK; i++) {
            assertEquals(0, bytes[(int) last[0] + i], "end-of-archive byte " + i);
        }

        // Without the end-of-archive blocks, the end of the shard at a header boundary ends the archive as well.
        byte[] cut = Arrays.copyOf(bytes, (int) last[0]);
        RecordingReader cutReader = new RecordingReader(cut);
        assertEquals(members, TarIndex.scan("shards/" + fixture + ".tar", cut.length, cutReader));
        assertEquals(reader.reads.size() - 1, cutReader.reads.size());
    }

    @Test
    void theFixturesHoldTheConstructsTheyAreFor() throws IOException {
        assertHeaderTypes("pax", List.of('g', 'x', '0'));
        assertHeaderTypes("gnu", List.of('L', 'K', '2', '0'));
        assertHeaderTypes("mixed", List.of('5', '2', '1', '3', '4', '6', 'D', '0'));
        assertHeaderTypes("gnutar-gnu", List.of('5', 'L', 'K', '2', '1', '0'));
        assertHeaderTypes("gnutar-posix", List.of('5', 'x', '2', '1', '0'));

        assertTrue(
                expected("pax").stream()
                        .anyMatch(m -> m.name().getBytes(UTF_8).length > 100
                                && m.name().chars().anyMatch(c -> c > 0x7f)),
                "pax.tar has a long non-ASCII name");
        assertTrue(expected("mixed").stream().anyMatch(m -> m.size() == 0));
        assertTrue(expected("zero_size").stream().anyMatch(m -> m.size() == 0));

        // ustar: some header uses the prefix field, under the POSIX magic.
        byte[] ustar = fixture("ustar");
        boolean prefixed = false;
        for (Member m : expected("ustar")) {
            int header = (int) m.offset() - TarIndex.BLOCK;
            assertEquals("ustar\u000000", new String(ustar, header + 257, 8, UTF_8));
            prefixed |= ustar[header + 345] != 0;
        }
        assertTrue(prefixed, "a ustar header with a prefix");
        // The GNU tar shards store "./" names, which the index strips.
        assertEquals("./", new String(fixture("gnutar-gnu"), 0, 2, UTF_8));
    }

    private static void assertHeaderTypes(String fixture, List<Character> present) throws IOException {
        RecordingReader reader = new RecordingReader(fixture(fixture));
        TarIndex.scan(SHARD, reader.bytes.length, reader);
        Set<Character> types = new HashSet<>(reader.typeflags());
        for (char type : present) {
            assertTrue(types.contains(type), fixture + " has a '" + type + "' header: " + types);
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Damaged fixtures

    /** webdataset.tar: a/0001.jpg (1200 bytes) has its header at 0, a/0001.cls its header at 2048. */
    private static final int CLS_HEADER = 2048;

    @Test
    void aFlippedHeaderByteIsABadChecksumAtThatHeader() throws IOException {
        byte[] original = fixture("webdataset");
        assertEquals(
                new Member("a/0001.cls", CLS_HEADER + 512, 2),
                expected("webdataset").get(1));
        for (int i = 0; i < TarIndex.BLOCK; i++) {
            if (i >= 148 && i < 156) {
                continue; // the checksum field itself: see below
            }
            byte[] bytes = original.clone();
            bytes[CLS_HEADER + i] ^= 1;
            CorruptShardException e = corrupt(bytes);
            assertEquals(CLS_HEADER, e.offset(), "byte " + i);
            assertContains(e.getMessage(), "bad header checksum");
        }
        byte[] bytes = original.clone();
        bytes[CLS_HEADER + 10] ^= 1;
        String stored = new String(original, CLS_HEADER + 148, 6, UTF_8);
        int delta = original[CLS_HEADER + 10] == 0 ? 1 : -1;
        String computed = Integer.toOctalString(Integer.parseInt(stored, 8) + delta);
        assertEquals(
                "shard '" + SHARD + "' at offset 2048: bad header checksum (stored 0"
                        + Integer.toOctalString(Integer.parseInt(stored, 8)) + ", computed 0" + computed
                        + ") (expected: a tar header)",
                corrupt(bytes).getMessage());

        bytes = original.clone();
        bytes[CLS_HEADER + 150] = 'x';
        CorruptShardException e = corrupt(bytes);
        assertEquals(CLS_HEADER, e.offset());
        assertContains(e.getMessage(), "header checksum: \"", "(expected: octal digits or a base-256 number)");
    }

    @Test
    void truncatedInAMembersDataNamesTheMember() throws IOException {
        byte[] bytes = fixture("webdataset");
        for (int cut : new int[] {513, 512 + 600, 512 + 1199}) {
            CorruptShardException e = corrupt(Arrays.copyOf(bytes, cut));
            assertEquals(0, e.offset());
            assertEquals(
                    "shard '" + SHARD + "' at offset 0: truncated: member 'a/0001.jpg' of 1200 bytes at offset"
                            + " 512 ends at 1712 (expected: <= shard size " + cut + ")",
                    e.getMessage());
        }
        // All the data but not all the padding.
        CorruptShardException e = corrupt(Arrays.copyOf(bytes, 1712 + 10));
        assertEquals(0, e.offset());
        assertContains(e.getMessage(), "truncated: the padding after member 'a/0001.jpg'", "ends at 2048");
    }

    @Test
    void truncatedInAHeader() throws IOException {
        byte[] bytes = fixture("webdataset");
        for (int left : new int[] {1, 100, 511}) {
            CorruptShardException e = corrupt(Arrays.copyOf(bytes, CLS_HEADER + left));
            assertEquals(CLS_HEADER, e.offset());
            assertContains(e.getMessage(), "truncated: " + left + " bytes left for a header");
        }
    }

    @Test
    void aReaderEndingBeforeTheShardSizeIsATruncatedShard() throws IOException {
        byte[] bytes = Arrays.copyOf(fixture("webdataset"), CLS_HEADER + 100);
        CorruptShardException e = corrupt(bytes, 20480);
        assertEquals(CLS_HEADER, e.offset());
        assertContains(e.getMessage(), "truncated: the shard ends inside the header of 512 bytes at offset 2048");
        assertInstanceOf(EOFException.class, e.getCause());

        // ...also inside a metadata member: pax.tar starts with a global header and its data.
        byte[] pax = Arrays.copyOf(fixture("pax"), 530);
        e = corrupt(pax, 20480);
        assertEquals(0, e.offset());
        assertContains(e.getMessage(), "truncated: the shard ends inside the PAX global header");
    }

    @Test
    void otherReaderFailuresPropagateAsIs() {
        IOException failure = new IOException("connection reset");
        assertSame(
                failure,
                assertThrows(
                        IOException.class,
                        () -> TarIndex.scan(SHARD, 1024, (o, l) -> {
                            throw failure;
                        })));
    }

    @Test
    void aGarbageSizeField() throws IOException {
        for (String garbage : new String[] {"0000000x260\0", "00000002 60\0", "-0000002260\0", "0000002260 1"}) {
            byte[] bytes = fixture("webdataset");
            setField(bytes, 0, 124, garbage.getBytes(UTF_8));
            CorruptShardException e = corrupt(bytes);
            assertEquals(0, e.offset(), garbage);
            assertContains(e.getMessage(), "size: \"", "(expected: octal digits or a base-256 number)");
        }
    }

    @Test
    void sizeFieldsInEveryEncodingWritersUse() throws IOException {
        byte[][] encodings = {
            "00000002260\0".getBytes(UTF_8), // POSIX
            "00000002260 ".getBytes(UTF_8), // space-terminated
            "     2260 \0\0".getBytes(UTF_8), // leading spaces (old GNU and star)
            "000000002260".getBytes(UTF_8), // twelve digits, no terminator
            "2260\0garbage".getBytes(UTF_8), // anything after the NUL is ignored
            {(byte) 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x04, (byte) 0xb0}, // GNU base-256: 1200 = 0x4b0
        };
        List<Member> expected = expected("webdataset");
        for (byte[] encoding : encodings) {
            byte[] bytes = fixture("webdataset");
            setField(bytes, 0, 124, encoding);
            assertEquals(expected, scan(bytes), new String(encoding, UTF_8));
        }
    }

    @Test
    void negativeAndOverlongBase256Sizes() throws IOException {
        byte[] bytes = fixture("webdataset");
        byte[] minusOne = new byte[12];
        Arrays.fill(minusOne, (byte) 0xff);
        setField(bytes, 0, 124, minusOne);
        assertContains(corrupt(bytes).getMessage(), "size: negative base-256 value (expected: >= 0)");

        byte[] tooLarge = new byte[12];
        tooLarge[0] = (byte) 0x80;
        tooLarge[3] = 1; // 2^64
        setField(bytes, 0, 124, tooLarge);
        assertContains(corrupt(bytes).getMessage(), "size: base-256 value", "(expected: < 2^63)");

        byte[] huge = new byte[12];
        huge[0] = (byte) 0x80;
        huge[4] = 0x7f; // Long.MAX_VALUE: past any shard, and the arithmetic must not overflow
        Arrays.fill(huge, 5, 12, (byte) 0xff);
        setField(bytes, 0, 124, huge);
        CorruptShardException e = corrupt(bytes);
        assertContains(
                e.getMessage(),
                "truncated: member 'a/0001.jpg' of " + Long.MAX_VALUE + " bytes at offset 512",
                "ends at " + Long.toUnsignedString(Long.MAX_VALUE + 512));
    }

    @Test
    void aPaxRecordWithABadLength() throws IOException {
        byte[] original = fixture("pax");
        RecordingReader reader = new RecordingReader(original);
        TarIndex.scan(SHARD, original.length, reader);
        int header = -1;
        for (long[] read : reader.reads) {
            if (read[1] == TarIndex.BLOCK && original[(int) read[0] + 156] == 'x') {
                header = (int) read[0];
                break;
            }
        }
        assertTrue(header > 0, "pax.tar has an 'x' header");
        int data = header + TarIndex.BLOCK;
        int digits = 0;
        while (original[data + digits] != ' ') {
            digits++;
        }
        int length = Integer.parseInt(new String(original, data, digits, UTF_8));
        assertContains(new String(original, data, length, UTF_8), " path=données/");

        byte[] bytes = original.clone();
        System.arraycopy(String.valueOf(length - 1).getBytes(UTF_8), 0, bytes, data, digits);
        CorruptShardException e = corrupt(bytes);
        assertEquals(header, e.offset());
        assertContains(
                e.getMessage(),
                "bad PAX record at byte 0 of the extended header: length " + (length - 1)
                        + " does not end at a newline",
                "(expected: \"LENGTH key=value\\n\" records)");

        bytes = original.clone();
        Arrays.fill(bytes, data, data + digits, (byte) '9');
        e = corrupt(bytes);
        assertEquals(header, e.offset());
        assertContains(e.getMessage(), "runs past the end of the header");
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Built here: constructs no fixture holds

    @Test
    void malformedPaxRecords() {
        String[] bad = {
            "999 path=a\n", // runs past the end
            "11 path=a\n", // ends one byte late
            "9 path=a\n\n", // a record, then a stray newline
            "x path=a\n",
            "9path=a\n\n\n", // no space after the length
            "6 =ab\n", // no key
            "9 pathab\n", // no '='
            "0 \n",
            "3 a\n",
            record("path", "a") + "garbage",
            record("path", "a") + "\0\0x",
            "5 a=xy", // no newline at the end
            " 9 path=a\n",
        };
        for (String records : bad) {
            CorruptShardException e = corrupt(paxArchive('x', records));
            assertEquals(0, e.offset(), records);
            assertContains(e.getMessage(), "bad PAX record");
        }
        // ...and the same in a global header, which is parsed though ignored.
        assertContains(corrupt(paxArchive('g', "11 path=a\n")).getMessage(), "bad PAX record");
    }

    @Test
    void paxPathAndSizeOverrideTheHeader() throws IOException {
        Tar tar = new Tar()
                .pax(
                        'x',
                        record("comment", "x=y\nz") + record("path", "pax/wéird\nname=1.txt") + record("size", "5")
                                + record("mtime", "1700000000.5") + "\0\0\0");
        tar.file("header-name.txt", '0', 999_999, new byte[5]); // the header's size is overridden
        tar.pax('x', record("path", "")).file("kept.txt", '0', 2, new byte[2]); // an empty value cancels
        tar.pax('x', record("size", "3")).pax('x', record("path", "both.txt")).file("x", '0', 0, new byte[3]);
        List<Member> members = scan(tar.end());
        assertEquals(
                List.of(
                        new Member("pax/wéird\nname=1.txt", 1536, 5),
                        new Member("kept.txt", 3584, 2),
                        new Member("both.txt", 6656, 3)),
                members);
    }

    @Test
    void badPaxSizes() {
        for (String size : new String[] {"-1", "12a", "0x10", " 5", "9223372036854775808"}) {
            CorruptShardException e = corrupt(new Tar()
                    .pax('x', record("size", size))
                    .file("f", '0', 0, null)
                    .end());
            assertContains(e.getMessage(), "PAX size: \"" + size + "\" (expected: a decimal number of bytes < 2^63)");
        }
        CorruptShardException e = corrupt(new Tar()
                .pax('x', record("size", String.valueOf(Long.MAX_VALUE)))
                .file("f", '0', 0, null)
                .end());
        assertEquals(1024, e.offset(), "the member's header, after the extended header and its data");
        assertContains(e.getMessage(), "truncated: member 'f' of " + Long.MAX_VALUE + " bytes");
    }

    @Test
    void globalPaxHeadersAreNotMembersAndDoNotRename() throws IOException {
        byte[] bytes = new Tar()
                .pax('g', record("path", "global.txt") + record("size", "7"))
                .file("a.txt", '0', 1, new byte[1])
                .end();
        assertEquals(List.of(new Member("a.txt", 1536, 1)), scan(bytes));
        // A global header describes no member: it may be the last thing in the archive.
        assertEquals(
                List.of(),
                scan(new Tar().pax('g', record("comment", "nothing follows")).end()));
        assertEquals(
                List.of(),
                scan(new Tar().pax('g', record("comment", "nothing follows")).bytes()));
    }

    @Test
    void paxPathOverridesTheGnuLongNameWhichOverridesTheHeader() throws IOException {
        String longName = "gnu/" + "n".repeat(200) + ".txt";
        byte[] bytes = new Tar()
                .meta('L', (longName + "\0").getBytes(UTF_8))
                .pax('x', record("path", "pax.txt"))
                .file("header.txt", '0', 1, new byte[1])
                .meta('L', (longName + "\0").getBytes(UTF_8))
                .meta('K', "link\0".getBytes(UTF_8))
                .file("header.txt", '0', 1, new byte[1])
                .meta('K', ("t".repeat(300) + "\0").getBytes(UTF_8))
                .file("symlink", '2', 0, null)
                .file("header.txt", '0', 1, new byte[1])
                .end();
        RecordingReader reader = new RecordingReader(bytes);
        List<Member> members = TarIndex.scan(SHARD, bytes.length, reader);
        assertEquals(
                List.of("pax.txt", longName, "header.txt"),
                members.stream().map(Member::name).toList());
        assertReadOnlyHeaders(reader, members);
        for (long[] read : reader.reads) {
            assertTrue(read[1] != 5 && read[1] != 301, "long link names are not read: " + Arrays.toString(read));
        }
    }

    @Test
    void metadataIsBoundedToOneMebibyte() throws IOException {
        int max = TarIndex.MAX_METADATA_SIZE;
        // Exactly 1 MiB: one record of that length.
        String value = "v".repeat(max - "1048576 comment=\n".length());
        String big = record("comment", value);
        assertEquals(max, big.length());
        assertEquals(
                List.of(new Member("f.txt", 512 + max + 512, 0)),
                scan(new Tar().pax('x', big).file("f.txt", '0', 0, null).end()));

        for (char type : new char[] {'x', 'g', 'L'}) {
            byte[] header = Tar.header("././@PaxHeader", type, max + 1L);
            long shardSize = 4L * max;
            List<long[]> reads = new ArrayList<>();
            CorruptShardException e = assertThrows(
                    CorruptShardException.class,
                    () -> TarIndex.scan(SHARD, shardSize, (offset, length) -> {
                        reads.add(new long[] {offset, length});
                        return offset == 0 ? ByteBuffer.wrap(header) : ByteBuffer.allocate(length);
                    }));
            assertEquals(0, e.offset());
            assertContains(e.getMessage(), "of " + (max + 1) + " bytes (expected: <= 1048576 bytes)");
            assertEquals(1, reads.size(), "only the header was read");
        }
    }

    @Test
    void metadataWithoutItsMemberIsATruncatedArchive() {
        assertContains(
                corrupt(new Tar().pax('x', record("path", "a.txt")).end()).getMessage(),
                "the archive ends after a PAX extended header or GNU long name");
        byte[] noEndBlocks = new Tar().meta('L', "a.txt\0".getBytes(UTF_8)).bytes();
        CorruptShardException e = corrupt(noEndBlocks);
        assertEquals(1024, e.offset());
        assertContains(e.getMessage(), "(expected: the header of the member it describes)");
    }

    @Test
    void sparseFilesAreRefused() {
        CorruptShardException e =
                corrupt(new Tar().file("old-gnu-sparse", 'S', 0, null).end());
        assertContains(e.getMessage(), "GNU sparse member 'old-gnu-sparse'", "sparse files are not supported");
        e = corrupt(new Tar()
                .pax('x', record("GNU.sparse.major", "1") + record("GNU.sparse.name", "s"))
                .file("GNUSparseFile.0/s", '0', 0, null)
                .end());
        assertContains(e.getMessage(), "PAX key GNU.sparse.major", "sparse files are not supported");
    }

    @Test
    void typesThatCarryDataAndTypesThatDoNot() throws IOException {
        Tar tar = new Tar();
        tar.file("regular-0.a", '0', 3, new byte[3])
                .file("regular-nul.a", 0, 3, new byte[3])
                .file("contiguous.a", '7', 3, new byte[3]);
        List<Member> expected = new ArrayList<>(List.of(
                new Member("regular-0.a", 512, 3),
                new Member("regular-nul.a", 1536, 3),
                new Member("contiguous.a", 2560, 3)));
        long offset = 3072;
        // Links, devices, directories and fifos carry no data, whatever their size field says: the next header
        // follows at once (were 1000 bytes skipped, the member after it would be lost).
        for (int type : new int[] {'1', '2', '3', '4', '5', '6', 0}) {
            tar.file(type == 0 ? "v7-directory/" : "no-data-" + (char) type, type, 1000, null);
            tar.file("after-" + type + ".a", '0', 1, new byte[1]);
            expected.add(new Member("after-" + type + ".a", offset + 1024, 1));
            offset += 1536;
        }
        // Other types are skipped with their data.
        for (char type : new char[] {'D', 'M', 'N', 'V', 'Z'}) {
            tar.file("with-data-" + type, type, 700, new byte[700]);
            offset += 1536;
        }
        tar.file("last.a", '0', 1, new byte[1]);
        expected.add(new Member("last.a", offset + 512, 1));
        byte[] bytes = tar.end();
        RecordingReader reader = new RecordingReader(bytes);
        List<Member> members = TarIndex.scan(SHARD, bytes.length, reader);
        assertEquals(expected, members);
        assertReadOnlyHeaders(reader, members);
    }

    @Test
    void v7HeadersHaveNoPrefixAndGnuHeadersKeepOtherFieldsThere() throws IOException {
        // v7: no magic; bytes past the link name are zero.
        byte[] v7 = new Tar().file("v7/0001.txt", 0, 4, new byte[4]).end();
        Arrays.fill(v7, 257, 512, (byte) 0);
        Tar.fixChecksum(v7, 0);
        assertEquals(List.of(new Member("v7/0001.txt", 512, 4)), scan(v7));

        // GNU: atime and ctime live where ustar keeps its prefix.
        byte[] gnu = fixture("gnu");
        setField(gnu, 0, 257, "ustar  \0".getBytes(UTF_8));
        setField(gnu, 0, 345, "14774470400\0".getBytes(UTF_8));
        assertEquals(expected("gnu"), scan(gnu));

        // ...while the same bytes under the POSIX magic are a prefix.
        setField(gnu, 0, 257, "ustar\u000000".getBytes(UTF_8));
        assertEquals("14774470400/first.bin", scan(gnu).getFirst().name());
    }

    @Test
    void theHistoricSignedChecksumIsAccepted() throws IOException {
        byte[] bytes = new Tar().file("é/0001.txt", '0', 1, new byte[1]).end();
        int unsigned = 0;
        int signed = 0;
        for (int i = 0; i < 512; i++) {
            byte b = i >= 148 && i < 156 ? (byte) ' ' : bytes[i];
            unsigned += b & 0xff;
            signed += b;
        }
        assertTrue(signed < unsigned, "the name has bytes above 0x7f");
        List<Member> expected = List.of(new Member("é/0001.txt", 512, 1));
        for (int sum : new int[] {unsigned, signed}) {
            System.arraycopy(String.format("%06o\0 ", sum).getBytes(UTF_8), 0, bytes, 148, 8);
            assertEquals(expected, scan(bytes));
        }
        System.arraycopy(String.format("%06o\0 ", signed + 1).getBytes(UTF_8), 0, bytes, 148, 8);
        assertContains(corrupt(bytes).getMessage(), "bad header checksum");
    }

    @Test
    void leadingDotSlashIsStrippedAndNamesAreUtf8() throws IOException {
        byte[] bytes = new Tar()
                .file("./a/b.txt", '0', 0, null)
                .file("././c.txt", '0', 0, null)
                .file(".d.txt", '0', 0, null)
                .file("bad-\u00ff.txt", '0', 0, null)
                .end();
        // A Latin-1 name: not UTF-8, decoded with a replacement character.
        int header = 3 * 512;
        setField(bytes, header, 0, "bad-\u00ff.txt\0".getBytes(StandardCharsets.ISO_8859_1));
        assertEquals(
                List.of("a/b.txt", "c.txt", ".d.txt", "bad-\ufffd.txt"),
                scan(bytes).stream().map(Member::name).toList());
    }

    @Test
    void endOfArchive() throws IOException {
        assertEquals(List.of(), scan(new byte[0]));
        assertEquals(List.of(), scan(new byte[512]));
        assertEquals(List.of(), scan(new byte[1024]));
        assertContains(corrupt(new byte[100]).getMessage(), "truncated: 100 bytes left for a header");

        // Nothing after the first zero block is read, not even the second one.
        byte[] bytes = new Tar().file("a.txt", '0', 1, new byte[1]).bytes();
        byte[] withGarbage = Arrays.copyOf(bytes, bytes.length + 512 + 4096);
        Arrays.fill(withGarbage, bytes.length + 512, withGarbage.length, (byte) 0x33);
        RecordingReader reader = new RecordingReader(withGarbage);
        assertEquals(List.of(new Member("a.txt", 512, 1)), TarIndex.scan(SHARD, withGarbage.length, reader));
        assertEquals(2, reader.reads.size());
    }

    @Test
    void argumentChecks() {
        TarIndex.RangeReader reader = new RecordingReader(new byte[0]);
        assertEquals(
                "shard size: -1 (expected: >= 0)",
                assertThrows(IllegalArgumentException.class, () -> TarIndex.scan(SHARD, -1, reader))
                        .getMessage());
        assertThrows(NullPointerException.class, () -> TarIndex.scan(null, 0, reader));
        assertThrows(NullPointerException.class, () -> TarIndex.scan(SHARD, 0, null));
        assertThrows(IllegalArgumentException.class, () -> new Member("a", -1, 0));
        assertThrows(IllegalArgumentException.class, () -> new Member("a", 0, -1));

        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> TarIndex.scan(SHARD, 1024, (offset, length) -> ByteBuffer.allocate(length - 1)));
        assertEquals(
                "reader returned 511 bytes for shard '" + SHARD + "' at offset 0 (expected: 512 bytes)",
                e.getMessage());
        assertThrows(IllegalStateException.class, () -> TarIndex.scan(SHARD, 1024, (offset, length) -> null));
    }

    @Test
    void exceptionMessageAndAccessors() {
        CorruptShardException e = new CorruptShardException("shards/000001.tar", 1536, "bad header checksum");
        assertEquals("shard 'shards/000001.tar' at offset 1536: bad header checksum", e.getMessage());
        assertEquals("shards/000001.tar", e.shard());
        assertEquals(1536, e.offset());
        assertInstanceOf(IOException.class, e);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // Building archives

    private static void setField(byte[] archive, int header, int offset, byte[] value) {
        System.arraycopy(value, 0, archive, header + offset, value.length);
        Tar.fixChecksum(archive, header);
    }

    /** A PAX record: its length counts its own digits. */
    static String record(String key, String value) {
        int body = 1 + key.getBytes(UTF_8).length + 1 + value.getBytes(UTF_8).length + 1;
        int length = body + 1;
        while (Integer.toString(length).length() + body != length) {
            length++;
        }
        return length + " " + key + "=" + value + "\n";
    }

    private static byte[] paxArchive(char type, String records) {
        return new Tar().pax(type, records).file("f.txt", '0', 0, null).end();
    }

    /** Writes POSIX ustar headers with Python's field layout; nothing else. */
    private static final class Tar {

        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        static byte[] header(String name, int type, long size) {
            byte[] h = new byte[512];
            byte[] n = name.getBytes(UTF_8);
            assertTrue(n.length <= 100, name);
            System.arraycopy(n, 0, h, 0, n.length);
            put(h, 100, "0000644\0");
            put(h, 108, "0000000\0");
            put(h, 116, "0000000\0");
            put(h, 124, String.format("%011o\0", size));
            put(h, 136, "14774470400\0");
            h[156] = (byte) type;
            put(h, 257, "ustar\u000000");
            fixChecksum(h, 0);
            return h;
        }

        static void fixChecksum(byte[] archive, int header) {
            Arrays.fill(archive, header + 148, header + 156, (byte) ' ');
            int sum = 0;
            for (int i = 0; i < 512; i++) {
                sum += archive[header + i] & 0xff;
            }
            put(archive, header + 148, String.format("%06o\0 ", sum));
        }

        private static void put(byte[] bytes, int offset, String ascii) {
            byte[] b = ascii.getBytes(UTF_8);
            System.arraycopy(b, 0, bytes, offset, b.length);
        }

        /** A member: header, then {@code data} (which may differ from {@code size}, or be null) padded. */
        Tar file(String name, int type, long size, byte[] data) {
            out.writeBytes(header(name, type, size));
            if (data != null) {
                out.writeBytes(data);
                out.writeBytes(new byte[(512 - data.length % 512) % 512]);
            }
            return this;
        }

        Tar meta(char type, byte[] data) {
            return file(type == 'L' || type == 'K' ? "././@LongLink" : "././@PaxHeader", type, data.length, data);
        }

        Tar pax(char type, String records) {
            return meta(type, records.getBytes(UTF_8));
        }

        byte[] bytes() {
            return out.toByteArray();
        }

        byte[] end() {
            out.writeBytes(new byte[1024]);
            return bytes();
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // ShardSamples

    @Nested
    class Samples {

        private static Member m(String name, long offset, long size) {
            return new Member(name, offset, size);
        }

        @Test
        void theWebdatasetFixtureGroupsIntoItsSamples() throws IOException {
            byte[] bytes = fixture("webdataset");
            List<Entry> samples = ShardSamples.group(SHARD, scan(bytes));
            assertEquals(
                    List.of("a/0001", "a/0002", "a/0003", "b.c/0004.d/x"),
                    samples.stream().map(Entry::key).toList());
            for (int i = 0; i < 3; i++) {
                assertEquals(
                        List.of("jpg", "cls", "seg.png"),
                        samples.get(i).fields().stream().map(Field::name).toList());
            }
            assertEquals(
                    List.of("json", "txt"),
                    samples.get(3).fields().stream().map(Field::name).toList());

            Entry first = samples.getFirst();
            assertEquals(512, first.start());
            assertEquals(3584 + 700, first.end());
            Entry second = samples.get(1);
            assertEquals(new Field("jpg", 5120, 0), second.fields().getFirst());
            assertEquals(5120, second.start(), "an empty first field still starts the extent");
            assertEquals(6656 + 513, second.end());
            assertEquals(
                    new Entry(
                            "b.c/0004.d/x",
                            14848,
                            15872,
                            List.of(new Field("json", 14848, 17), new Field("txt", 15872, 0))),
                    samples.get(3));

            // One ranged read of the extent holds every field's data.
            for (Entry sample : samples) {
                byte[] extent = Arrays.copyOfRange(bytes, (int) sample.start(), (int) sample.end());
                for (Field f : sample.fields()) {
                    int at = (int) (f.offset() - sample.start());
                    assertArrayEquals(
                            content(sample.key() + "." + f.name(), f.size()),
                            Arrays.copyOfRange(extent, at, at + (int) f.size()),
                            sample.key() + "." + f.name());
                }
            }
        }

        @Test
        void keyAndFieldSplitAtTheFirstDotOfTheLastComponent() throws CorruptShardException {
            List<Entry> samples = ShardSamples.group(
                    SHARD,
                    List.of(
                            m("train/n0153.seg.png", 512, 10),
                            m("n0153.cls", 1536, 1),
                            m("x.y/z.w.v", 2560, 1),
                            m("A.JPG", 3584, 1)));
            assertEquals(
                    List.of(
                            new Entry("train/n0153", 512, 522, List.of(new Field("seg.png", 512, 10))),
                            new Entry("n0153", 1536, 1537, List.of(new Field("cls", 1536, 1))),
                            new Entry("x.y/z", 2560, 2561, List.of(new Field("w.v", 2560, 1))),
                            new Entry("A", 3584, 3585, List.of(new Field("JPG", 3584, 1)))),
                    samples);
        }

        @Test
        void membersOfOneSampleThatAreNotAdjacentAreRefusedNamingShardAndKey() {
            CorruptShardException e = assertThrows(
                    CorruptShardException.class,
                    () -> ShardSamples.group(
                            SHARD, List.of(m("a.x", 512, 1), m("a.y", 1536, 1), m("b.x", 2560, 1), m("a.z", 3584, 1))));
            assertEquals(SHARD, e.shard());
            assertEquals(3584, e.offset());
            assertTrue(e.getMessage().contains("members of sample 'a' are not adjacent"), e.getMessage());
            assertTrue(e.getMessage().contains("'a.z'"), e.getMessage());
            // Adjacent members of one key, then other keys: fine.
            assertDoesNotThrow(() -> ShardSamples.group(
                    SHARD, List.of(m("a.x", 512, 1), m("a.y", 1536, 1), m("b.x", 2560, 1), m("c.x", 3584, 1))));
        }

        @Test
        void membersWithoutAFieldNameAreSkippedWithoutEndingASample() throws CorruptShardException {
            List<Entry> samples = ShardSamples.group(
                    SHARD,
                    List.of(
                            m("a.x", 512, 1),
                            m("README", 1536, 1),
                            m("d.d/__init__", 2560, 1),
                            m(".hidden", 3584, 1),
                            m("d/.hidden.txt", 4608, 1),
                            m("trailing.", 5632, 1),
                            m("", 6656, 1),
                            m("dir.d/", 7680, 0),
                            m("a.y", 8704, 3)));
            assertEquals(
                    List.of(new Entry("a", 512, 8707, List.of(new Field("x", 512, 1), new Field("y", 8704, 3)))),
                    samples);
            assertEquals(List.of(), ShardSamples.group(SHARD, List.of(m("README", 512, 1))));
            assertEquals(List.of(), ShardSamples.group(SHARD, List.of()));
        }

        @Test
        void aDuplicateFieldIsACorruptShard() {
            CorruptShardException e = assertThrows(
                    CorruptShardException.class,
                    () -> ShardSamples.group(
                            SHARD, List.of(m("a/1.jpg", 512, 1), m("a/1.cls", 1536, 1), m("a/1.jpg", 2560, 1))));
            assertEquals(SHARD, e.shard());
            assertEquals(2560, e.offset());
            assertEquals(
                    "shard '" + SHARD + "' at offset 2560: duplicate field 'jpg' in sample 'a/1'"
                            + " (expected: each field once per sample)",
                    e.getMessage());
        }

        @Test
        void theFixturesGroupWithoutErrors() throws IOException {
            // GNU tar's shard: data/0001.{cls,jpg}, data/0002.{cls,jpg}, a long name and a unicode name.
            List<Entry> samples = ShardSamples.group(SHARD, scan(fixture("gnutar-posix")));
            assertEquals(
                    List.of(
                            "data/0001",
                            "data/0002",
                            "data/sub/long-name-long-name-long-name-long-name-long-name-"
                                    + "long-name-long-name-long-name-long-name-long-name-long-name-",
                            "data/ünïcode/日本語"),
                    samples.stream().map(Entry::key).toList());
            assertEquals(
                    List.of("cls", "jpg"),
                    samples.getFirst().fields().stream().map(Field::name).toList());
        }

        @Test
        void argumentChecks() {
            assertThrows(NullPointerException.class, () -> ShardSamples.group(null, List.of()));
            assertThrows(NullPointerException.class, () -> ShardSamples.group(SHARD, null));
            assertThrows(IllegalArgumentException.class, () -> new Entry("a", 0, 1, List.of()));
            assertThrows(IllegalArgumentException.class, () -> new Entry("a", 5, 1, List.of(new Field("x", 5, 0))));
            assertThrows(IllegalArgumentException.class, () -> new Field("x", -1, 0));
            List<Field> fields = new ArrayList<>(List.of(new Field("x", 0, 1)));
            Entry entry = new Entry("a", 0, 1, fields);
            fields.clear();
            assertEquals(1, entry.fields().size(), "the entry copies its fields");
        }
    }

    @Test
    void noReadIsLeftUnchecked() {
        // Guards the guard: assertReadOnlyHeaders must fail on a read of a member's data.
        RecordingReader reader = new RecordingReader(new byte[4096]);
        reader.reads.add(new long[] {0, 512});
        reader.reads.add(new long[] {512, 512});
        assertThrows(AssertionError.class, () -> assertReadOnlyHeaders(reader, List.of(new Member("a", 512, 10))));
        reader.reads.clear();
        reader.reads.add(new long[] {0, 512});
        reader.reads.add(new long[] {512, 100});
        assertThrows(AssertionError.class, () -> assertReadOnlyHeaders(reader, List.of()));
    }
}
