// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The directory lock: held by the directory itself, and naming its holder without asking the network. */
class DirectoryLockTest {

    @TempDir
    Path root;

    private DiskTier.Builder disk(Path dir) {
        return DiskTier.builder().directory(dir).capacity(4L << 20).segmentSize(128 << 10);
    }

    @Test
    void deletingTheLockFileDoesNotLetASecondProcessIn() throws Exception {
        Path dir = root.resolve("disk");
        Process holder = ChildJvm.start(HoldDirectoryMain.class, dir.toString());
        try {
            BufferedReader out =
                    new BufferedReader(new InputStreamReader(holder.getInputStream(), StandardCharsets.UTF_8));
            String line;
            while ((line = out.readLine()) != null && !line.startsWith("held by pid ")) {
                // skip JVM warnings
            }
            assertTrue(line != null, "the holder must open the directory");
            Files.delete(dir.resolve(DirectoryLock.FILE));

            IllegalStateException e =
                    assertThrows(IllegalStateException.class, () -> disk(dir).build());
            assertTrue(e.getMessage().contains("in use by another process: pid " + holder.pid()), e.getMessage());

            ChildJvm.Result second = ChildJvm.run(OpenDirectoryMain.class, dir.toString());
            assertEquals(3, second.exitCode(), "another process is refused too: " + second.output());
            assertTrue(second.output().contains("in use by another process: pid " + holder.pid()), second.output());
        } finally {
            holder.getOutputStream().close(); // the holder closes its tier and ends
            assertTrue(holder.waitFor(30, TimeUnit.SECONDS));
        }
        disk(dir).build().close(); // free again once the holder is gone
    }

    @Test
    void theHolderLineNamesPidAndKernelHostNameWithoutDns() throws Exception {
        Path dir = root.resolve("disk");
        try (DiskTier tier = disk(dir).build()) {
            String text = Files.readString(dir.resolve(DirectoryLock.FILE)).strip();
            String host = Files.readString(Path.of("/proc/sys/kernel/hostname")).strip();
            String boot =
                    Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip();
            assertTrue(
                    text.startsWith(
                            "pid " + ProcessHandle.current().pid() + " on " + host + ", boot " + boot + ", since "),
                    text);
        }
    }

    @Test
    void openingADirectoryLoadsNoNameResolution() throws Exception {
        // A child that logs every class it loads: if opening (and being refused) touched InetAddress, the resolver
        // that once hung an open for five minutes would be on the path.
        ChildJvm.Result child = ChildJvm.run(
                List.of("-Xlog:class+load=info"),
                OpenDirectoryMain.class,
                root.resolve("disk").toString());
        assertEquals(0, child.exitCode(), child.output());
        assertTrue(child.output().contains("dev.granary.tier.DirectoryLock "), "the log lists loaded classes");
        assertFalse(child.output().contains("java.net.InetAddress "), "InetAddress must not be loaded");
    }
}
