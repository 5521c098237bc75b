// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipalNotFoundException;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

/**
 * The layout of a disk tier's directory: creating or checking it, its {@code FORMAT} file, and the names of segment
 * files (see {@code docs/disk-format.md}). Opening a directory is {@link #prepare}, then locking it
 * ({@link DirectoryLock}), then {@link #checkFormat}. Stateless and thread-safe; the caller holds the lock around
 * anything that changes the directory.
 */
final class DiskDirectory {

    /** The file naming the directory's format ({@code docs/disk-format.md}, "Directory layout"). */
    static final String FORMAT_FILE = "FORMAT";
    /** The subdirectory holding the segment files. */
    static final String SEGMENTS = "segments";
    /** Files Granary makes in a directory private to its owner: {@code 0600} (a group's: see {@link Access}). */
    static final FileAttribute<Set<PosixFilePermission>> FILE_PERMISSIONS =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));
    /** A directory private to its owner: {@code 0700}. */
    static final Set<PosixFilePermission> DIRECTORY_PERMISSIONS = PosixFilePermissions.fromString("rwx------");

    private static final String FORMAT_TITLE = "granary-disk-tier";
    /** The only names Granary puts in a tier's directory (FORMAT.tmp: a FORMAT being written when a process died). */
    private static final java.util.Set<String> OWN =
            java.util.Set.of(FORMAT_FILE, FORMAT_FILE + ".tmp", DirectoryLock.FILE, SEGMENTS, SharedDirectory.FILE);

    private static final System.Logger LOG = System.getLogger(DiskTier.class.getName());

    private DiskDirectory() {}

    /**
     * Who may use a directory: its owner only (the default: directory {@code 0700}, files {@code 0600}), or every
     * member of a group ({@code group != null}: the directory is given to the group, set-group-ID so files made in it
     * inherit the group, mode {@code 2770}; files {@code 0660}) — for processes of different users sharing one
     * directory ({@link DiskTier.Builder#group}).
     */
    record Access(String group) {
        static final Access PRIVATE = new Access(null);

        int directoryMode() {
            return group == null ? 0700 : 02770;
        }

        int fileMode() {
            return group == null ? 0600 : 0660;
        }

        /** Gives a file or directory Granary made this access: its mode (the umask does not apply) and group. */
        void apply(Path path, boolean directory) throws IOException {
            if (group == null) {
                return;
            }
            GroupPrincipal principal =
                    path.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByGroupName(group);
            PosixFileAttributeView view =
                    Files.getFileAttributeView(path, PosixFileAttributeView.class, LinkOption.NOFOLLOW_LINKS);
            // Changed only where it differs: a member of the group who does not own the file may not change it.
            if (!view.readAttributes().group().equals(principal)) {
                view.setGroup(principal);
            }
            int mode = directory ? directoryMode() : fileMode();
            if (((Integer) Files.getAttribute(path, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 07777) != mode) {
                NativeFiles.chmod(path, mode);
            }
        }
    }

    /**
     * Creates the directory if missing, else checks it is a directory that only Granary wrote in; and gives it the
     * access asked ({@code 0700}, or {@code 2770} for a group).
     *
     * @throws IllegalArgumentException if the path is not a directory, or the directory holds other files, or the
     *                                  group does not exist
     */
    static void prepare(Path directory) throws IOException {
        prepare(directory, Access.PRIVATE);
    }

    static void prepare(Path directory, Access access) throws IOException {
        if (access.group() != null) {
            try {
                directory.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByGroupName(access.group());
            } catch (UserPrincipalNotFoundException e) {
                throw new IllegalArgumentException("disk tier group: '" + access.group() + "' (expected: a group that"
                        + " exists on this host, such as one listed by getent group)");
            }
        }
        if (!Files.exists(directory, LinkOption.NOFOLLOW_LINKS)) {
            Files.createDirectories(directory, PosixFilePermissions.asFileAttribute(DIRECTORY_PERMISSIONS));
            access.apply(directory, true);
            return;
        }
        if (!Files.isDirectory(directory)) {
            throw new IllegalArgumentException("disk tier directory " + directory + " is not a directory (expected:"
                    + " a directory, or a path where one can be created)");
        }
        boolean ours = Files.exists(directory.resolve(FORMAT_FILE)) || Files.exists(directory.resolve(SEGMENTS));
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory)) {
            for (Path entry : entries) {
                String name = entry.getFileName().toString();
                // Granary's own names are fine even before FORMAT exists: another process may be opening the same
                // directory right now (shared mode: its lock and shared files come before FORMAT and segments/).
                if (OWN.contains(name)) {
                    continue;
                }
                if (!ours) {
                    throw new IllegalArgumentException("disk tier directory " + directory + " holds other files"
                            + " (such as " + name + ") and is not a Granary disk tier (expected: an empty directory"
                            + " or one a DiskTier wrote; Granary does not share a directory with other data)");
                }
                throw new IllegalArgumentException("disk tier directory " + directory + " holds a file that is not"
                        + " Granary's: " + name + " (expected: only "
                        + String.join(", ", OWN.stream().sorted().toList())
                        + "; Granary does not share a directory with other data: move the file away)");
            }
        }
        if (access.group() != null) {
            access.apply(directory, true);
        } else if (!Files.getPosixFilePermissions(directory).equals(DIRECTORY_PERMISSIONS)) {
            Files.setPosixFilePermissions(directory, DIRECTORY_PERMISSIONS);
        }
    }

    /**
     * Reads or writes the FORMAT file and makes sure {@code segments/} exists. A directory of format 1 is upgraded in
     * place: its segments are read as they are (their records did not change), so the cache stays warm; only FORMAT
     * is rewritten. A newer format is refused. The caller holds the directory exclusively (the directory lock, or in
     * shared mode the shared file's lock).
     *
     * @param tierName for the log line
     * @throws IllegalStateException if the directory holds a newer format or an unreadable FORMAT file
     */
    static void checkFormat(Path directory, String tierName) throws IOException {
        checkFormat(directory, tierName, Access.PRIVATE, 0);
    }

    /**
     * As {@link #checkFormat(Path, String)}, with the directory's access, and recording {@code capacity} (if
     * positive) in FORMAT's third line, {@code capacity <bytes>}: the capacity of the tier that opened the directory
     * last, which {@code granary inspect} shows beside what the directory holds. Readers of FORMAT read its first two
     * lines only, so older Granary versions read it as before.
     */
    static void checkFormat(Path directory, String tierName, Access access, long capacity) throws IOException {
        Path formatFile = directory.resolve(FORMAT_FILE);
        Path segmentsDirectory = directory.resolve(SEGMENTS);
        if (Files.exists(formatFile)) {
            int found = parseFormat(directory, formatFile);
            if (found > SegmentFormat.FORMAT) {
                throw new IllegalStateException("disk tier directory " + directory + " was written by a newer Granary"
                        + " (format " + found + "; this one reads format " + SegmentFormat.OLDEST_READABLE + " to "
                        + SegmentFormat.FORMAT + ") (expected: format " + SegmentFormat.FORMAT + "; use that Granary"
                        + " version, another directory, or delete this one to start over)");
            }
            if (found == SegmentFormat.FORMAT) {
                makeSegmentsDirectory(segmentsDirectory, access);
                if (capacity > 0 && recordedCapacity(formatFile) != capacity) {
                    writeFormat(directory, access, capacity);
                }
                return;
            }
            if (found >= SegmentFormat.OLDEST_READABLE) {
                LOG.log(
                        System.Logger.Level.INFO,
                        "disk tier '" + tierName + "': " + directory + " holds format "
                                + found + "; upgrading it to format " + SegmentFormat.FORMAT
                                + " in place (its segments are"
                                + " kept and read as they are)");
            } else {
                LOG.log(
                        System.Logger.Level.INFO,
                        "disk tier '" + tierName + "': " + directory + " holds format " + found
                                + "; discarding its segments and starting over in format " + SegmentFormat.FORMAT);
                deleteSegments(segmentsDirectory);
            }
        }
        makeSegmentsDirectory(segmentsDirectory, access);
        writeFormat(directory, access, capacity);
    }

    /** Writes FORMAT whole (a temporary file renamed over it): title, format, and the capacity if positive. */
    private static void writeFormat(Path directory, Access access, long capacity) throws IOException {
        Path temporary = directory.resolve(FORMAT_FILE + ".tmp");
        Files.deleteIfExists(temporary);
        String text = FORMAT_TITLE + "\nformat " + SegmentFormat.FORMAT + "\n"
                + (capacity > 0 ? CAPACITY_LINE + capacity + "\n" : "");
        Files.write(Files.createFile(temporary, FILE_PERMISSIONS), text.getBytes(StandardCharsets.UTF_8));
        access.apply(temporary, false);
        Files.move(
                temporary,
                directory.resolve(FORMAT_FILE),
                StandardCopyOption.ATOMIC_MOVE,
                StandardCopyOption.REPLACE_EXISTING);
    }

    private static final String CAPACITY_LINE = "capacity ";

    /**
     * {@return the capacity FORMAT records (of the tier that opened the directory last), or {@code -1} if it records
     * none (written before Granary recorded it) or cannot be read}
     */
    static long recordedCapacity(Path formatFile) {
        try {
            List<String> lines = Files.readAllLines(formatFile, StandardCharsets.UTF_8);
            if (lines.size() >= 3 && lines.get(2).startsWith(CAPACITY_LINE)) {
                return Long.parseLong(
                        lines.get(2).substring(CAPACITY_LINE.length()).strip());
            }
        } catch (IOException | NumberFormatException e) {
            // unknown
        }
        return -1;
    }

    private static void makeSegmentsDirectory(Path segmentsDirectory, Access access) throws IOException {
        if (!Files.isDirectory(segmentsDirectory)) {
            Files.createDirectories(segmentsDirectory, PosixFilePermissions.asFileAttribute(DIRECTORY_PERMISSIONS));
            access.apply(segmentsDirectory, true);
        } else if (access.group() != null) {
            access.apply(segmentsDirectory, true);
        }
    }

    private static int parseFormat(Path directory, Path formatFile) throws IOException {
        List<String> lines = Files.readAllLines(formatFile, StandardCharsets.UTF_8);
        if (lines.size() >= 2
                && lines.get(0).equals(FORMAT_TITLE)
                && lines.get(1).startsWith("format ")) {
            try {
                return Integer.parseInt(
                        lines.get(1).substring("format ".length()).strip());
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

    /** {@return the refusal of a file in {@code segments/} that Granary did not name, for the caller to throw} */
    static IllegalArgumentException segmentEntryRefused(Path segmentsDirectory, String fileName) {
        return new IllegalArgumentException("disk tier directory " + segmentsDirectory + " holds a file that is not"
                + " Granary's: " + fileName + " (expected: only segment files seg-<16 hex digits>.dat and .dat.tmp;"
                + " Granary does not share a directory with other data: move the file away)");
    }

    /** {@return whether a file name is that of a segment file being created ({@code seg-<16 hex digits>.dat.tmp})} */
    static boolean isTemporarySegment(String fileName) {
        return fileName.endsWith(".tmp") && parseId(fileName.substring(0, fileName.length() - 4)) >= 0;
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
