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
import java.util.EnumSet;
import java.util.Set;
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
 * <p>Only exclusive locking exists today; a shared mode (several processes reading one directory) would take
 * {@code LOCK_SH} on the same descriptor in {@link #acquire} and keep this class the one place that knows how.
 * Thread-safe: {@link #acquire} may race from many threads; {@link #close} is idempotent.
 */
final class DirectoryLock implements AutoCloseable {

    static final String FILE = "granary.lock";
    /** Directories a tier of this process holds, as real paths. */
    private static final Set<Path> HELD = ConcurrentHashMap.newKeySet();

    private final Path key;
    private final int directoryFd;
    private final FileChannel channel;
    private final FileLock fallback;
    private boolean closed;

    private DirectoryLock(Path key, int directoryFd, FileChannel channel, FileLock fallback) {
        this.key = key;
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
        Path key = directory.toRealPath();
        Path file = directory.resolve(FILE);
        if (!HELD.add(key)) {
            throw new IllegalStateException("disk tier directory " + directory + " is in use by another DiskTier in"
                    + " this process (" + holder(file, null) + ") (expected: one open tier per directory; close the other"
                    + " first)");
        }
        int fd = -1;
        FileChannel channel = null;
        try {
            fd = NativeFiles.openDirectory(directory);
            boolean locked;
            FileLock fallback = null;
            channel = FileChannel.open(file, EnumSet.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE), DiskTier.FILE_PERMISSIONS);
            if (fd >= 0) {
                locked = NativeFiles.flock(fd, NativeFiles.LOCK_EX | NativeFiles.LOCK_NB);
            } else {
                fallback = channel.tryLock();
                locked = fallback != null;
            }
            if (!locked) {
                throw new IllegalStateException("disk tier directory " + directory + " is in use by another process: "
                        + holder(file, fd >= 0 ? directory : null) + " (expected: a directory no other process holds; give each process its own"
                        + " directory)");
            }
            String text = "pid " + ProcessHandle.current().pid() + " on " + hostName() + ", boot " + bootId()
                    + ", since " + Instant.now() + "\n";
            channel.truncate(0);
            channel.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), 0);
            return new DirectoryLock(key, fd, channel, fallback);
        } catch (IOException | RuntimeException | Error e) {
            closeQuietly(channel);
            NativeFiles.close(fd); // drops the flock if it was taken
            HELD.remove(key);
            throw e;
        }
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
        long pid = lockedDirectory == null ? -1 : flockHolder(lockedDirectory);
        return pid > 0 ? "pid " + pid + " (from /proc/locks; " + problem + ")" : "holder unknown (" + problem + ")";
    }

    /** {@return the pid holding a flock on the directory's inode, from {@code /proc/locks}; -1 if not found} */
    private static long flockHolder(Path directory) {
        try {
            long inode = ((Number) Files.getAttribute(directory, "unix:ino")).longValue();
            for (String line : Files.readAllLines(Path.of("/proc/locks"), StandardCharsets.US_ASCII)) {
                // "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1311 0 EOF": major:minor:inode of the locked file
                String[] f = line.trim().split("\\s+");
                if (f.length >= 6 && f[1].equals("FLOCK") && f[5].endsWith(":" + inode)) {
                    return Long.parseLong(f[4]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // no /proc, or another format: the caller says the holder is unknown
        }
        return -1;
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
        HELD.remove(key);
    }
}
