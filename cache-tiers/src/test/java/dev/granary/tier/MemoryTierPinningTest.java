// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.spi.PageKey;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code pinned(true)} locks the tier's memory with mlock, and when the OS refuses, the tier reports it and keeps
 * working. The refusal is real, not simulated: as root (where mlock always succeeds) the test runs a child JVM as
 * user {@code nobody}, which is bound by RLIMIT_MEMLOCK (8 MiB here) and asks it to lock 32 MiB.
 */
@Timeout(120)
class MemoryTierPinningTest {

    @TempDir
    Path temp;

    private static boolean isRoot() throws IOException {
        return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid") == 0;
    }

    @Test
    void pinnedMemoryIsLockedOrTheRefusalIsReported() throws Exception {
        MemoryTier tier = MemoryTier.builder().capacity(1 << 20).pinned(true).build();
        try {
            var key = new PageKey("t://", "k", "v", 0, 1000);
            var page = tier.allocate(key); // reserves (and locks) the first slab
            page.seal();
            tier.put(page);
            page.release();
            MemoryTier.Pinning pinning = tier.pinning();
            assertTrue(pinning.requested());
            assertEquals(1 << 20, pinning.reservedBytes());
            if (isRoot()) {
                assertTrue(pinning.complete(), "as root mlock succeeds: " + pinning);
                assertEquals(pinning.reservedBytes(), pinning.lockedBytes());
            } else {
                assertTrue(pinning.complete() || pinning.failure().isPresent(), "locked, or why not: " + pinning);
            }
        } finally {
            tier.close();
        }
    }

    @Test
    void unpinnedTiersLockNothing() {
        MemoryTier tier = MemoryTier.builder().capacity(1 << 20).build();
        try {
            var page = tier.allocate(new PageKey("t://", "k", "v", 0, 10));
            page.release();
            assertEquals(0, tier.pinning().lockedBytes());
            assertTrue(tier.pinning().failure().isEmpty());
        } finally {
            tier.close();
        }
    }

    @Test
    void whenTheOsRefusesTheTierReportsItAndStillWorks() throws Exception {
        List<String> command = new ArrayList<>();
        if (isRoot()) {
            // Drop to nobody: no CAP_IPC_LOCK, so RLIMIT_MEMLOCK applies.
            command.addAll(List.of("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"));
        }
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-cp");
        command.add(readableClassPath());
        command.add(PinningProbe.class.getName());
        command.add(String.valueOf(32L << 20));
        Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output;
        try {
            assertTrue(child.waitFor(90, TimeUnit.SECONDS), "probe JVM did not finish");
            output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } finally {
            child.destroyForcibly();
        }
        assertEquals(0, child.exitValue(), "the tier must work unpinned: " + output);
        assertTrue(output.contains("requested=true locked=0 reserved=33554432"), output);
        assertTrue(output.contains("failure=mlock of 33554432 bytes refused: "), output);
        assertTrue(output.contains("failures=1 bytes=ok"), output);
        assertTrue(
                output.contains("WARNING") && output.contains("the tier works unpinned"),
                "the refusal is logged once: " + output);
    }

    /** Copies the test class path somewhere user nobody can read it (the Maven repository may be under /root). */
    private String readableClassPath() throws IOException {
        Path dir = Files.createDirectories(temp.resolve("cp"));
        List<String> entries = new ArrayList<>();
        int n = 0;
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path source = Path.of(entry);
            if (!Files.exists(source)) {
                continue;
            }
            Path target = dir.resolve(n++ + "-" + source.getFileName());
            if (Files.isDirectory(source)) {
                try (Stream<Path> files = Files.walk(source)) {
                    for (Path p : (Iterable<Path>) files::iterator) {
                        Path t = target.resolve(source.relativize(p).toString());
                        if (Files.isDirectory(p)) {
                            Files.createDirectories(t);
                        } else {
                            Files.copy(p, t, StandardCopyOption.REPLACE_EXISTING);
                        }
                    }
                }
            } else {
                Files.copy(source, target);
            }
            entries.add(target.toString());
        }
        try (Stream<Path> all = Files.walk(temp)) {
            for (Path p : (Iterable<Path>) all::iterator) {
                Files.setPosixFilePermissions(
                        p, PosixFilePermissions.fromString(Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
            }
        }
        return String.join(File.pathSeparator, entries);
    }
}
