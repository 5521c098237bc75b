// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Scratch mode ({@link DiskTier.Builder#deleteOnClose(boolean)}): removes a disk tier's files when it closes, and its
 * directory if the tier created it.
 *
 * <p>Only names Granary gives are deleted ({@code FORMAT}, {@code FORMAT.tmp}, {@code granary.lock},
 * {@code segments/seg-<16 hex digits>.dat} and their {@code .tmp}), never by following a symbolic link, so a file a
 * user put in the directory while the tier ran survives, and with it the directory (a warning names the file). A
 * directory that existed before the tier opened it (an empty mount point, a directory the operator made, or a
 * Granary directory from an earlier run) is emptied of Granary's files but kept: removing a mount point fails anyway,
 * and a directory the user made is theirs. Stateless; the caller holds the tier's directory lock while
 * {@link #deleteContents} runs, so no other tier can open the directory half-deleted.
 */
final class ScratchDirectory {

    private static final System.Logger LOG = System.getLogger(DiskTier.class.getName());
    private static final Set<String> TOP = Set.of(
            DiskDirectory.FORMAT_FILE, DiskDirectory.FORMAT_FILE + ".tmp", DirectoryLock.FILE, SharedDirectory.FILE);

    private ScratchDirectory() {}

    /**
     * Deletes Granary's files in the directory and its {@code segments/}.
     *
     * @return the names left behind because they are not Granary's (empty when all is gone)
     */
    static List<String> deleteContents(Path directory, String tierName) {
        List<String> foreign = new ArrayList<>();
        Path segments = directory.resolve(DiskDirectory.SEGMENTS);
        try {
            if (Files.isDirectory(segments, LinkOption.NOFOLLOW_LINKS)) {
                try (DirectoryStream<Path> entries = Files.newDirectoryStream(segments)) {
                    for (Path entry : entries) {
                        String name = entry.getFileName().toString();
                        String base = name.endsWith(".tmp") ? name.substring(0, name.length() - 4) : name;
                        if (DiskDirectory.parseId(base) >= 0 && !Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS)) {
                            Files.deleteIfExists(entry);
                        } else {
                            foreign.add(DiskDirectory.SEGMENTS + "/" + name);
                        }
                    }
                }
                if (foreign.isEmpty()) {
                    Files.deleteIfExists(segments);
                }
            }
            try (DirectoryStream<Path> entries = Files.newDirectoryStream(directory)) {
                for (Path entry : entries) {
                    String name = entry.getFileName().toString();
                    if (TOP.contains(name)) {
                        Files.deleteIfExists(entry);
                    } else if (!name.equals(DiskDirectory.SEGMENTS)) {
                        foreign.add(name);
                    }
                }
            }
        } catch (IOException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + tierName + "' (deleteOnClose): cannot delete the" + " files of " + directory + ": "
                            + e + "; delete the directory by hand");
            foreign.add("(unreadable: " + e.getMessage() + ")");
            return foreign;
        }
        if (!foreign.isEmpty()) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + tierName + "' (deleteOnClose): " + directory
                            + " holds files that are not Granary's, kept with the directory: " + foreign);
        }
        return foreign;
    }

    /** Removes the directory itself, if empty; a directory someone wrote into meanwhile is kept (and logged). */
    static void deleteDirectory(Path directory, String tierName) {
        try {
            Files.deleteIfExists(directory);
        } catch (DirectoryNotEmptyException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + tierName + "' (deleteOnClose): " + directory
                            + " is not empty after its files were deleted; kept");
        } catch (IOException e) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + tierName + "' (deleteOnClose): cannot delete " + directory + ": " + e);
        }
    }
}
