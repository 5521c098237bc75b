// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** Mounts a real, tiny tmpfs for disk-full tests, where the test runs as root; a no-op answer elsewhere. */
final class TinyFilesystem {

    private TinyFilesystem() {}

    /** {@return whether a tmpfs of {@code bytes} is now mounted at {@code directory}} */
    static boolean mount(Path directory, long bytes) throws IOException, InterruptedException {
        if (!"root".equals(System.getProperty("user.name"))) {
            return false;
        }
        return run("mount", "-t", "tmpfs", "-o", "size=" + bytes + ",mode=0700", "tmpfs", directory.toString());
    }

    static void unmount(Path directory) throws IOException, InterruptedException {
        if (!run("umount", directory.toString())) {
            throw new IOException("cannot unmount " + directory);
        }
    }

    private static boolean run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        process.getInputStream().readAllBytes();
        return process.waitFor(30, TimeUnit.SECONDS) && process.exitValue() == 0;
    }
}
