// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.EnumSet;

/**
 * An exclusive lock on a disk tier's directory, held by one process (and one tier in it) at a time: an OS file lock
 * ({@code fcntl}) on {@code granary.lock}, which the OS drops when the holder exits or is killed, so a crash never
 * leaves a stale lock. The file names its holder, so the refused process can say who holds it.
 */
final class DirectoryLock implements AutoCloseable {

    static final String FILE = "granary.lock";

    private final FileChannel channel;
    private final FileLock lock;

    private DirectoryLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Takes the lock.
     *
     * @throws IllegalStateException naming the holder if another process or tier holds it
     * @throws IOException           if the lock file cannot be opened
     */
    static DirectoryLock acquire(Path directory) throws IOException {
        Path file = directory.resolve(FILE);
        FileChannel channel = FileChannel.open(file, EnumSet.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE), DiskTier.FILE_PERMISSIONS);
        FileLock lock;
        try {
            lock = channel.tryLock();
        } catch (OverlappingFileLockException e) {
            String holder = holder(channel);
            channel.close();
            throw new IllegalStateException("disk tier directory " + directory + " is in use by another DiskTier in"
                    + " this process (" + holder + ") (expected: one open tier per directory; close the other"
                    + " first)");
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
        if (lock == null) {
            String holder = holder(channel);
            channel.close();
            throw new IllegalStateException("disk tier directory " + directory + " is in use by another process: "
                    + holder + " (expected: a directory no other process holds; give each process its own"
                    + " directory)");
        }
        try {
            long pid = ProcessHandle.current().pid();
            String text = "pid " + pid + " on " + hostName() + ", since " + Instant.now() + "\n";
            channel.truncate(0);
            channel.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), 0);
            return new DirectoryLock(channel, lock);
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    private static String holder(FileChannel channel) {
        try {
            ByteBuffer buffer = ByteBuffer.allocate(512);
            int n = channel.read(buffer, 0);
            String text = n <= 0 ? "" : new String(buffer.array(), 0, n, StandardCharsets.UTF_8).strip();
            return text.isEmpty() ? "holder unknown" : text;
        } catch (IOException e) {
            return "holder unknown (" + e.getMessage() + ")";
        }
    }

    private static String hostName() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "unknown host";
        }
    }

    @Override
    public void close() {
        try {
            lock.release();
            channel.close();
        } catch (IOException e) {
            // closing the channel drops the lock in any case
        }
    }
}
