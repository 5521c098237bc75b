// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.nio.file.Path;

/**
 * A disk tier's directory is held by another tier: in this process, or by another process (its lock is
 * {@code flock(2)} on the directory, see {@link DiskTier}). A job that may share a node with another job catches it to
 * fall back to a scratch directory of its own:
 *
 * {@snippet :
 * DiskTier disk;
 * try {
 *     disk = DiskTier.builder().directory(Path.of("/nvme/granary")).capacity(100L << 30).build();
 * } catch (DirectoryInUseException e) {
 *     log.warn("{}; using a scratch directory for this job", e.getMessage());
 *     disk = DiskTier.builder().directory(Files.createTempDirectory(Path.of("/nvme"), "granary-"))
 *             .capacity(100L << 30).deleteOnClose(true).build();
 * }
 * }
 *
 * <p>It is an {@link IllegalStateException}, as before it had a type of its own: code that caught that still does.
 */
public final class DirectoryInUseException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    private final transient Path directory;
    private final String holder;

    DirectoryInUseException(Path directory, String holder, String message) {
        super(message);
        this.directory = directory;
        this.holder = holder;
    }

    /** {@return the directory that is in use} */
    public Path directory() {
        return directory;
    }

    /**
     * {@return who holds it, as its lock file or {@code /proc/locks} tells: {@code pid 4242 on node-7, boot …, since
     * …},
     * or a description when that cannot be told}
     */
    public String holder() {
        return holder;
    }
}
