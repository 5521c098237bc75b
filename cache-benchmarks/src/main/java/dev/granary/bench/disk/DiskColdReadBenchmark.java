// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import dev.granary.TierStats;
import dev.granary.spi.Page;
import dev.granary.tier.DiskTier;
import dev.granary.tier.internal.TierInternals;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.stream.DoubleStream;

/**
 * Cold disk-tier reads (page cache dropped before every pass) against the device's ceiling, O_DIRECT reads of the same
 * bytes at the same offsets. Not JMH: the page cache has to be dropped between passes, and a pass reads each page
 * once.
 *
 * <h2>Data</h2>
 * Per page size (4 KiB, 128 KiB, 1 MiB), 256 MiB of random bytes, N = 256 MiB / page size pages, written as in
 * {@link DiskTierReadBenchmark} ({@link DiskBenchData}): into a {@link DiskTier} (64 MiB segments) and page after page
 * into {@code raw.dat}; every file {@code fsync}ed, so the page cache holds only clean pages.
 *
 * <h2>A pass</h2>
 * K pages chosen at random without repeats (K = 2000 at 4 KiB, 1000 at 128 KiB, 200 at 1 MiB: about 8, 128 and 200
 * MiB), read by QD platform threads (QD = 1 and 8, the queue depth), each its contiguous share of the K, each page
 * consumed by a bulk copy of every byte into the thread's scratch array ({@link DiskTierReadBenchmark#consume}):
 * <ul>
 *   <li>{@code granary}: {@code DiskTier.get(key)} → consume {@link Page#buffer()} → {@code release()}. Faults the
 *       page in through the tier's mapping. <b>The tier is closed before the drop and reopened after it</b>:
 *       {@code POSIX_FADV_DONTNEED} does not evict pages that a process has mapped, and the tier keeps its segments
 *       mapped. The reopen (recovery: a scan of every record header) is timed separately and not part of the pass;
 *       the CRC32C check that a reopened tier makes on a page's first read <em>is</em> part of the pass, as it is of
 *       every cold read after a restart (it reads the page through the mapping; the consumer's copy then hits memory).
 *       The tier advises {@code MADV_RANDOM} unless {@code -Dgranary.bench.randomAccess=false}.</li>
 *   <li>{@code odirect} (ceiling): {@code pread}s of the same offsets of {@code raw.dat} opened with
 *       {@code ExtendedOpenOption.DIRECT} (no page cache), one per page, into a 4 KiB-aligned direct buffer of the
 *       thread's own, then the same consumer.</li>
 * </ul>
 * Before each pass every file's page cache is dropped ({@link PageCache#drop}: {@code posix_fadvise DONTNEED} through
 * FFM) and the drop is verified with {@code mincore(2)}: the line of every pass shows the fraction of the data set's
 * pages that were resident after the drop ({@code resident}), and, for {@code granary}, after the reopen and how
 * many of the pass's pages were in the page cache when it started ({@code all+some/K}, whole pages + partly).
 *
 * <p><b>Resident and paged out, tier open.</b> After its cold pass the tier, still open, reads the same pages twice
 * more: once as they are (resident: in the page cache and mapped), once after they were evicted from the page cache
 * while the tier keeps them mapped — {@code madvise(MADV_PAGEOUT)} over this process's mappings of the segment files
 * (found in {@code /proc/self/maps}), then {@code POSIX_FADV_DONTNEED} — verified with {@code mincore} (printed:
 * the segments' resident fraction and the pass's pages still cached). That is the state of a long-running trainer
 * whose disk-tier pages the kernel reclaimed: no reopen, no first-read CRC check, the cold-page probe only. The table
 * gives both beside the cold figure, and paged-out / O_DIRECT.
 *
 * <p>The reopen itself warms pages: the recovery scan reads the record headers through the mapping before the tier
 * advises {@code MADV_RANDOM}, so the kernel reads around the first fault, up to the device's {@code read_ahead_kb}
 * per segment (8 MiB on some VMs: 12.5% of a 64 MiB segment), which puts about a tenth of the payloads in the cache.
 * By default the files are dropped once more after the reopen, so the pass reads cold pages only (the header pages
 * the tier has mapped stay); {@code -Dgranary.bench.dropAfterReopen=false} measures a restart as it is, with those
 * pages warm. Passes
 * alternate granary, odirect, for 3 rounds per (page size, QD), with a new random choice of pages per round (the same
 * for both subjects of the round). Printed: MB/s (10^6 bytes) of each pass, the ratio granary / odirect per round, and
 * per (page size, QD) the medians.
 *
 * <h2>Where the files go</h2>
 * System property {@code granary.bench.dir}: it must be on a file system on a block device (ext4, xfs...), not tmpfs
 * (checked: O_DIRECT and dropping the page cache mean nothing in memory). The Maven execution {@code cold} sets it to
 * {@code cache-benchmarks/target/disk-bench} (the repository's file system; override with
 * {@code -Dgranary.bench.dir=/nvme/bench} on the Maven command line); without the property the default is
 * {@code /var/tmp/granary-bench}. One page size at a time, about 600 MiB, deleted after it (keep with
 * {@code -Dgranary.bench.keep=true}).
 *
 * <h2>Run</h2>
 * From the repository root (about 2 minutes, most of it writing the data):
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@cold
 * </pre>
 * Options, as JVM flags in {@code -Ddisk.jvmArgs="..."}: {@code -Dgranary.bench.quick=true} (64 MiB per page size,
 * K / 4: a smoke run, numbers meaningless), {@code -Dgranary.bench.pageSizes=4096,1048576},
 * {@code -Dgranary.bench.qd=1,8}, {@code -Dgranary.bench.rounds=3}, {@code -Dgranary.bench.randomAccess=false},
 * {@code -Dgranary.bench.dropAfterReopen=false},
 * {@code -Dgranary.bench.keep=true}. Needs root or the files' owner (mincore on a file the caller cannot write reports
 * nothing on recent kernels). The machine should be quiet: other I/O moves the disk numbers.
 */
