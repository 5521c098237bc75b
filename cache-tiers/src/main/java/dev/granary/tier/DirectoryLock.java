// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An exclusive lock on a disk tier's directory, held by one process (and one tier in it) at a time.
 *
 * <p>The lock is {@code flock(2)} on a descriptor of the directory itself (opened {@code O_RDONLY|O_DIRECTORY}), so
 * nothing a user can delete carries it: deleting {@code granary.lock} (which only tells who holds the directory)
 * does not let a second process in, and replacing the directory does not confuse the holder with a stranger. The OS
 * drops the lock when the holder exits or is killed, so a crash never leaves a stale lock. Within one process a set
 * of held directories refuses a second tier before the OS is asked, with a message that says so. Where {@code flock}
 * cannot be linked, the lock falls back to an {@code fcntl} lock on {@code granary.lock} ({@link FileChannel#tryLock}).
 *
 * <p>The holder line names the process without any network lookup: {@code pid <pid> on <host>, boot <boot id>, since
 * <instant>}, the host read from {@code /proc/sys/kernel/hostname} (or {@code /etc/hostname}); resolving the local
 * host name through DNS can hang for minutes on a misconfigured machine.
 *
 * <p>A tier opened in shared mode ({@link DiskTier.Builder#shared}) takes {@code LOCK_SH} instead: any number of
 * shared tiers, in any processes, hold the directory together, and an unshared tier is refused while one does (and
 * the other way round). Shared tiers coordinate through {@link SharedDirectory}, not through this lock.
 * Thread-safe: {@link #acquire} may race from many threads; {@link #close} is idempotent.
 */
final class DirectoryLock implements AutoCloseable {

    static final String FILE = "granary.lock";
    /** Directories tiers of this process hold, as real paths: -1 for an unshared tier, else how many shared ones. */
    private static final ConcurrentHashMap<Path, Integer> HELD = new ConcurrentHashMap<>();

    private final Path key;
    private final int directoryFd;
    private final FileChannel channel;
    private final FileLock fallback;
    private final boolean shared;
    private boolean closed;

    private DirectoryLock(Path key, int directoryFd, FileChannel channel, FileLock fallback, boolean shared) {
        this.key = key;
        this.shared = shared;
        this.directoryFd = directoryFd;
        this.channel = channel;
        this.fallback = fallback;
    }

    /**
     * Takes the lock and records this process as the holder.
     *
     * @throws IllegalStateException naming the holder if another process or tier holds it
     * @throws IOException           if the directory or the lock file cannot be opened
     */
    static DirectoryLock acquire(Path directory) throws IOException {
        return acquire(directory, false);
    }

    /**
     * Takes the lock, exclusive or shared, and (exclusive) records this process as the holder.
     *
     * @param shared whether to take it shared with other shared-mode tiers
     * @throws IllegalStateException naming the holder(s) if the directory is held in the other mode, or exclusively
     * @throws IOException           if the directory or the lock file cannot be opened
     */
    static DirectoryLock acquire(Path directory, boolean shared) throws IOException {
        return acquire(directory, shared, DiskDirectory.Access.PRIVATE);
    }

    /** As {@link #acquire(Path, boolean)}, making {@code granary.lock} accessible as the directory is. */
    static DirectoryLock acquire(Path directory, boolean shared, DiskDirectory.Access access) throws IOException {
        Path key = directory.toRealPath();
        Path file = directory.resolve(FILE);
        int[] was = {0};
        HELD.compute(key, (k, held) -> {
            was[0] = held == null ? 0 : held;
            if (held == null) {
                return shared ? 1 : -1;
            }
            return shared && held > 0 ? held + 1 : held;
        });
        if (was[0] != 0 && !(shared && was[0] > 0)) {
            String holder = "another DiskTier in this process ("
                    + (was[0] > 0 ? was[0] + " shared" : "unshared: " + holder(file, null)) + ")";
            throw new DirectoryInUseException(
                    directory,
                    holder,
                    "disk tier directory " + directory + " is in use by "
                            + holder
                            + " (expected: one unshared tier per directory, or only shared tiers; close the other"
                            + " first)");
        }
        int fd = -1;
        FileChannel channel = null;
        try {
            fd = NativeFiles.openDirectory(directory);
            boolean locked;
            FileLock fallback = null;
            channel = FileChannel.open(
                    file,
                    EnumSet.of(StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE),
                    DiskDirectory.FILE_PERMISSIONS);
            access.apply(file, false);
            if (fd >= 0) {
                locked = NativeFiles.flock(
                        fd, (shared ? NativeFiles.LOCK_SH : NativeFiles.LOCK_EX) | NativeFiles.LOCK_NB);
            } else if (shared) {
                throw new IllegalStateException("disk tier directory " + directory + ": a shared directory needs"
                        + " flock(2), which cannot be called here (expected: Linux; or open it unshared)");
            } else {
                fallback = channel.tryLock();
                locked = fallback != null;
            }
            if (!locked) {
                if (shared) {
                    String holder = holder(file, directory);
                    throw new DirectoryInUseException(
                            directory,
                            holder,
                            "disk tier directory " + directory + " is in"
                                    + " use by a process that holds it unshared: " + holder
                                    + " (expected: a directory that"
                                    + " every process opens with shared(true), or one no other process holds)");
                }
                List<Long> sharers = flockHolders(directory);
                String holder = sharers.size() > 1 ? "shared by pids " + sharers : holder(file, directory);
                throw new DirectoryInUseException(
                        directory,
                        holder,
                        "disk tier directory " + directory + " is in use"
                                + " by another process: " + holder
                                + " (expected: a directory no other process holds; give"
                                + " each process its own directory, or open it with shared(true) in every process)");
            }
            if (!shared) {
                String text = "pid " + ProcessHandle.current().pid() + " on " + hostName() + ", boot " + bootId()
                        + ", since " + Instant.now() + "\n";
                channel.truncate(0);
                channel.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), 0);
            } else if (channel.size() == 0) {
                String text = "shared; pids in /proc/locks (FLOCK on this directory's inode)\n";
                channel.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), 0);
            }
            return new DirectoryLock(key, fd, channel, fallback, shared);
        } catch (IOException | RuntimeException | Error e) {
            closeQuietly(channel);
            NativeFiles.close(fd); // drops the flock if it was taken
            forget(key, shared);
            throw e;
        }
    }

    private static void forget(Path key, boolean shared) {
        HELD.computeIfPresent(key, (k, held) -> shared && held > 1 ? held - 1 : null);
    }

    /**
     * {@return the holder line of a lock file}; if the file was deleted or emptied, the pid that holds the
     * directory's {@code flock}, from {@code /proc/locks}
     */
    private static String holder(Path file, Path lockedDirectory) {
        String text = "";
        String problem = file.getFileName() + " is empty";
        try {
            byte[] bytes = Files.readAllBytes(file);
            text = new String(bytes, 0, Math.min(bytes.length, 512), StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            problem = file.getFileName() + " is unreadable or was deleted: " + e;
        }
        if (!text.isEmpty()) {
            return text;
        }
        List<Long> pids = lockedDirectory == null ? List.of() : flockHolders(lockedDirectory);
        return !pids.isEmpty()
                ? "pid " + pids.getFirst() + " (from /proc/locks; " + problem + ")"
                : "holder unknown (" + problem + ")";
    }

    /** {@return the pids holding a flock on the directory's inode, from {@code /proc/locks}; empty if none found} */
    static List<Long> flockHolders(Path directory) {
        List<Long> pids = new ArrayList<>();
        try {
            long inode = ((Number) Files.getAttribute(directory, "unix:ino")).longValue();
            for (String line : Files.readAllLines(Path.of("/proc/locks"), StandardCharsets.US_ASCII)) {
                // "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1311 0 EOF": major:minor:inode of the locked file
                String[] f = line.trim().split("\\s+");
                if (f.length >= 6 && f[1].equals("FLOCK") && f[5].endsWith(":" + inode)) {
                    long pid = Long.parseLong(f[4]);
                    if (!pids.contains(pid)) {
                        pids.add(pid);
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc, or another format: the caller says the holder is unknown
        }
        return pids;
    }

    /** The host name as the kernel has it: no resolver, no network. */
    static String hostName() {
        return firstLine(Path.of("/proc/sys/kernel/hostname"), firstLine(Path.of("/etc/hostname"), "unknown host"));
    }

    /** Tells a holder from an earlier boot of the same host (whose pid may have been reused) from a live one. */
    static String bootId() {
        return firstLine(Path.of("/proc/sys/kernel/random/boot_id"), "unknown");
    }

    private static String firstLine(Path file, String otherwise) {
        try {
            String text = Files.readString(file, StandardCharsets.UTF_8).strip();
            int newline = text.indexOf('\n');
            text = newline < 0 ? text : text.substring(0, newline);
            return text.isEmpty() ? otherwise : text;
        } catch (IOException | RuntimeException e) {
            return otherwise;
        }
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException e) {
                // closing drops an fcntl lock in any case
            }
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (fallback != null) {
                fallback.release();
            }
        } catch (IOException e) {
            // closing the channel drops the lock in any case
        }
        closeQuietly(channel);
        NativeFiles.close(directoryFd);
        forget(key, shared);
    }
}
