// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import com.sun.management.OperatingSystemMXBean;
import dev.granary.tier.DiskTier;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * How long opening a {@link DiskTier} directory takes: {@code DiskTier.builder()...build()} maps every segment, scans
 * every record header and rebuilds the index ({@link DiskTier#recovery()}), which is what a restarted training job
 * waits for before its first read.
 *
 * <h2>Data</h2>
 * 100 000 pages of 4 KiB, then 1 000 pages of 1 MiB (a second directory), one page per object, 64 MiB segments,
 * realistic names ({@link DiskBenchData}): key {@code train/000123.jpg}, origin {@code file:///data/}, version
 * {@code 4096-1700000004551-1000123} (size-mtime-inode). Written, closed, {@code fsync}ed.
 *
 * <h2>Measured</h2>
 * One untimed reopen first (class loading, JIT), then 5 timed reopens with the page cache warm (each closed again):
 * median, min and max wall time of {@code build()} and of the process's CPU time during it (every thread, the
 * GC's included: the figure that holds on a loaded machine), pages per second at the median, the last
 * {@link DiskTier.Recovery} (its {@code took} is the scan alone, without locking and the format check), and the heap
 * the open tier holds (used heap after a GC, open minus closed: the index). Then one <b>cold</b> reopen: the tier
 * closed (segments unmapped), the segment files dropped from the page cache ({@code posix_fadvise DONTNEED},
 * verified with {@code mincore}: the resident fraction before and after is printed), then {@code build()} timed,
 * printed on a line of its own.
 *
 * <h2>Where the files go, run</h2>
 * As {@link DiskColdReadBenchmark}: {@code granary.bench.dir} (the Maven execution sets
 * {@code cache-benchmarks/target/disk-bench}; default {@code /var/tmp/granary-bench}; must not be tmpfs), deleted
 * afterwards unless {@code -Dgranary.bench.keep=true}. From the repository root (under a minute):
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@recovery
 * </pre>
 * Options in {@code -Ddisk.jvmArgs="..."}: {@code -Dgranary.bench.quick=true} (10 000 and 100 pages: a smoke run),
 * {@code -Dgranary.bench.recovery=4096x100000,1048576x1000} (page size x pages, the default),
 * {@code -Dgranary.bench.repeats=5}.
 */
public final class DiskRecoveryBenchmark {

    private DiskRecoveryBenchmark() {}

    /**
     * Builds each directory and times its reopening.
     *
     * @param args ignored; options are system properties (see the class Javadoc)
     * @throws IOException if the data cannot be written
     */
    public static void main(String[] args) throws IOException {
        boolean quick = Boolean.getBoolean("granary.bench.quick");
        String sets = System.getProperty(
                "granary.bench.recovery", quick ? "4096x10000,1048576x100" : "4096x100000,1048576x1000");
        int repeats = Integer.getInteger("granary.bench.repeats", 5);
        boolean keep = Boolean.getBoolean("granary.bench.keep");
        Path base = DiskBenchData.baseDirectory("/var/tmp/granary-bench");
        DiskBenchData.requireBlockDevice(base);
        System.out.printf(
                "recovery: directory %s on %s; %d warm reopens and 1 cold per data set%s%n",
                base, DiskBenchData.describeFileSystem(base), repeats, quick ? "; QUICK (smoke run)" : "");
        for (String set : sets.split(",")) {
            String[] parts = set.strip().split("x");
            int pageSize = Integer.parseInt(parts[0]);
            int count = Integer.parseInt(parts[1]);
            Path directory = base.resolve("recovery-" + pageSize + "x" + count);
            DiskBenchData.deleteTree(directory);
            long t0 = System.nanoTime();
            DiskBenchData data = DiskBenchData.create(directory, pageSize, count, false);
            List<Path> segments = data.segmentFiles();
            System.out.printf(
                    "%n== %d pages of %s in %d segments of 64 MiB: written in %.1f s (%s)%n",
                    count,
                    DiskColdReadBenchmark.size(pageSize),
                    segments.size(),
                    (System.nanoTime() - t0) / 1e9,
                    directory);
            try {
                measure(data, segments, repeats);
            } finally {
                if (!keep) {
                    data.delete();
                }
            }
        }
    }

    private static void measure(DiskBenchData data, List<Path> segments, int repeats) throws IOException {
        PageCache.readAll(segments);
        long first = System.nanoTime();
        data.open(true).close();
        System.out.printf("  first reopen (untimed warm-up): %.1f ms%n", (System.nanoTime() - first) / 1e6);

        long heapClosed = usedHeapAfterGc();
        long heapOpen = 0;
        double[] ms = new double[repeats];
        double[] cpu = new double[repeats];
        double[] own = new double[repeats];
        double[] gc = new double[repeats];
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        DiskTier.Recovery last = null;
        for (int i = 0; i < repeats; i++) {
            long g0 = gcMillis();
            long o0 = threads.getCurrentThreadCpuTime();
            long c0 = processCpuNanos();
            long t0 = System.nanoTime();
            DiskTier tier = data.open(true);
            ms[i] = (System.nanoTime() - t0) / 1e6;
            cpu[i] = (processCpuNanos() - c0) / 1e6;
            own[i] = (threads.getCurrentThreadCpuTime() - o0) / 1e6;
            gc[i] = gcMillis() - g0;
            last = tier.recovery();
            if (i == repeats - 1) {
                heapOpen = usedHeapAfterGc();
            }
            tier.close();
        }
        double[] sorted = ms.clone();
        Arrays.sort(sorted);
        double median = repeats % 2 == 1 ? sorted[repeats / 2] : (sorted[repeats / 2 - 1] + sorted[repeats / 2]) / 2;
        System.out.printf(
                Locale.ROOT,
                "  warm: median %.1f ms, min %.1f, max %.1f (%s); %.0f pages/s at the median%n",
                median,
                sorted[0],
                sorted[repeats - 1],
                format(ms),
                data.count / (median / 1e3));
        double[] cpuSorted = cpu.clone();
        Arrays.sort(cpuSorted);
        System.out.printf(
                Locale.ROOT,
                "  warm: CPU of the whole process during build() (every thread, GC included):"
                        + " median %.1f ms, min %.1f, max %.1f (%s) — on a loaded machine the wall time stretches,"
                        + " this does not%n",
                cpuSorted[repeats / 2],
                cpuSorted[0],
                cpuSorted[repeats - 1],
                format(cpu));
        System.out.printf(
                Locale.ROOT,
                "  warm: of which the opening thread's own CPU (scan and index): %s ms;" + " GC pauses (wall): %s ms%n",
                format(own),
                format(gc));
        System.out.printf("  warm: recovery() = %s%n", last);
        System.out.printf(
                Locale.ROOT,
                "  open tier's heap: %.1f MiB, %.0f bytes per page%n",
                (heapOpen - heapClosed) / 1048576.0,
                (double) (heapOpen - heapClosed) / data.count);

        PageCache.Residency before = PageCache.residency(segments);
        PageCache.drop(segments);
        PageCache.Residency after = PageCache.residency(segments);
        long t0 = System.nanoTime();
        DiskTier tier = data.open(true);
        double cold = (System.nanoTime() - t0) / 1e6;
        DiskTier.Recovery recovery = tier.recovery();
        PageCache.Residency opened = PageCache.residency(segments);
        tier.close();
        System.out.printf(
                Locale.ROOT,
                "  cold: %.1f ms, %.0f pages/s; recovery() = %s%n",
                cold,
                data.count / (cold / 1e3),
                recovery);
        System.out.printf(
                "  cold: segment files resident %s before the drop, %s after it (mincore), %s after the"
                        + " reopen%s%n",
                before,
                after,
                opened,
                after.fraction() > 0.01
                        ? " — WARNING: the drop did not" + " evict them, the cold number is not cold"
                        : "");
    }

    /** {@return milliseconds the collectors report having spent so far} */
    private static long gcMillis() {
        long sum = 0;
        for (var bean : ManagementFactory.getGarbageCollectorMXBeans()) {
            sum += Math.max(0, bean.getCollectionTime());
        }
        return sum;
    }

    /** CPU time of the whole process so far (every thread, the GC's included). */
    private static long processCpuNanos() {
        return ((OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private static long usedHeapAfterGc() {
        Runtime runtime = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        return runtime.totalMemory() - runtime.freeMemory();
    }

    private static String format(double[] ms) {
        StringBuilder b = new StringBuilder();
        for (double m : ms) {
            b.append(b.isEmpty() ? "" : ", ").append(String.format(Locale.ROOT, "%.1f", m));
        }
        return b.toString();
    }
}