public final class DiskColdReadBenchmark {

    private static final long TOTAL_BYTES = 256L << 20;
    private static final boolean DROP_AFTER_REOPEN =
            Boolean.parseBoolean(System.getProperty("granary.bench.dropAfterReopen", "true"));

    private DiskColdReadBenchmark() {}

    /** One pass's outcome. */
    private record Pass(double mbPerSecond, String detail) {}

    /**
     * One (page size, QD) round: the tier's passes over the same pages (cold after a reopen, then resident, then
     * paged out with the tier open) and the ceiling's.
     */
    private record Round(int pageSize, int qd, int round, Pass granary, Pass resident, Pass pagedOut, Pass odirect) {
        double ratio() {
            return granary.mbPerSecond / odirect.mbPerSecond;
        }

        double pagedOutRatio() {
            return pagedOut.mbPerSecond / odirect.mbPerSecond;
        }
    }

    /**
     * Runs every (page size, QD) and prints the table.
     *
     * @param args ignored; options are system properties (see the class Javadoc)
     * @throws Exception if the data cannot be written or a pass fails
     */
    public static void main(String[] args) throws Exception {
        boolean quick = Boolean.getBoolean("granary.bench.quick");
        int[] pageSizes = ints(System.getProperty("granary.bench.pageSizes", "4096,131072,1048576"));
        int[] qds = ints(System.getProperty("granary.bench.qd", "1,8"));
        int rounds = Integer.getInteger("granary.bench.rounds", 3);
        boolean randomAccess = Boolean.parseBoolean(System.getProperty("granary.bench.randomAccess", "true"));
        boolean keep = Boolean.getBoolean("granary.bench.keep");
        long total = quick ? TOTAL_BYTES / 4 : TOTAL_BYTES;

        Path base = DiskBenchData.baseDirectory("/var/tmp/granary-bench");
        DiskBenchData.requireBlockDevice(base);
        System.out.printf(
                "cold reads: directory %s on %s; %s MiB per page size; QD %s; %d rounds; tier"
                        + " randomAccess=%s; dropAfterReopen=%s%s%n",
                base,
                DiskBenchData.describeFileSystem(base),
                total >> 20,
                Arrays.toString(qds),
                rounds,
                randomAccess,
                DROP_AFTER_REOPEN,
                quick ? "; QUICK (smoke run, numbers meaningless)" : "");

        List<Round> results = new ArrayList<>();
        for (int pageSize : pageSizes) {
            int count = Math.toIntExact(total / pageSize);
            int k = switch (pageSize) {
                case 4096 -> 2000;
                case 131072 -> 1000;
                case 1048576 -> 200;
                default -> Math.toIntExact(Math.max(1, (200L << 20) / pageSize));
            };
            k = Math.min(count, quick ? Math.max(1, k / 4) : k);
            Path directory = base.resolve("cold-" + pageSize);
            DiskBenchData.deleteTree(directory);
            long t0 = System.nanoTime();
            DiskBenchData data = DiskBenchData.create(directory, pageSize, count, true);
            System.out.printf(
                    "%n== page %s: %d pages written in %.1f s (%s); K = %d pages (%.0f MiB) per pass%n",
                    size(pageSize),
                    count,
                    (System.nanoTime() - t0) / 1e9,
                    directory,
                    k,
                    (double) k * pageSize / (1 << 20));
            try {
                verifyDrop(data);
                for (int qd : qds) {
                    for (int round = 1; round <= rounds; round++) {
                        int[] pages = choose(count, k, 31L * pageSize + 7L * qd + round);
                        Pass[] g = granaryPass(data, pages, qd, randomAccess);
                        Pass o = odirectPass(data, pages, qd);
                        Round r = new Round(pageSize, qd, round, g[0], g[1], g[2], o);
                        results.add(r);
                        System.out.printf(
                                "  QD %d round %d: granary %8.1f MB/s [%s]  odirect %8.1f MB/s [%s]"
                                        + "  granary/odirect %.2f%n",
                                qd, round, g[0].mbPerSecond, g[0].detail, o.mbPerSecond, o.detail, r.ratio());
                        System.out.printf(
                                "  QD %d round %d: same pages, tier open: resident %8.1f MB/s [%s];"
                                        + " paged out %8.1f MB/s [%s]%n",
                                qd, round, g[1].mbPerSecond, g[1].detail, g[2].mbPerSecond, g[2].detail);
                    }
                }
            } finally {
                if (!keep) {
                    data.delete();
                }
            }
        }
        printTable(results);
    }

