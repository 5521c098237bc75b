// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.tier.DiskTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a new user met (issue 30): commands whose exit code and summary said more than they did. Each case runs the real
 * command against real directories: a prestage larger than its capacity, a prefix that lists nothing, a directory
 * damaged in its record headers, a directory in use, a directory that is not there, and the library's warnings.
 */
@Timeout(180)
class CommandsTellTheTruthTest {

    private static final int OBJECTS = 600;

    @TempDir
    Path root;

    private Path data;
    private long totalBytes;

    @BeforeEach
    void setUp() throws IOException {
        data = Files.createDirectories(root.resolve("data"));
        SplittableRandom random = new SplittableRandom(30);
        for (int i = 0; i < OBJECTS; i++) {
            byte[] bytes = new byte[4_000 + random.nextInt(26_000)];
            random.nextBytes(bytes);
            Files.write(Files.createDirectories(data.resolve("train")).resolve(String.format("%04d.bin", i)), bytes);
            totalBytes += bytes.length;
        }
    }

    private String origin() {
        return data.toUri().toString();
    }

    private static long number(String text, String regex) {
        Matcher m = Pattern.compile(regex).matcher(text);
        assertTrue(m.find(), "no '" + regex + "' in:\n" + text);
        return Long.parseLong(m.group(1));
    }

    @Test
    void aPrestageLargerThanItsCapacitySaysWhatItLeftOutAndASecondRunFindsWhatTheFirstKept() {
        Path disk = root.resolve("small");
        Cli.Result first = Cli.run(
                "prestage",
                origin(),
                "--prefix",
                "train/",
                "--disk",
                disk.toString(),
                "--capacity",
                "2M",
                "--progress",
                "none");
        assertEquals(1, first.exit(), "fewer objects staged than asked: exit 1\n" + first);
        long held = number(first.out(), "^prestaged (\\d+) of " + OBJECTS + " objects");
        long left = number(first.out(), "not staged: (\\d+) objects");
        assertTrue(held > 0 && held < OBJECTS, first.out());
        assertEquals(OBJECTS, held + left, "every object is held or named as not staged: " + first.out());
        assertTrue(first.out().contains("the disk tier is full (--capacity 2.0 MiB holds "), first.out());
        assertTrue(first.out().contains("holds all " + Sizes.format(totalBytes)), first.out());

        // What the summary says is held is what the directory holds.
        Cli.Result inspect = Cli.run("inspect", disk.toString());
        assertEquals(0, inspect.exit(), inspect.toString());
        assertTrue(
                inspect.out().contains("objects    " + held + "\n"),
                "inspect agrees with the summary (" + held + "):\n" + inspect.out());
        assertTrue(inspect.out().contains("capacity   2.0 MiB, "), inspect.out());

        // A second run finds the first run's objects instead of fetching them again, and still says what is left.
        Cli.Result second = Cli.run(
                "prestage",
                origin(),
                "--prefix",
                "train/",
                "--disk",
                disk.toString(),
                "--capacity",
                "2M",
                "--progress",
                "none");
        assertEquals(1, second.exit(), second.toString());
        assertEquals(held, number(second.out(), "already cached (\\d+) objects"), second.out());
        long heldAgain = number(second.out(), "^prestaged (\\d+) of " + OBJECTS + " objects");
        assertTrue(heldAgain >= held, "nothing of the first run was pushed out: " + second.out());
        assertEquals(OBJECTS, heldAgain + number(second.out(), "not staged: (\\d+) objects"), second.out());
        assertTrue(Cli.run("inspect", disk.toString()).out().contains("objects    " + heldAgain + "\n"));

        // With room for all, everything is staged and the exit is 0.
        String suggested = first.out().replaceAll("(?s).*a capacity of about (\\S+) holds all.*", "$1");
        Cli.Result enough = Cli.run(
                "prestage",
                origin(),
                "--prefix",
                "train/",
                "--disk",
                disk.toString(),
                "--capacity",
                suggested,
                "--progress",
                "none");
        assertEquals(0, enough.exit(), "the suggested capacity " + suggested + " holds the dataset\n" + enough);
        assertTrue(enough.out().startsWith("prestaged " + OBJECTS + " of " + OBJECTS + " objects"), enough.out());
    }

