// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * Child JVM of {@link SharedDirectoryProcessTest}, run as another user: opens a shared disk tier (with a group, or
 * private with {@code -}) and writes 20 pages tagged {@code tag}, or reads them back and checks every byte. Only the
 * JDK and Granary's own classes: the user it runs as cannot read the local Maven repository. Exit status: 0 done,
 * 2 a page missing or wrong, 4 the directory could not be opened (the message is printed).
 * Arguments: directory, group or {@code -}, {@code write} or {@code read}, tag.
 */
public final class SharedGroupMain {

    private SharedGroupMain() {}

    public static void main(String[] args) {
        DiskTier.Builder builder = DiskTier.builder()
                .directory(Path.of(args[0]))
                .capacity(1 << 20)
                .segmentSize(64 << 10)
                .shared(true);
        if (!args[1].equals("-")) {
            builder.group(args[1]);
        }
        DiskTier tier;
        try {
            tier = builder.build();
        } catch (RuntimeException e) {
            System.out.println(e.getMessage());
            System.exit(4);
            return;
        }
        try (tier) {
            for (int i = 0; i < 20; i++) {
                PageKey key = new PageKey("test://group", args[3] + "-" + i, "v1", 0, 1000 + i);
                byte[] expected = new byte[key.length()];
                for (int b = 0; b < expected.length; b++) {
                    expected[b] = (byte) (b * 7 + i + args[3].hashCode());
                }
                if (args[2].equals("write")) {
                    Page page = new Page(key, MemorySegment.ofArray(expected)) {
                        @Override
                        protected void deallocate() {}
                    };
                    page.seal();
                    boolean stored = tier.put(page);
                    page.release();
                    if (!stored) {
                        System.out.println("not stored: " + key);
                        System.exit(2);
                    }
                } else {
                    Page page = tier.get(key);
                    if (page == null) {
                        System.out.println("missing: " + key);
                        System.exit(2);
                    }
                    ByteBuffer bytes = page.buffer();
                    for (int b = 0; b < expected.length; b++) {
                        if (bytes.get(b) != expected[b]) {
                            System.out.println("wrong byte " + b + " of " + key);
                            System.exit(2);
                        }
                    }
                    page.release();
                }
            }
        }
        System.out.println("ok " + args[2] + " " + args[3]);
    }
}
