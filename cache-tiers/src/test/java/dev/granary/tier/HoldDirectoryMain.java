// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.nio.file.Path;

/** Child JVM of the locking tests: opens a disk tier directory, prints {@code held}, holds it until stdin closes. */
public final class HoldDirectoryMain {

    private HoldDirectoryMain() {}

    public static void main(String[] args) throws Exception {
        try (DiskTier tier = DiskTier.builder()
                .directory(Path.of(args[0]))
                .capacity(4L << 20)
                .segmentSize(128 << 10)
                .build()) {
            System.out.println("held by pid " + ProcessHandle.current().pid());
            System.out.flush();
            while (System.in.read() >= 0) {
                // hold until the parent closes our stdin
            }
        }
    }
}
