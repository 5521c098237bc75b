// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HexFormat;
import java.util.List;

/**
 * The layout of a disk tier's directory: creating or checking it, its {@code FORMAT} file, and the names of segment
 * files (see {@code docs/disk-format.md}). Opening a directory is {@link #prepare}, then locking it
 * ({@link DirectoryLock}), then {@link #checkFormat}. Stateless and thread-safe; the caller holds the lock around
 * anything that changes the directory.
 */
final class DiskDirectory {

    private static final String FORMAT_TITLE = "granary-disk-tier";
    /** The only names Granary puts in a tier's directory (FORMAT.tmp: a FORMAT being written when a process died). */
    private static final java.util.Set<String> OWN = java.util.Set.of(DiskTier.FORMAT_FILE,
            DiskTier.FORMAT_FILE + ".tmp", DirectoryLock.FILE, DiskTier.SEGMENTS);
    private static final System.Logger LOG = System.getLogger(DiskTier.class.getName());

    private DiskDirectory() {}

    /**
     * Creates the directory ({@code 0700}) if missing, else checks it is a directory that only Granary wrote in, and
     * tightens it to {@code 0700}.
     *
     * @throws IllegalArgumentException if the path is not a directory, or the directory holds other files
     */
    static void prepare(Path directory) throws IOException {
        if (!Files.exists(directory, LinkOption.NOFOLLOW_LINKS)) {
            Files.createDirectories(directory, PosixFilePermissions.asFileAttribute(DiskTier.DIRECTORY_PERMISSIONS));
            return;
        }
        if (!Files.isDirectory(directory)) {
            throw new IllegalArgumentException("disk tier directory " + directory + " is not a directory (expected:"
                    + " a directory, or a path where one can be created)");
        }
        boolean ours = Files.exists(directory.resolve(DiskTier.FORMAT_FILE))
                || Files.exists(directory.resolve(DiskTier.SEGMENTS));
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory)) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                if (ours ? OWN.contains(name) : name.equals(DirectoryLock.FILE)) {
                    continue;
                }
                if (!ours) {
                    throw new IllegalArgumentException("disk tier directory " + directory + " holds other files"
                            + " (such as " + name + ") and is not a Granary disk tier (expected: an empty directory"
                            + " or one a DiskTier wrote; Granary does not share a directory with other data)");
                }
                throw new IllegalArgumentException("disk tier directory " + directory + " holds a file that is not"
                        + " Granary's: " + name + " (expected: only " + String.join(", ", OWN.stream().sorted()
                        .toList()) + "; Granary does not share a directory with other data: move the file away)");
            }
        }
        if (!Files.getPosixFilePermissions(directory).equals(DiskTier.DIRECTORY_PERMISSIONS)) {
            Files.setPosixFilePermissions(directory, DiskTier.DIRECTORY_PERMISSIONS);
        }
    }

    /**
     * Reads or writes the FORMAT file and makes sure {@code segments/} exists; an older format's segments are
     * discarded, a newer one is refused.
     *
     * @param tierName for the log line
     * @throws IllegalStateException if the directory holds a newer format or an unreadable FORMAT file
     */
    static void checkFormat(Path directory, String tierName) throws IOException {
        Path formatFile = directory.resolve(DiskTier.FORMAT_FILE);
        Path segmentsDirectory = directory.resolve(DiskTier.SEGMENTS);
        if (Files.exists(formatFile)) {
            int found = parseFormat(directory, formatFile);
            if (found > SegmentFormat.FORMAT) {
                throw new IllegalStateException("disk tier directory " + directory + " was written by a newer Granary"
                        + " (format " + found + "; this one reads format " + SegmentFormat.FORMAT + ") (expected:"
                        + " format " + SegmentFormat.FORMAT + "; use that Granary version, another directory, or"
                        + " delete this one to start over)");
            }
            if (found == SegmentFormat.FORMAT) {
                Files.createDirectories(segmentsDirectory,
                        PosixFilePermissions.asFileAttribute(DiskTier.DIRECTORY_PERMISSIONS));
                return;
            }
            LOG.log(System.Logger.Level.INFO, "disk tier '" + tierName + "': " + directory + " holds format " + found
                    + "; discarding its segments and starting over in format " + SegmentFormat.FORMAT);
            deleteSegments(segmentsDirectory);
        }
        Files.createDirectories(segmentsDirectory,
                PosixFilePermissions.asFileAttribute(DiskTier.DIRECTORY_PERMISSIONS));
        Path temporary = directory.resolve(DiskTier.FORMAT_FILE + ".tmp");
        Files.deleteIfExists(temporary);
        Files.write(Files.createFile(temporary, DiskTier.FILE_PERMISSIONS),
                (FORMAT_TITLE + "\nformat " + SegmentFormat.FORMAT + "\n").getBytes(StandardCharsets.UTF_8));
        Files.move(temporary, formatFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static int parseFormat(Path directory, Path formatFile) throws IOException {
        List<String> lines = Files.readAllLines(formatFile, StandardCharsets.UTF_8);
        if (lines.size() >= 2 && lines.get(0).equals(FORMAT_TITLE) && lines.get(1).startsWith("format ")) {
            try {
                return Integer.parseInt(lines.get(1).substring("format ".length()).strip());
            } catch (NumberFormatException e) {
                // reported below
            }
        }
        throw new IllegalStateException("disk tier directory " + directory + ": " + formatFile.getFileName()
                + " is unreadable: " + lines + " (expected: '" + FORMAT_TITLE + "' and 'format <n>'; delete the"
                + " directory to start over)");
    }

    private static void deleteSegments(Path segmentsDirectory) throws IOException {
        if (!Files.isDirectory(segmentsDirectory)) {
            return;
        }
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(segmentsDirectory)) {
            for (Path entry : entries) {
                Files.delete(entry);
            }
        }
    }

    /** {@return the file name of segment {@code id}}: its number in hex, never derived from a key */
    static String fileName(long id) {
        return "seg-" + HexFormat.of().toHexDigits(id) + ".dat";
    }

    /**
     * Refuses a file in {@code segments/} that Granary did not name.
     *
     * @throws IllegalArgumentException naming the file
     */
    static void refuseSegmentEntry(Path segmentsDirectory, String fileName) {
        throw new IllegalArgumentException("disk tier directory " + segmentsDirectory + " holds a file that is not"
                + " Granary's: " + fileName + " (expected: only segment files seg-<16 hex digits>.dat and .dat.tmp;"
                + " Granary does not share a directory with other data: move the file away)");
    }

    /** {@return the segment number a file name carries, or -1 if it is not a segment file's name} */
    static long parseId(String fileName) {
        if (fileName.length() != 24 || !fileName.startsWith("seg-") || !fileName.endsWith(".dat")) {
            return -1;
        }
        try {
            return HexFormat.fromHexDigitsToLong(fileName, 4, 20);
        } catch (IllegalArgumentException e) {
            return -1;
        }
    }
}