    /** Shows, once per data set, that a drop evicts the files: resident fraction and meminfo before and after. */
    private static void verifyDrop(DiskBenchData data) throws IOException {
        List<Path> files = data.allFiles();
        PageCache.readAll(files);
        PageCache.Residency before = PageCache.residency(files);
        long cachedBefore = PageCache.cachedKiB();
        PageCache.drop(files);
        PageCache.Residency after = PageCache.residency(files);
        long cachedAfter = PageCache.cachedKiB();
        System.out.printf(
                "  drop check: resident %s -> %s of %d pages (mincore); /proc/meminfo Cached %d -> %d MiB%n",
                before, after, after.total(), cachedBefore >> 10, cachedAfter >> 10);
        if (after.fraction() > 0.01) {
            System.out.println("  WARNING: posix_fadvise(DONTNEED) left " + after + " of the data set resident: cold"
                    + " numbers are not cold");
        }
    }

    /**
     * {@return three passes over the same pages: cold after a reopen; then resident (the cold pass left them in the
     * page cache and mapped); then paged out while the tier stays open ({@code MADV_PAGEOUT} through its mappings,
     * {@code FADV_DONTNEED} for the rest, verified with {@code mincore}), the state of a long-running process whose
     * pages the kernel reclaimed}
     */
    private static Pass[] granaryPass(DiskBenchData data, int[] pages, int qd, boolean randomAccess) throws Exception {
        List<Path> files = data.allFiles();
        PageCache.drop(files);
        PageCache.Residency dropped = PageCache.residency(files);
        long t0 = System.nanoTime();
        DiskTier tier = data.open(randomAccess);
        long reopen = System.nanoTime() - t0;
        try {
            if (DROP_AFTER_REOPEN) {
                PageCache.drop(files); // what the scan read around the headers; pages the tier has mapped stay
            }
            PageCache.Residency reopened = PageCache.residency(files);
            String preloaded = preloaded(tier, data, pages);
            byte[][] scratch = new byte[qd][data.pageSize];
            double seconds = tierPass(tier, data, pages, qd, scratch);
            Pass cold = new Pass(
                    mbPerSecond(pages.length, data.pageSize, seconds),
                    String.format(
                            Locale.ROOT,
                            "resident %s, after reopen%s %s, pass pages cached %s; reopen %.0f ms",
                            dropped,
                            DROP_AFTER_REOPEN ? "+drop" : "",
                            reopened,
                            preloaded,
                            reopen / 1e6));
            String before = preloaded(tier, data, pages);
            seconds = tierPass(tier, data, pages, qd, scratch);
            Pass resident = new Pass(mbPerSecond(pages.length, data.pageSize, seconds), "pass pages cached " + before);
            PageCache.PageOut out = PageCache.pageOut(data.tierDirectory, ".dat");
            String after = preloaded(tier, data, pages);
            PageCache.Residency left = PageCache.residency(data.segmentFiles());
            seconds = tierPass(tier, data, pages, qd, scratch);
            Pass pagedOut = new Pass(
                    mbPerSecond(pages.length, data.pageSize, seconds),
                    String.format(
                            Locale.ROOT,
                            "MADV_PAGEOUT over %d mappings + FADV_DONTNEED: segments resident %s, pass pages cached %s",
                            out.mappings(),
                            left,
                            after));
            return new Pass[] {cold, resident, pagedOut};
        } finally {
            tier.close();
        }
    }

