// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * Child JVM of the crash test: fills a disk tier from a directory of objects, forever, with four threads reading
 * random ranges, and prints {@code filled <bytes> direct <pages written direct>} after each read so the parent can
 * kill it at a moment of its choosing.
 */
public final class DiskFillerMain {

    static final long SEGMENT = 64 << 10;
    static final long CAPACITY = 1L << 20;
    static final int PAGE = 8 << 10;

    private DiskFillerMain() {}

    public static void main(String[] args) throws Exception {
        Path data = Path.of(args[0]);
        Path dir = Path.of(args[1]);
        long seed = Long.parseLong(args[2]);
        List<String> keys;
        try (Stream<Path> files = Files.list(data)) {
            keys = files.map(f -> f.getFileName().toString()).sorted().toList();
        }
        // Every page of 4 KiB or more in aligned memory written with O_DIRECT (decision 0015), so kills land in
        // direct writes as well as buffered ones (the last page of an object is short, and buffered).
        DiskTier disk = DiskTier.builder()
                .directory(dir)
                .capacity(CAPACITY)
                .segmentSize(SEGMENT)
                .directWrites(true)
                .directWriteMin(4096)
                .build();
        // A small memory tier above it: fills land in its native, page-aligned memory (a cache without one fills
        // heap pages, which are written buffered), and it evicts all the time, so the disk tier keeps being read.
        TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder().capacity(128 << 10).build())
                .tier(disk)
                .pageSize(PAGE)
                .build();
        System.out.println("opened " + disk.recovery());
        System.out.flush();
        Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            long threadSeed = seed * 31 + t;
            threads[t] = Thread.ofPlatform().start(() -> {
                SplittableRandom random = new SplittableRandom(threadSeed);
                try {
                    while (true) {
                        String key = keys.get(random.nextInt(keys.size()));
                        long size = cache.stat(key).size();
                        long offset = random.nextLong(size);
                        long length = random.nextLong(size - offset) + 1;
                        try (Lease lease = cache.read(key, offset, length)) {
                            lease.bytes();
                        }
                        synchronized (System.out) {
                            System.out.println("filled " + disk.stats().usedBytes() + " direct " + disk.directWrites());
                            System.out.flush();
                        }
                    }
                } catch (Exception e) {
                    e.printStackTrace(System.out);
                    System.exit(5);
                }
            });
        }
        for (Thread thread : threads) {
            thread.join();
        }
    }
}