    @Test
    void aPrefixThatListsNothingIsAnErrorAndLeavesNoDirectory() throws IOException {
        Path disk = root.resolve("typo");
        Cli.Result typo = Cli.run(
                "prestage",
                origin(),
                "--prefix",
                "trian/",
                "--disk",
                disk.toString(),
                "--capacity",
                "64M",
                "--progress",
                "none");
        assertEquals(3, typo.exit(), typo.toString());
        assertTrue(typo.err().contains("--prefix 'trian/': no object under it at "), typo.err());
        assertFalse(Files.exists(disk), "no directory left behind");

        Path keys = Files.writeString(root.resolve("keys.txt"), "# nothing\n\n");
        Cli.Result none = Cli.run(
                "prestage",
                origin(),
                "--keys-from",
                keys.toString(),
                "--disk",
                disk.toString(),
                "--capacity",
                "64M",
                "--progress",
                "none");
        assertEquals(3, none.exit(), none.toString());
        assertTrue(none.err().contains("no key in it"), none.err());
        assertFalse(Files.exists(disk), "no directory left behind");

        // Keys that all fail: nothing staged, and the directory this run made is gone again.
        Path missing = Files.writeString(root.resolve("missing.txt"), "train/nope-1.bin\ntrain/nope-2.bin\n");
        Cli.Result failed = Cli.run(
                "prestage",
                origin(),
                "--keys-from",
                missing.toString(),
                "--disk",
                disk.toString(),
                "--capacity",
                "64M",
                "--progress",
                "none");
        assertEquals(1, failed.exit(), failed.toString());
        assertTrue(
                failed.out().contains("(removed: nothing staged)")
                        && failed.out().contains("failed 2"),
                failed.out());
        assertFalse(Files.exists(disk), "no directory left behind");
    }

    @Test
    void verifyCountsThePagesDamageMadeTheScanDropAndWarningsAreOneLineEach() throws IOException {
        Path disk = root.resolve("nvme");
        Cli.Result staged = Cli.run(
                "prestage",
                origin(),
                "--prefix",
                "train/",
                "--disk",
                disk.toString(),
                "--capacity",
                "64M",
                "--progress",
                "none");
        assertEquals(0, staged.exit(), staged.toString());
        Cli.Result clean = Cli.run("verify", disk.toString());
        long pages = number(clean.out(), "^verified (\\d+) pages");
        assertEquals(OBJECTS, pages, "one page per object (pages of 1 MiB)");

        // Damage the 10th record header of the segment that holds the most records, and one payload byte elsewhere.
        Path segment;
        try (Stream<Path> files = Files.list(disk.resolve("segments"))) {
            segment = files.max((a, b) -> Long.compare(records(a), records(b))).orElseThrow();
        }
        long inSegment = records(segment);
        assertTrue(inSegment > 20, "records in " + segment + ": " + inSegment);
        long header = recordHeaderOffset(segment, 9);
        flip(segment, header + 70); // inside the key: the header's CRC fails

        Cli.Result damaged = Cli.run("verify", disk.toString());
        assertEquals(1, damaged.exit(), damaged.toString());
        // The 10th record and every record after it in that segment are lost: the scan stops there.
        long lost = inSegment - 9;
        assertTrue(
                damaged.out()
                        .contains("dropped: " + segment.getFileName() + ": record header checksum mismatch at"
                                + " offset " + header + "; " + lost + " page records after it"),
                damaged.out());
        assertTrue(
                damaged.out()
                        .contains(lost + " of " + pages + " pages not vouched for in " + disk + ": 0 fail"
                                + " their checksum, " + lost + " dropped after damage; the other " + (pages - lost)
                                + " pages match their checksum"),
                "every page is accounted for:\n" + damaged.out());
        // The library's warning about it reaches the user as one line, named like errors are.
        List<String> lines = damaged.err().lines().toList();
        assertFalse(lines.isEmpty(), "the recovery warning is shown");
        for (String line : lines) {
            assertTrue(line.startsWith("granary verify: warning: disk tier "), "one line per warning: " + line);
        }
        assertTrue(damaged.err().contains("ends in a record that is not valid"), damaged.err());
    }

