// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.nio.file.Path;

/** Child JVM of the locking test: opens a disk tier directory; exit 0 if it could, 3 with the message if refused. */
public final class OpenDirectoryMain {

    private OpenDirectoryMain() {}

    public static void main(String[] args) {
        try (DiskTier tier = DiskTier.builder()
                .directory(Path.of(args[0]))
                .capacity(4L << 20)
                .segmentSize(128 << 10)
                .build()) {
            System.out.println("opened " + tier);
        } catch (IllegalStateException e) {
            System.out.println("refused: " + e.getMessage());
            System.exit(3);
        }
    }
}
