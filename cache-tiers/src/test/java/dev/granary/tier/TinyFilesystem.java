// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Mounts a real, tiny file system for disk-full tests, where the test runs as root: a tmpfs, or an ext4 on a loop
 * device (for what tmpfs does not do like a disk: direct I/O, delayed block allocation); a no-op answer elsewhere.
 */
final class TinyFilesystem {

    private TinyFilesystem() {}

    /** {@return whether a tmpfs of {@code bytes} is now mounted at {@code directory}} */
    static boolean mount(Path directory, long bytes) throws IOException, InterruptedException {
        if (!"root".equals(System.getProperty("user.name"))) {
            return false;
        }
        return run("mount", "-t", "tmpfs", "-o", "size=" + bytes + ",mode=0700", "tmpfs", directory.toString());
    }

    /**
     * {@return whether an ext4 of {@code bytes}, made in the file {@code image}, is now mounted at {@code directory}}
     * False where the test is not root or {@code mkfs.ext4} or loop devices are missing.
     */
    static boolean mountExt4(Path directory, Path image, long bytes) throws IOException, InterruptedException {
        if (!"root".equals(System.getProperty("user.name"))) {
            return false;
        }
        try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(bytes);
        }
        return (run("mkfs.ext4", "-q", "-F", image.toString())
                        || run("/usr/sbin/mkfs.ext4", "-q", "-F", image.toString()))
                && run("mount", "-o", "loop", image.toString(), directory.toString());
    }

    /** Unmounts what {@link #mountExt4} mounted and deletes its image. */
    static void unmountExt4(Path directory, Path image) throws IOException, InterruptedException {
        unmount(directory);
        Files.deleteIfExists(image);
    }

    static void unmount(Path directory) throws IOException, InterruptedException {
        if (!run("umount", directory.toString())) {
            throw new IOException("cannot unmount " + directory);
        }
    }

    private static boolean run(String... command) throws IOException, InterruptedException {
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException notInstalled) {
            return false;
        }
        process.getInputStream().readAllBytes();
        return process.waitFor(30, TimeUnit.SECONDS) && process.exitValue() == 0;
    }
}