    @Test
    void inspectReadsADirectoryInUseWithoutTouchingIt() throws IOException {
        Path disk = root.resolve("live");
        assertEquals(
                0,
                Cli.run(
                                "prestage",
                                origin(),
                                "--prefix",
                                "train/",
                                "--disk",
                                disk.toString(),
                                "--capacity",
                                "64M",
                                "--progress",
                                "none")
                        .exit());
        byte[] format = Files.readAllBytes(disk.resolve("FORMAT"));
        try (DiskTier running =
                DiskTier.builder().directory(disk).capacity(64L << 20).build()) {
            Cli.Result inspect = Cli.run("inspect", disk.toString());
            assertEquals(0, inspect.exit(), inspect.toString());
            assertTrue(
                    inspect.out()
                            .contains("in use     yes, by pid "
                                    + ProcessHandle.current().pid()),
                    inspect.out());
            assertTrue(inspect.out().contains("objects    " + OBJECTS + "\n"), inspect.out());
            assertTrue(inspect.out().contains("capacity   64.0 MiB, "), inspect.out());
        }
        assertEquals(
                new String(format, StandardCharsets.UTF_8),
                new String(Files.readAllBytes(disk.resolve("FORMAT")), StandardCharsets.UTF_8),
                "inspect wrote nothing");
        Cli.Result idle = Cli.run("inspect", disk.toString());
        assertTrue(idle.out().contains("in use     no\n"), idle.out());
    }

    @Test
    void clearRemovesADirectoryThatWasOpenedShared() {
        Path disk = root.resolve("node");
        assertEquals(
                0,
                Cli.run(
                                "prestage",
                                origin(),
                                "--prefix",
                                "train/",
                                "--disk",
                                disk.toString(),
                                "--capacity",
                                "64M",
                                "--progress",
                                "none",
                                "--shared")
                        .exit());
        assertTrue(Files.exists(disk.resolve("granary.shared")));
        Cli.Result r = Cli.run("clear", disk.toString());
        assertEquals(0, r.exit(), r.toString());
        assertFalse(Files.exists(disk), "granary.shared is Granary's too: the directory is gone");
    }

    @Test
    void clearingADirectoryThatIsNotThereSucceeds() {
        Cli.Result r = Cli.run("clear", root.resolve("gone").toString());
        assertEquals(0, r.exit(), r.toString());
        assertEquals("nothing to clear: " + root.resolve("gone") + " does not exist\n", r.out());
    }

    @Test
    void planPrintsMoneyAsPeopleWriteIt() {
        assertEquals("$0.0004", PlanCommand.money(0.0004));
        assertEquals("$0.00", PlanCommand.money(0));
        assertEquals("$0.005", PlanCommand.money(0.005));
        assertEquals("$12.35", PlanCommand.money(12.345));
        assertEquals("$3.00", PlanCommand.money(3));
        assertEquals("$0.000012", PlanCommand.money(0.0000123));
    }

    private static long records(Path segment) {
        try {
            long n = 0;
            while (recordHeaderOffset(segment, n) >= 0) {
                n++;
            }
            return n;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The offset of record header {@code n} (from 0), or -1 past the last: headers follow the 64-byte segment header.
     */
    private static long recordHeaderOffset(Path segment, long n) throws IOException {
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.READ)) {
            long at = 64;
            ByteBuffer b = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            for (long i = 0; ; i++) {
                b.clear();
                ch.read(b, at);
                if (b.getInt(0) != 0x52594E47) {
                    return -1;
                }
                if (i == n) {
                    return at;
                }
                at += b.getInt(4);
            }
        }
    }

    private static void flip(Path file, long offset) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, offset);
            b.put(0, (byte) ~b.get(0));
            b.position(0);
            ch.write(b, offset);
        }
    }
}
