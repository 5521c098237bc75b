// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.tier.DiskTier;
import dev.granary.tier.internal.TierInternals;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.ToDoubleFunction;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * How fast the disk tier writes pages, beside its ceiling in the same run: {@code DiskTier.put} of N pages that sit
 * in off-heap memory (as pages filled in the memory tier do) into a fresh tier, against plain {@code FileChannel.write}
 * appends of the same pages, from the same memory, into files of the tier's segment size.
 *
 * <h2>Contenders (every round runs all four, in a rotating order)</h2>
 * <ul>
 *   <li>{@code tier}: a fresh {@link DiskTier} of 64 MiB segments (sparse but for their header area, decision
 *       0014), every page put, the tier closed.</li>
 *   <li>{@code append}: the same pages appended to new files of 64 MiB each (a new file when one is full), not
 *       preallocated: ext4's delayed allocation, the cheapest way to put bytes in a file.</li>
 *   <li>{@code append-falloc}: the same, each file {@code posix_fallocate}d to 64 MiB first, as the tier's are: writes
 *       into unwritten extents, whose conversion at writeback goes through the journal.</li>
 *   <li>{@code append-writeback}: as {@code append}, handing what it wrote to writeback with
 *       {@code sync_file_range} as the tier does by default (decision 0016): every {@code --writeback} bytes (8 MiB
 *       when the tier's is off), one interval behind, and a file's rest when the next begins; the ceiling for a
 *       writer that starts its writeback early.</li>
 * </ul>
 *
 * <h2>What is timed, and the page cache</h2>
 * Each contender's files are new; before it starts, the previous contender's files were {@code fsync}ed and deleted,
 * so it starts with none of this benchmark's dirty pages in the page cache (other processes' are not controlled: the
 * kernel's {@code Dirty:} figure is printed per round). Two rates per contender: <b>buffered</b>, from the first write
 * to the last file closed (bytes copied into the page cache: what a reader waiting on a fill sees; neither the tier nor
 * the append {@code fsync}s on its own), and <b>durable</b>, the same plus {@code fsync} of every file (bytes on the
 * device). Also the calling thread's CPU time per GiB: the write path's own cost, which the load of other processes
 * stretches less than wall time. The ratio tier/append is taken <b>per round</b> (the same seconds of the machine), and
 * the median of the rounds reported with their min-max, after one warm-up round of all four that is not counted
 * (class loading and the JIT's compilation of the put path). Each tier line also splits its CPU into {@code build()},
 * the puts (segments created as they fill) and {@code close()}. Each round also times the CRC32C of the same pages
 * alone (no I/O, the same thread): the part of the tier's CPU that is its payload checksum, which the append does not
 * compute.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@disk-write
 * </pre>
 * Options in {@code -Ddiskwrite.args="..."}: {@code --pageSizes=4096,131072,1048576} {@code --bytes=268435456} (per
 * round and contender) {@code --rounds=7} {@code --directMin=0} (the smallest page the tier writes with
 * {@code O_DIRECT}, decision 0015; {@code 0}, the tier's default, writes every page through the page cache);
 * {@code --writeback=8388608} (the tier's {@code writebackEvery}, decision 0016; {@code 0} leaves writeback to the
 * kernel);
 * {@code --headers} instead compares the ways of writing a record header (see {@link #headers}); {@code --tierOnly}
 * runs the tier alone, round after round (for a profiler). Files go to {@code granary.bench.dir} (must not be
 * tmpfs).
 */
public final class DiskWriteBenchmark {

    private static final long FILE_SIZE = 64L << 20;
    private static final String[] CONTENDERS = {"tier", "append", "append-falloc", "append-writeback"};
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    /** The last tier run's CPU seconds split into build, puts and close, for the round's line. */
    private static String lastTierCpu = "";
    /** The smallest page the tier writes with {@code O_DIRECT}; 0: none ({@code directWrites(false)}). */
    private static int directMin;
    /** The tier's {@code writebackEvery}, and the interval of the {@code append-writeback} contender. */
    private static long writeback = 8L << 20;

    private DiskWriteBenchmark() {}

    /** One contender's figures in one round. */
    private record Run(double bufferedMBps, double durableMBps, double cpuSecondsPerGiB) {}

    /**
     * Runs the rounds.
     *
     * @param args see the class Javadoc
     * @throws IOException if the files cannot be written
     */
    public static void main(String[] args) throws IOException {
        String pageSizes = "4096,131072,1048576";
        long bytes = 256L << 20;
        int rounds = 7;
        boolean headers = false;
        boolean tierOnly = false;
        for (String arg : args) {
            if (arg.equals("--headers")) {
                headers = true;
            } else if (arg.equals("--tierOnly")) {
                tierOnly = true;
            } else if (arg.startsWith("--pageSizes=")) {
                pageSizes = arg.substring(12);
            } else if (arg.startsWith("--bytes=")) {
                bytes = Long.parseLong(arg.substring(8));
            } else if (arg.startsWith("--rounds=")) {
                rounds = Integer.parseInt(arg.substring(9));
            } else if (arg.startsWith("--directMin=")) {
                directMin = Integer.parseInt(arg.substring(12));
            } else if (arg.startsWith("--writeback=")) {
                writeback = Long.parseLong(arg.substring(12));
            } else if (!arg.isBlank()) {
                throw new IllegalArgumentException("option: " + arg
                        + " (expected: --pageSizes=, --bytes=, --rounds=, --directMin=, --writeback=, --headers,"
                        + " --tierOnly)");
            }
        }
        if (rounds < 1 || bytes < FILE_SIZE) {
            throw new IllegalArgumentException(
                    "rounds: " + rounds + ", bytes: " + bytes + " (expected: rounds >= 1, bytes >= " + FILE_SIZE + ")");
        }
        Path base = DiskBenchData.baseDirectory("/var/tmp/granary-bench");
        DiskBenchData.requireBlockDevice(base);
        System.out.printf(
                "disk-write: %s on %s; %d MiB per round and contender in files of %d MiB, %d rounds;"
                        + " thread CPU time %s%n",
                base,
                DiskBenchData.describeFileSystem(base),
                bytes >> 20,
                FILE_SIZE >> 20,
                rounds,
                THREADS.isCurrentThreadCpuTimeSupported() ? "measured" : "not available");
        for (String s : pageSizes.split(",")) {
            if (headers) {
                headers(base, Integer.parseInt(s.strip()), rounds);
            } else if (tierOnly) {
                tierOnly(base, Integer.parseInt(s.strip()), bytes, rounds);
            } else {
                run(base, Integer.parseInt(s.strip()), bytes, rounds);
            }
        }
    }

    /**
     * {@code --headers}: what a record header costs the writer, without the rest of the tier. Per variant and round,
     * 4 fallocated, mapped ({@code MADV_RANDOM}) files of 64 MiB, payloads written downwards with {@code pwrite} from
     * native memory as the tier does, and 136-byte headers upwards from offset 64: none, by a second {@code pwrite}
     * (through a native buffer, as the tier did before), or stored through the mapping (as it does now); and two
     * variants without headers that isolate the placement: payloads written upwards instead, and payloads written
     * downwards into a file that is not mapped. The writing thread's CPU per GiB of payload; the variants alternate
     * within each round.
     */
    private static void headers(Path base, int pageSize, int rounds) throws IOException {
        String[] variants = {
            "payload only",
            "header by pwrite",
            "header through the mapping",
            "payload upwards",
            "payload only, not mapped"
        };
        double[][] cpu = new double[variants.length][rounds];
        long size = FILE_SIZE;
        int header = 136;
        long stride = (pageSize + 4095) & -4096L;
        int count = (int) ((size - 4096) / (stride + header)) - 2;
        Path directory = base.resolve("disk-write-headers");
        try (Arena arena = Arena.ofShared()) {
            MemorySegment payload = arena.allocate(pageSize, 4096);
            payload.fill((byte) 7);
            MemorySegment scratch = arena.allocate(4096, 64);
            byte[] bytes = new byte[header];
            Arrays.fill(bytes, (byte) 1);
            for (int r = 0; r < rounds; r++) {
                for (int v = 0; v < variants.length; v++) {
                    DiskBenchData.deleteTree(directory);
                    Files.createDirectories(directory);
                    long nanos = 0;
                    for (int f = 0; f < 4; f++) {
                        Path file = directory.resolve("h" + f);
                        Files.createFile(file);
                        RawFiles.allocate(file, size);
                        try (Arena mapping = Arena.ofShared()) {
                            MemorySegment map = null;
                            if (v != 4) {
                                try (FileChannel channel =
                                        FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                                    map = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, mapping);
                                }
                                RawFiles.adviseRandom(map);
                            }
                            int fd = RawFiles.openReadWrite(file);
                            try {
                                long cpu0 = THREADS.getCurrentThreadCpuTime();
                                long at = 64;
                                for (int i = 0; i < count; i++) {
                                    // Downwards from the end as the tier places payloads; variant 3 upwards.
                                    RawFiles.pwrite(fd, payload, v == 3 ? 4096 + i * stride : size - (i + 1) * stride);
                                    if (v == 1) {
                                        MemorySegment part = scratch.asSlice(0, header);
                                        MemorySegment.copy(bytes, 0, part, ValueLayout.JAVA_BYTE, 0, header);
                                        RawFiles.pwrite(fd, part, at);
                                    } else if (v == 2) {
                                        MemorySegment.copy(bytes, 0, map, ValueLayout.JAVA_BYTE, at, header);
                                    }
                                    at += header;
                                }
                                nanos += THREADS.getCurrentThreadCpuTime() - cpu0;
                            } finally {
                                RawFiles.close(fd);
                            }
                        }
                        fsync(List.of(file));
                    }
                    cpu[v][r] = nanos / 1e9 / (4.0 * count * pageSize / (1L << 30));
                }
                StringBuilder line = new StringBuilder();
                for (int v = 0; v < variants.length; v++) {
                    line.append(String.format(Locale.ROOT, "%s%s %.2f", v == 0 ? "" : ", ", variants[v], cpu[v][r]));
                }
                System.out.printf(
                        Locale.ROOT,
                        "  %s headers round %d: %s CPU-s/GiB%n",
                        DiskColdReadBenchmark.size(pageSize),
                        r + 1,
                        line);
            }
        } finally {
            DiskBenchData.deleteTree(directory);
        }
        for (int v = 0; v < variants.length; v++) {
            double[] sorted = cpu[v].clone();
            Arrays.sort(sorted);
            System.out.printf(
                    Locale.ROOT,
                    "%s %-26s %.2f (%.2f-%.2f) CPU-s/GiB of payload%n",
                    DiskColdReadBenchmark.size(pageSize),
                    variants[v],
                    sorted[rounds / 2],
                    sorted[0],
                    sorted[rounds - 1]);
        }
    }

    /**
     * {@code --tierOnly}: the tier contender alone, round after round, for a profiler: the first rounds warm the JIT
     * up, the rest run the put path as it runs in production.
     */
    private static void tierOnly(Path base, int pageSize, long bytes, int rounds) throws IOException {
        int count = (int) (bytes / pageSize);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] contents = contents(arena, pageSize);
            PageKey[] keys = new PageKey[count];
            for (int i = 0; i < count; i++) {
                keys[i] = DiskBenchData.key(i, 7, pageSize);
            }
            Path directory = base.resolve("disk-write-" + pageSize);
            for (int r = 0; r < rounds; r++) {
                DiskBenchData.deleteTree(directory);
                Files.createDirectories(directory);
                try {
                    Run run = tier(directory.resolve("tier"), keys, contents, pageSize, bytes);
                    System.out.printf(
                            Locale.ROOT,
                            "  %s tier round %d: %.0f/%.0f MB/s %.2f CPU-s/GiB (CPU-s: %s)%n",
                            DiskColdReadBenchmark.size(pageSize),
                            r + 1,
                            run.bufferedMBps,
                            run.durableMBps,
                            run.cpuSecondsPerGiB,
                            lastTierCpu);
                } finally {
                    DiskBenchData.deleteTree(directory);
                }
            }
        }
    }

    /** 64 distinct page contents in native memory, reused: the bytes written are what matters, not their variety. */
    private static MemorySegment[] contents(Arena arena, int pageSize) {
        MemorySegment[] contents = new MemorySegment[64];
        SplittableRandom random = new SplittableRandom(pageSize);
        for (int i = 0; i < contents.length; i++) {
            byte[] b = new byte[pageSize];
            random.nextBytes(b);
            contents[i] = arena.allocate(pageSize, 4096).copyFrom(MemorySegment.ofArray(b));
        }
        return contents;
    }

    private static void run(Path base, int pageSize, long bytes, int rounds) throws IOException {
        int count = (int) (bytes / pageSize);
        try (Arena arena = Arena.ofShared()) {
            MemorySegment[] contents = contents(arena, pageSize);
            PageKey[] keys = new PageKey[count];
            for (int i = 0; i < count; i++) {
                keys[i] = DiskBenchData.key(i, 7, pageSize);
            }
            Run[][] runs = new Run[rounds][CONTENDERS.length];
            double[] crcs = new double[rounds];
            Path directory = base.resolve("disk-write-" + pageSize);
            for (int r = -1; r < rounds; r++) {
                if (r < 0) {
                    // A warm-up round, not counted: the first tier round is class loading and the JIT's work.
                    for (int c = 0; c < CONTENDERS.length; c++) {
                        DiskBenchData.deleteTree(directory);
                        Files.createDirectories(directory);
                        try {
                            if (c == 0) {
                                tier(directory.resolve("tier"), keys, contents, pageSize, bytes);
                            } else {
                                append(directory, count, contents, c == 2, c == 3);
                            }
                        } finally {
                            DiskBenchData.deleteTree(directory);
                        }
                    }
                    continue;
                }
                StringBuilder line = new StringBuilder(String.format(
                        Locale.ROOT,
                        "  %s round %d (Dirty %s):",
                        DiskColdReadBenchmark.size(pageSize),
                        r + 1,
                        dirtyKiB()));
                for (int k = 0; k < CONTENDERS.length; k++) {
                    int c = (k + r) % CONTENDERS.length; // rotate: each contender takes each place in turn
                    DiskBenchData.deleteTree(directory);
                    Files.createDirectories(directory);
                    try {
                        runs[r][c] = switch (c) {
                            case 0 -> tier(directory.resolve("tier"), keys, contents, pageSize, bytes);
                            case 1 -> append(directory, count, contents, false, false);
                            case 2 -> append(directory, count, contents, true, false);
                            default -> append(directory, count, contents, false, true);
                        };
                    } finally {
                        DiskBenchData.deleteTree(directory);
                    }
                }
                for (int c = 0; c < CONTENDERS.length; c++) {
                    line.append(String.format(
                            Locale.ROOT,
                            " %s %.0f/%.0f MB/s %.2f CPU-s/GiB;",
                            CONTENDERS[c],
                            runs[r][c].bufferedMBps,
                            runs[r][c].durableMBps,
                            runs[r][c].cpuSecondsPerGiB));
                }
                double crc = crcCpuPerGiB(count, contents);
                crcs[r] = crc;
                line.append(String.format(Locale.ROOT, " CRC32C alone %.2f CPU-s/GiB;", crc));
                line.append(String.format(
                        Locale.ROOT,
                        " tier/append %.2f buffered, %.2f durable; tier CPU-s: %s",
                        runs[r][0].bufferedMBps / runs[r][1].bufferedMBps,
                        runs[r][0].durableMBps / runs[r][1].durableMBps,
                        lastTierCpu));
                System.out.println(line);
            }
            String size = DiskColdReadBenchmark.size(pageSize);
            for (int c = 0; c < CONTENDERS.length; c++) {
                int cc = c;
                System.out.printf(
                        Locale.ROOT,
                        "%s %-13s buffered %s MB/s, durable %s MB/s, %s CPU-s/GiB%n",
                        size,
                        CONTENDERS[c],
                        summary(runs, r -> r[cc].bufferedMBps, "%.0f"),
                        summary(runs, r -> r[cc].durableMBps, "%.0f"),
                        summary(runs, r -> r[cc].cpuSecondsPerGiB, "%.2f"));
            }
            double[] sortedCrcs = crcs.clone();
            Arrays.sort(sortedCrcs);
            System.out.printf(
                    Locale.ROOT,
                    "%s CRC32C of the same pages alone (in the tier's figures): %.2f (%.2f-%.2f)"
                            + " CPU-s/GiB; tier CPU / append CPU (per round): %s%n",
                    size,
                    sortedCrcs[rounds / 2],
                    sortedCrcs[0],
                    sortedCrcs[rounds - 1],
                    summary(runs, r -> r[0].cpuSecondsPerGiB / r[1].cpuSecondsPerGiB, "%.2f"));
            System.out.printf(
                    Locale.ROOT,
                    "%s tier/append (per round): buffered %s, durable %s;"
                            + " tier/append-falloc: buffered %s, durable %s; tier/append-writeback: buffered %s,"
                            + " durable %s%n",
                    size,
                    summary(runs, r -> r[0].bufferedMBps / r[1].bufferedMBps, "%.2f"),
                    summary(runs, r -> r[0].durableMBps / r[1].durableMBps, "%.2f"),
                    summary(runs, r -> r[0].bufferedMBps / r[2].bufferedMBps, "%.2f"),
                    summary(runs, r -> r[0].durableMBps / r[2].durableMBps, "%.2f"),
                    summary(runs, r -> r[0].bufferedMBps / r[3].bufferedMBps, "%.2f"),
                    summary(runs, r -> r[0].durableMBps / r[3].durableMBps, "%.2f"));
        }
    }

    /**
     * {@return the CPU seconds per GiB of the CRC32C of the same pages, no I/O} The part of the tier's CPU that is the
     * payload checksum, a second pass over the bytes that the append does not make, measured in the same round.
     */
    private static double crcCpuPerGiB(int count, MemorySegment[] contents) {
        long cpu0 = THREADS.getCurrentThreadCpuTime();
        long bytes = 0;
        int sink = 0;
        for (int i = 0; i < count; i++) {
            CRC32C crc = new CRC32C();
            crc.update(contents[i & 63].asByteBuffer());
            sink += (int) crc.getValue();
            bytes += contents[i & 63].byteSize();
        }
        long cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
        if (sink == 42) {
            System.out.print(""); // keeps the checksums alive
        }
        return cpu / 1e9 / (bytes / (double) (1L << 30));
    }

    /** {@return "median (min-max)" of one figure over the rounds} */
    private static String summary(Run[][] runs, ToDoubleFunction<Run[]> figure, String format) {
        double[] values = Arrays.stream(runs).mapToDouble(figure).sorted().toArray();
        int n = values.length;
        double median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
        return String.format(
                Locale.ROOT, format + " (" + format + "-" + format + ")", median, values[0], values[n - 1]);
    }

    /** Puts every page into a fresh tier, closes it, then fsyncs its segment files. */
    private static Run tier(Path directory, PageKey[] keys, MemorySegment[] contents, int pageSize, long bytes)
            throws IOException {
        long capacity = ((bytes + bytes / 4) / FILE_SIZE + 3) * FILE_SIZE;
        long cpu0 = THREADS.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        long cpuBuilt;
        long cpuPut;
        long direct;
        long handed;
        try (DiskTier tier = TierInternals.directWriteMin(
                        DiskTier.builder()
                                .directory(directory)
                                .capacity(capacity)
                                .segmentSize(FILE_SIZE)
                                .directWrites(directMin > 0),
                        Math.max(directMin, 1))
                .writebackEvery(writeback)
                .build()) {
            cpuBuilt = THREADS.getCurrentThreadCpuTime();
            for (int i = 0; i < keys.length; i++) {
                Page page = new Page(keys[i], contents[i & 63]) {
                    @Override
                    protected void deallocate() {}
                };
                page.seal();
                if (!tier.put(page)) {
                    throw new IllegalStateException("the tier refused page " + i + ": " + tier.stats());
                }
            }
            if (tier.stats().evictions() != 0) {
                throw new IllegalStateException("the tier evicted while filling: " + tier.stats());
            }
            cpuPut = THREADS.getCurrentThreadCpuTime();
            direct = TierInternals.directWrites(tier);
            handed = TierInternals.writebacks(tier);
        }
        long buffered = System.nanoTime();
        long cpuEnd = THREADS.getCurrentThreadCpuTime();
        long cpu = cpuEnd - cpu0;
        lastTierCpu = String.format(
                Locale.ROOT,
                "build %.3f, puts %.3f, close %.3f; %d of %d pages direct;" + " %d ranges to writeback",
                (cpuBuilt - cpu0) / 1e9,
                (cpuPut - cpuBuilt) / 1e9,
                (cpuEnd - cpuPut) / 1e9,
                direct,
                keys.length,
                handed);
        List<Path> files;
        try (Stream<Path> list = Files.list(directory.resolve("segments"))) {
            files = list.toList();
        }
        fsync(files);
        return run((long) keys.length * pageSize, t0, buffered, System.nanoTime(), cpu);
    }

    /**
     * Appends every page to new files of {@link #FILE_SIZE}, optionally preallocated, or handing what it wrote to
     * writeback as the tier does (every {@link #writeback} bytes, one interval behind, and a file's rest when the
     * next begins), then fsyncs them.
     */
    private static Run append(Path directory, int count, MemorySegment[] contents, boolean preallocate, boolean handOff)
            throws IOException {
        long every = writeback > 0 ? writeback : 8L << 20;
        long cpu0 = THREADS.getCurrentThreadCpuTime();
        long t0 = System.nanoTime();
        long written = 0;
        List<Path> files = new ArrayList<>();
        FileChannel channel = null;
        int fd = -1; // a raw descriptor of the same file, for sync_file_range
        long mark = 0; // everything below it handed to writeback
        long inFile = FILE_SIZE;
        try {
            for (int i = 0; i < count; i++) {
                ByteBuffer b = contents[i & 63].asByteBuffer();
                if (inFile + b.remaining() > FILE_SIZE) {
                    if (channel != null) {
                        channel.close();
                    }
                    if (fd >= 0) {
                        RawFiles.startWriteback(fd, mark, inFile - mark);
                        RawFiles.close(fd);
                        fd = -1;
                    }
                    Path file = directory.resolve("raw-" + files.size() + ".dat");
                    files.add(file);
                    Files.createFile(file);
                    if (preallocate) {
                        RawFiles.allocate(file, FILE_SIZE);
                    }
                    channel = FileChannel.open(file, StandardOpenOption.WRITE);
                    if (handOff) {
                        fd = RawFiles.openReadWrite(file);
                    }
                    inFile = 0;
                    mark = 0;
                }
                while (b.hasRemaining()) {
                    int n = channel.write(b);
                    written += n;
                    inFile += n;
                }
                if (fd >= 0 && inFile - every - mark >= every) {
                    RawFiles.startWriteback(fd, mark, every);
                    mark += every;
                }
            }
        } finally {
            if (channel != null) {
                channel.close();
            }
            RawFiles.close(fd);
        }
        long buffered = System.nanoTime();
        long cpu = THREADS.getCurrentThreadCpuTime() - cpu0;
        fsync(files);
        return run(written, t0, buffered, System.nanoTime(), cpu);
    }

    private static Run run(long bytes, long t0, long buffered, long durable, long cpuNanos) {
        return new Run(
                bytes / 1e6 / ((buffered - t0) / 1e9),
                bytes / 1e6 / ((durable - t0) / 1e9),
                cpuNanos / 1e9 / (bytes / (double) (1L << 30)));
    }

    private static void fsync(List<Path> files) throws IOException {
        for (Path file : files) {
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
                channel.force(true);
            }
        }
    }

    /** {@return the kernel's "Dirty:" figure, e.g. "1234 kB", or "?"} */
    private static String dirtyKiB() {
        try {
            return Files.readAllLines(Path.of("/proc/meminfo")).stream()
                    .filter(l -> l.startsWith("Dirty:"))
                    .map(l -> l.substring(6).strip())
                    .findFirst()
                    .orElse("?");
        } catch (IOException e) {
            return "?";
        }
    }
}
