// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.tier.DiskTier;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Chooses {@link DiskTier}'s default segment size: for each candidate size, fills a tier of 1 GiB with 2 GiB of pages
 * from two threads (so segments are created, evicted and deleted all along) and times it, then times reopening the
 * full directory. Rounds alternate the sizes so drift in the machine hits each alike.
 *
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@segments
 * </pre>
 *
 * The directory is {@code -Dgranary.bench.dir} (default {@code cache-benchmarks/target/disk-bench}, which must be on a
 * block device, not tmpfs).
 */
public final class SegmentSizeBenchmark {

    private static final long CAPACITY = 1L << 30;
    private static final long WRITTEN = 2L << 30;
    private static final long[] SIZES = {4L << 20, 16L << 20, 64L << 20, 256L << 20};
    private static final int[] PAGES = {128 << 10, 1 << 20};
    private static final int ROUNDS = 3;

    private SegmentSizeBenchmark() {}

    public static void main(String[] args) throws Exception {
        Path base = DiskBenchData.baseDirectory("/var/tmp/granary-bench").resolve("segments");
        Files.createDirectories(base);
        DiskBenchData.requireBlockDevice(base);
        System.out.println("directory: " + base + " (" + DiskBenchData.describeFileSystem(base) + ")");
        double[][][] fill = new double[PAGES.length][SIZES.length][ROUNDS];
        double[][][] reopen = new double[PAGES.length][SIZES.length][ROUNDS];
        for (int round = 0; round < ROUNDS; round++) {
            for (int p = 0; p < PAGES.length; p++) {
                for (int s = 0; s < SIZES.length; s++) {
                    Path dir = base.resolve("seg-" + (SIZES[s] >> 20) + "m");
                    DiskBenchData.deleteTree(dir);
                    double[] r = run(dir, SIZES[s], PAGES[p]);
                    fill[p][s][round] = r[0];
                    reopen[p][s][round] = r[1];
                    System.out.printf(
                            "round %d page %4d KiB segment %3d MiB: fill %7.1f MB/s, reopen %6.1f ms%n",
                            round + 1, PAGES[p] >> 10, SIZES[s] >> 20, r[0], r[1]);
                    DiskBenchData.deleteTree(dir);
                }
            }
        }
        System.out.println();
        System.out.println("page     segment  fill MB/s (median, min-max)   reopen ms of a full 1 GiB tier   segments"
                + " per 500 GiB");
        for (int p = 0; p < PAGES.length; p++) {
            for (int s = 0; s < SIZES.length; s++) {
                System.out.printf(
                        "%4d KiB  %3d MiB   %7.1f (%6.1f-%6.1f)          %6.1f (%5.1f-%5.1f)            %6d%n",
                        PAGES[p] >> 10,
                        SIZES[s] >> 20,
                        median(fill[p][s]),
                        min(fill[p][s]),
                        max(fill[p][s]),
                        median(reopen[p][s]),
                        min(reopen[p][s]),
                        max(reopen[p][s]),
                        (500L << 30) / SIZES[s]);
            }
        }
        String maxMapCount = Files.readString(Path.of("/proc/sys/vm/max_map_count"), StandardCharsets.US_ASCII);
        System.out.println("vm.max_map_count here: " + maxMapCount.strip() + " (every segment is one mapping)");
    }

    /** {@return fill MB/s and reopen milliseconds} */
    private static double[] run(Path dir, long segmentSize, int pageSize) throws Exception {
        byte[][] contents = new byte[8][pageSize];
        SplittableRandom random = new SplittableRandom(segmentSize ^ pageSize);
        for (byte[] c : contents) {
            random.nextBytes(c);
        }
        long pages = WRITTEN / pageSize;
        AtomicLong next = new AtomicLong();
        long start;
        long took;
        try (DiskTier tier = DiskTier.builder()
                .directory(dir)
                .capacity(CAPACITY)
                .segmentSize(segmentSize)
                .build()) {
            start = System.nanoTime();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                threads.add(Thread.ofPlatform().start(() -> {
                    for (long i = next.getAndIncrement(); i < pages; i = next.getAndIncrement()) {
                        byte[] bytes = contents[(int) (i & 7)];
                        PageKey key = new PageKey(DiskBenchData.ORIGIN, "train/" + i, "v1", 0, pageSize);
                        Page page = new Page(key, MemorySegment.ofArray(bytes)) {
                            @Override
                            protected void deallocate() {}
                        };
                        page.seal();
                        tier.put(page);
                    }
                }));
            }
            for (Thread thread : threads) {
                thread.join();
            }
            took = System.nanoTime() - start;
            if (tier.stats().usedBytes() > CAPACITY) {
                throw new AssertionError("over capacity: " + tier.stats());
            }
        }
        long reopenStart = System.nanoTime();
        try (DiskTier tier = DiskTier.builder()
                .directory(dir)
                .capacity(CAPACITY)
                .segmentSize(segmentSize)
                .build()) {
            long reopenNanos = System.nanoTime() - reopenStart;
            if (tier.recovery().pages() == 0) {
                throw new AssertionError("nothing recovered: " + tier.recovery());
            }
            return new double[] {WRITTEN / 1e6 / (took / 1e9), reopenNanos / 1e6};
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    private static double min(double[] v) {
        return Arrays.stream(v).min().orElseThrow();
    }

    private static double max(double[] v) {
        return Arrays.stream(v).max().orElseThrow();
    }
}
