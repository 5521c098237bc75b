// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import dev.granary.spi.Page;
import dev.granary.tier.DiskTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * What checking every disk-tier hit against its CRC32C costs ({@link DiskTier.Verify#EVERY_READ}) against checking a
 * page on its first read after open only ({@link DiskTier.Verify#ONCE}, the tier's behaviour before), per page size
 * (4 KiB, 128 KiB, 1 MiB), with the page in the page cache (resident) and paged out while the tier stays open (a
 * long-running trainer whose disk-tier pages the kernel reclaimed). Not JMH: the page cache is evicted between passes.
 *
 * <p>Per page size: 128 MiB of pages written into a tier ({@link DiskBenchData}, 64 MiB segments). Per round and mode
 * (the order of the modes alternates by round): the tier is opened with the mode, every page read once (the first-read
 * check both modes make, which also brings the pages in), then a <b>resident</b> pass and, after
 * {@link DiskResidency#pageOut} ({@code MADV_PAGEOUT} + {@code FADV_DONTNEED}, the resident fraction printed), a
 * <b>paged-out</b> pass. A pass reads K pages in a random order (the same order for both modes of a round; K = the
 * whole set at 1 MiB, 8 192 pages at 128 KiB and 4 KiB) on one thread: {@code DiskTier.get}, every byte read with
 * {@code ByteBuffer.getLong} as a decoder does, {@code release}. Printed: MB/s per pass, and per page size the median
 * ratio EVERY_READ / ONCE over the rounds (min-max), resident and paged out.
 *
 * <p>Options: {@code --rounds=N} (default 3). Files go under {@code granary.bench.dir} (a block-device file system).
 */
public final class DiskVerifyBenchmark {

    private static final long DATA = 128L << 20;

    private DiskVerifyBenchmark() {}

    public static void main(String[] args) throws IOException {
        int rounds = 3;
        for (String arg : args) {
            if (arg.startsWith("--rounds=")) {
                rounds = Integer.parseInt(arg.substring("--rounds=".length()));
            } else {
                throw new IllegalArgumentException("unknown option: " + arg + " (expected: --rounds=N)");
            }
        }
        Path base = DiskBenchData.baseDirectory("/var/tmp/granary-bench")
                .resolve("verify-" + ProcessHandle.current().pid());
        System.out.println("DiskVerifyBenchmark: " + DiskBenchData.describeFileSystem(base.getParent()) + ", "
                + Runtime.getRuntime().availableProcessors() + " CPUs, " + rounds + " rounds");
        List<String> summary = new ArrayList<>();
        try {
            for (int pageSize : new int[] {4096, 128 << 10, 1 << 20}) {
                int count = (int) (DATA / pageSize);
                DiskBenchData data = DiskBenchData.create(base.resolve("p" + pageSize), pageSize, count, false);
                int k = Math.min(count, 8192);
                double[] resident = new double[rounds];
                double[] pagedOut = new double[rounds];
                for (int round = 0; round < rounds; round++) {
                    int[] order = order(count, k, 31L * round + pageSize);
                    double[][] mbs = new double[2][];
                    DiskTier.Verify[] modes = round % 2 == 0
                            ? new DiskTier.Verify[] {DiskTier.Verify.ONCE, DiskTier.Verify.EVERY_READ}
                            : new DiskTier.Verify[] {DiskTier.Verify.EVERY_READ, DiskTier.Verify.ONCE};
                    for (DiskTier.Verify mode : modes) {
                        mbs[mode == DiskTier.Verify.ONCE ? 0 : 1] = run(data, mode, order, pageSize, round);
                    }
                    resident[round] = mbs[1][0] / mbs[0][0];
                    pagedOut[round] = mbs[1][1] / mbs[0][1];
                }
                String line = String.format(
                        Locale.ROOT,
                        "%7d B pages: EVERY_READ / ONCE resident %.2f (%.2f-%.2f), paged out %.2f (%.2f-%.2f)",
                        pageSize,
                        median(resident),
                        Arrays.stream(resident).min().orElseThrow(),
                        Arrays.stream(resident).max().orElseThrow(),
                        median(pagedOut),
                        Arrays.stream(pagedOut).min().orElseThrow(),
                        Arrays.stream(pagedOut).max().orElseThrow());
                System.out.println(line);
                summary.add(line);
                DiskBenchData.deleteTree(base.resolve("p" + pageSize));
            }
        } finally {
            DiskBenchData.deleteTree(base);
        }
        System.out.println("== summary");
        summary.forEach(System.out::println);
    }

    /** One mode's resident and paged-out MB/s over {@code order}. */
    private static double[] run(DiskBenchData data, DiskTier.Verify mode, int[] order, int pageSize, int round)
            throws IOException {
        try (DiskTier tier = data.open(true, mode)) {
            long sink = 0;
            for (int i = 0; i < data.keys.length; i++) {
                sink += read(tier, data, i);
            }
            long start = System.nanoTime();
            for (int i : order) {
                sink += read(tier, data, i);
            }
            double resident = mbs(order.length, pageSize, System.nanoTime() - start);
            String out = DiskResidency.pageOut(data.tierDirectory);
            start = System.nanoTime();
            for (int i : order) {
                sink += read(tier, data, i);
            }
            double pagedOut = mbs(order.length, pageSize, System.nanoTime() - start);
            System.out.printf(
                    Locale.ROOT,
                    "round %d %-10s %7d B: resident %8.1f MB/s, paged out %8.1f MB/s (%s) [%d]%n",
                    round,
                    mode,
                    pageSize,
                    resident,
                    pagedOut,
                    out,
                    sink & 1);
            return new double[] {resident, pagedOut};
        }
    }

    /** Leases page {@code i}, reads every byte with {@code getLong}, releases it; returns the sum. */
    private static long read(DiskTier tier, DiskBenchData data, int i) {
        Page page = tier.get(data.keys[i]);
        if (page == null) {
            throw new IllegalStateException("page " + i + " missing: " + tier.stats());
        }
        try {
            ByteBuffer b = page.buffer();
            long sum = 0;
            int n = b.limit() & -8;
            for (int at = 0; at < n; at += 8) {
                sum += b.getLong(at);
            }
            return sum;
        } finally {
            page.release();
        }
    }

    private static int[] order(int count, int k, long seed) {
        int[] all = new int[count];
        for (int i = 0; i < count; i++) {
            all[i] = i;
        }
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = count - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        return Arrays.copyOf(all, k);
    }

    private static double mbs(int pages, int pageSize, long nanos) {
        return (double) pages * pageSize / 1e6 / (nanos / 1e9);
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