    /** One pass of the open tier over {@code pages}; {@return its wall time in seconds} */
    private static double tierPass(DiskTier tier, DiskBenchData data, int[] pages, int qd, byte[][] scratch)
            throws Exception {
        TierStats before = tier.stats();
        double seconds = run(pages, qd, (thread, from, to) -> {
            long sink = 0;
            byte[] s = scratch[thread];
            for (int j = from; j < to; j++) {
                Page page = tier.get(data.keys[pages[j]]);
                if (page == null) {
                    throw new IllegalStateException("page " + pages[j] + " missing: " + tier.stats());
                }
                try {
                    sink += DiskTierReadBenchmark.consume(page.buffer(), s);
                } finally {
                    page.release();
                }
            }
            return sink;
        });
        TierStats after = tier.stats();
        if (after.hits() - before.hits() != pages.length || after.corruptions() != before.corruptions()) {
            throw new IllegalStateException("pass made " + (after.hits() - before.hits()) + " hits of " + pages.length
                    + ", " + (after.corruptions() - before.corruptions()) + " corruptions");
        }
        return seconds;
    }

    /**
     * {@return how many of the pass's pages the reopen brought into the page cache (its scan faults in the record
     * headers with the kernel's read-around), "all+some of K"}
     */
    private static String preloaded(DiskTier tier, DiskBenchData data, int[] pages) throws IOException {
        Map<Path, byte[]> vectors = new HashMap<>();
        int all = 0;
        int some = 0;
        for (int p : pages) {
            TierInternals.PageLocation where = TierInternals.locate(tier, data.keys[p]);
            byte[] vector = vectors.get(where.file());
            if (vector == null) {
                vector = PageCache.residentVector(where.file());
                vectors.put(where.file(), vector);
            }
            switch (PageCache.residency(vector, where.payloadOffset(), where.length())) {
                case "all" -> all++;
                case "some" -> some++;
                default -> {}
            }
        }
        return all + "+" + some + "/" + pages.length;
    }

    private static Pass odirectPass(DiskBenchData data, int[] pages, int qd) throws Exception {
        List<Path> files = data.allFiles();
        PageCache.drop(files);
        PageCache.Residency dropped = PageCache.residency(files);
        int pageSize = data.pageSize;
        ByteBuffer[] buffers = new ByteBuffer[qd];
        byte[][] scratch = new byte[qd][pageSize];
        for (int t = 0; t < qd; t++) {
            buffers[t] = ByteBuffer.allocateDirect(pageSize + 4096)
                    .alignedSlice(4096)
                    .limit(pageSize);
        }
        try (FileChannel channel = FileChannel.open(data.raw, StandardOpenOption.READ, directOption())) {
            double seconds = run(pages, qd, (thread, from, to) -> {
                long sink = 0;
                ByteBuffer b = buffers[thread];
                byte[] s = scratch[thread];
                for (int j = from; j < to; j++) {
                    long position = (long) pages[j] * pageSize;
                    b.clear().limit(pageSize);
                    while (b.hasRemaining()) {
                        if (channel.read(b, position + b.position()) < 0) {
                            throw new IOException("end of " + data.raw + " at " + (position + b.position()));
                        }
                    }
                    sink += DiskTierReadBenchmark.consume(b.flip(), s);
                }
                return sink;
            });
            return new Pass(mbPerSecond(pages.length, pageSize, seconds), "resident " + dropped);
        }
    }

    /** A thread's share of a pass: {@code pages[from, to)}. */
    @FunctionalInterface
    private interface Share {
        long read(int thread, int from, int to) throws IOException;
    }

    /** Runs a pass on {@code qd} platform threads (started before the clock) and returns its wall time in seconds. */
    private static double run(int[] pages, int qd, Share share) throws Exception {
        ExecutorService pool = new ThreadPoolExecutor(qd, qd, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>());
        ((ThreadPoolExecutor) pool).prestartAllCoreThreads();
        try {
            List<Callable<Long>> tasks = new ArrayList<>();
            for (int t = 0; t < qd; t++) {
                int thread = t;
                int from = (int) ((long) pages.length * t / qd);
                int to = (int) ((long) pages.length * (t + 1) / qd);
                tasks.add(() -> share.read(thread, from, to));
            }
            long t0 = System.nanoTime();
            List<Future<Long>> done = pool.invokeAll(tasks);
            long elapsed = System.nanoTime() - t0;
            for (Future<Long> f : done) {
                try {
                    f.get();
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof Exception cause ? cause : e;
                }
            }
            return elapsed / 1e9;
        } finally {
            pool.shutdownNow();
        }
    }

    /** {@code k} distinct page indexes of {@code [0, count)} in random order. */
    private static int[] choose(int count, int k, long seed) {
        int[] all = new int[count];
        for (int i = 0; i < count; i++) {
            all[i] = i;
        }
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < k; i++) {
            int j = i + random.nextInt(count - i);
            int swap = all[i];
            all[i] = all[j];
            all[j] = swap;
        }
        return Arrays.copyOf(all, k);
    }

    private static void printTable(List<Round> results) {
        System.out.printf(
                "%n%-8s %3s %6s %14s %14s %16s %14s %14s %18s%n",
                "page",
                "QD",
                "round",
                "granary MB/s",
                "odirect MB/s",
                "granary/odirect",
                "resident MB/s",
                "paged-out MB/s",
                "paged-out/odirect");
        int i = 0;
        while (i < results.size()) {
            int j = i;
            while (j < results.size()
                    && results.get(j).pageSize == results.get(i).pageSize
                    && results.get(j).qd == results.get(i).qd) {
                j++;
            }
            List<Round> group = results.subList(i, j);
            for (Round r : group) {
                System.out.printf(
                        Locale.ROOT,
                        "%-8s %3d %6d %14.1f %14.1f %16.2f %14.1f %14.1f %18.2f%n",
                        size(r.pageSize),
                        r.qd,
                        r.round,
                        r.granary.mbPerSecond,
                        r.odirect.mbPerSecond,
                        r.ratio(),
                        r.resident.mbPerSecond,
                        r.pagedOut.mbPerSecond,
                        r.pagedOutRatio());
            }
            System.out.printf(
                    Locale.ROOT,
                    "%-8s %3d %6s %14.1f %14.1f %16.2f %14.1f %14.1f %18.2f%n",
                    size(group.getFirst().pageSize),
                    group.getFirst().qd,
                    "median",
                    median(group.stream().mapToDouble(r -> r.granary.mbPerSecond)),
                    median(group.stream().mapToDouble(r -> r.odirect.mbPerSecond)),
                    median(group.stream().mapToDouble(Round::ratio)),
                    median(group.stream().mapToDouble(r -> r.resident.mbPerSecond)),
                    median(group.stream().mapToDouble(r -> r.pagedOut.mbPerSecond)),
                    median(group.stream().mapToDouble(Round::pagedOutRatio)));
            i = j;
        }
    }

    private static double median(DoubleStream values) {
        double[] v = values.sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static double mbPerSecond(int pages, int pageSize, double seconds) {
        return (double) pages * pageSize / 1e6 / seconds;
    }

    static String size(int bytes) {
        return bytes >= 1 << 20 && bytes % (1 << 20) == 0
                ? (bytes >> 20) + " MiB"
                : bytes >= 1 << 10 && bytes % (1 << 10) == 0 ? (bytes >> 10) + " KiB" : bytes + " B";
    }

    /**
     * {@return the JDK's {@code com.sun.nio.file.ExtendedOpenOption.DIRECT}} Looked up by name: naming it in source
     * makes javac warn of an internal proprietary API, a warning no {@code @SuppressWarnings} silences, and the build
     * compiles with {@code -Werror}.
     */
    private static OpenOption directOption() {
        try {
            return (OpenOption) Class.forName("com.sun.nio.file.ExtendedOpenOption")
                    .getField("DIRECT")
                    .get(null);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("this JDK has no com.sun.nio.file.ExtendedOpenOption.DIRECT: " + e, e);
        }
    }

    private static int[] ints(String list) {
        return Arrays.stream(list.split(","))
                .map(String::strip)
                .mapToInt(Integer::parseInt)
                .toArray();
    }
}
