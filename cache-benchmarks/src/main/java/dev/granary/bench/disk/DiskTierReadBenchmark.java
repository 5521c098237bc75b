// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import dev.granary.TierStats;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.tier.DiskTier;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.CompilerControl;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Warm disk-tier hits (page cache hot), each page read whole by a consumer that touches every byte, against the same
 * consumer over a plain memory-mapped file holding the same bytes.
 *
 * <h2>Data</h2>
 * Per page size, 256 MiB of random bytes: N = 65 536 pages of 4 KiB, 2 048 of 128 KiB, 256 of 1 MiB, one page per
 * object ({@link DiskBenchData}: keys {@code train/000123.jpg}, origin {@code file:///data/}). Trial setup writes them
 * into a {@link DiskTier} (64 MiB segments, capacity for all of them: nothing is ever evicted) and, page after page,
 * into one plain file {@code raw.dat}; closes the tier and <em>reopens</em> it, so what is measured is the recovered,
 * persistent state; gets every page once and checks every byte (this also verifies every page's CRC32C, which a
 * reopened tier does on a page's first read: the measured hits are all verified ones); then reads every byte of both
 * files once, so the page cache holds them (warm), and touches every page of both mappings. Both subjects set up both
 * files, so that the machine is in the same state whichever is measured.
 *
 * <h2>Subjects ({@code @Param subject})</h2>
 * <ul>
 *   <li>{@code granary}: a uniformly random page index {@code i} ({@link ThreadLocalRandom}),
 *       {@code tier.get(keys[i])} with precomputed {@link PageKey}s, consume {@link Page#buffer()},
 *       {@code release()}: index lookup (the key's hash and equals), reference count, stats, segment touch.</li>
 *   <li>{@code mmap} (ceiling): {@code raw.dat} mapped read-only with
 *       {@code FileChannel.map(READ_ONLY, 0, size, Arena.ofShared())}, advised {@code MADV_RANDOM} as the tier advises
 *       its segments; the op consumes the read-only slice
 *       {@code [i * pageSize, (i + 1) * pageSize)} of the mapping. The slices are made in setup (as a page's buffer
 *       is), so the ceiling pays no allocation that the tier does not.</li>
 * </ul>
 * <h2>Resident and paged out</h2>
 * {@code read} measures pages resident in the page cache (the setup reads both files whole; nothing evicts them). On a
 * node whose data set is larger than its RAM most disk-tier hits are not resident, so {@code readPagedOut} measures
 * the same subjects with the page about to be read evicted first: a {@code Level.Invocation} setup (not timed) picks
 * the random page, and evicts its OS pages with {@code madvise(MADV_PAGEOUT)} through the mapping the subject reads
 * (the tier's own, whose address {@code DiskTier.peek} gives; the ceiling's slice) — {@code POSIX_FADV_DONTNEED} would
 * skip pages a process maps, and a cache drop is not allowed in this container — then checks with {@code mincore}
 * that none of them is still resident. The count of pages that stayed is printed per iteration and fails the run if
 * it is not 0. The op then reads the page from the device (the tier: its cold-page probe, {@code MADV_WILLNEED} +
 * {@code MADV_POPULATE_READ}; the ceiling: one fault per 4 KiB under {@code MADV_NORMAL} read-around).
 *
 * <p>Both consume through {@link #consume(ByteBuffer, byte[])}, a bulk copy of every byte into a per-thread scratch
 * array
 * (the consumer of {@code MemoryTierHitBenchmark}; see there for why a copy). Teardown fails the run if the tier
 * missed.
 *
 * <h2>Where the files go</h2>
 * System property {@code granary.bench.dir} (default: {@code java.io.tmpdir}, i.e. {@code /tmp}), in which each trial
 * makes and at the end deletes a directory {@code granary-disk-read-*} of about 600 MiB (the tier's segments and
 * {@code raw.dat}). Pages are read from the page cache, so the medium hardly matters here; a tmpfs {@code /tmp} holds
 * the files in memory (1.2 GiB of RAM with the fork's heap). The setup prints the file system used.
 *
 * <h2>Run</h2>
 * From the repository root ({@code -t} sets the reader threads):
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@jmh -Djmh.args="DiskTierReadBenchmark -t 1 -rf json -rff $PWD/cache-benchmarks/target/disk-read-t1.json"
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@jmh -Djmh.args="DiskTierReadBenchmark -t 2 -rf json -rff $PWD/cache-benchmarks/target/disk-read-t2.json"
 * python3 cache-benchmarks/ratios.py subject granary mmap cache-benchmarks/target/disk-read-t*.json
 * </pre>
 * Another directory: add {@code -jvmArgsAppend -Dgranary.bench.dir=/nvme/bench} to {@code jmh.args}. A smoke run
 * (proves it works, numbers meaningless):
 * {@code -Djmh.args="DiskTierReadBenchmark -f 1 -wi 1 -w 1s -i 1 -r 1s -p pageSize=4096"}.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 3,
        jvmArgsAppend = {
            "--enable-native-access=ALL-UNNAMED",
            "-Xms1g",
            "-Xmx1g",
            "-XX:+AlwaysPreTouch",
            "-XX:MaxDirectMemorySize=3g"
        })
@State(Scope.Benchmark)
public class DiskTierReadBenchmark {

    /** Bytes of data per page size: beyond the last-level cache, well within RAM (the page cache holds it all). */
    static final long TOTAL_BYTES = 256L << 20;

    @Param({"4096", "131072", "1048576"})
    int pageSize;

    @Param({"granary", "mmap"})
    String subject;

    private boolean granary;
    private int count;
    private DiskBenchData data;
    private DiskTier tier;
    private PageKey[] keys;
    private Arena arena;
    private ByteBuffer[] slices;
    private TierStats before;

    /**
     * The next page of a thread's {@code readPagedOut}, chosen and paged out before the op (not timed), and how many
     * of the pages it paged out stayed resident.
     */
    @State(Scope.Thread)
    public static class PagedOut {
        int next;
        long advised;
        long stayed;
        private MemorySegment vector;

        @Setup(Level.Trial)
        public void setUp(DiskTierReadBenchmark benchmark) {
            vector = Arena.ofAuto().allocate(benchmark.pageSize / 4096 + 2);
        }

        @Setup(Level.Invocation)
        public void pageOut(DiskTierReadBenchmark benchmark) throws IOException {
            next = ThreadLocalRandom.current().nextInt(benchmark.count);
            MemorySegment range;
            if (benchmark.granary) {
                Page page = benchmark.tier.peek(benchmark.keys[next]);
                if (page == null) {
                    throw new IllegalStateException("page " + next + " missing: " + benchmark.tier.stats());
                }
                try {
                    range = page.segment();
                } finally {
                    page.release();
                }
            } else {
                range = MemorySegment.ofBuffer(benchmark.slices[next]);
            }
            stayed += PageCache.pageOutRange(range, vector);
            advised++;
        }

        @TearDown(Level.Iteration)
        public void report() {
            System.out.printf(
                    " [paged out %d pages before their reads; OS pages still resident after the page-out:" + " %d]",
                    advised, stayed);
            if (stayed != 0) {
                throw new IllegalStateException(stayed + " OS pages stayed resident after MADV_PAGEOUT (expected: 0):"
                        + " the paged-out figures are not paged out");
            }
            advised = 0;
        }
    }

    /** Each benchmark thread copies into its own scratch array. */
    @State(Scope.Thread)
    public static class Scratch {
        byte[] bytes;

        @Setup(Level.Trial)
        public void setUp(DiskTierReadBenchmark benchmark) {
            bytes = new byte[benchmark.pageSize];
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        granary = switch (subject) {
            case "granary" -> true;
            case "mmap" -> false;
            default -> throw new IllegalArgumentException("subject: '" + subject + "' (expected: granary or mmap)");
        };
        count = Math.toIntExact(TOTAL_BYTES / pageSize);
        Path base = DiskBenchData.baseDirectory(System.getProperty("java.io.tmpdir"));
        Path run = Files.createTempDirectory(base, "granary-disk-read-");
        data = DiskBenchData.create(run, pageSize, count, true);
        keys = data.keys;
        byte[] scratch = new byte[pageSize];

        // The persistent state: reopen, then read every page once (CRC verified, every byte checked).
        tier = data.open(true);
        for (int i = 0; i < count; i++) {
            Page page = tier.get(keys[i]);
            if (page == null) {
                throw new IllegalStateException("page " + i + " missing after reopen: " + tier + ", " + tier.stats());
            }
            try {
                DiskBenchData.check(i, page.segment(), scratch);
            } finally {
                page.release();
            }
        }

        arena = Arena.ofShared();
        MemorySegment map;
        try (FileChannel channel = FileChannel.open(data.raw, StandardOpenOption.READ)) {
            map = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
        }
        // As the tier advises its segments: no read-around on a fault (changes nothing for resident pages; in
        // readPagedOut it keeps a 4 KiB fault from reading the device's whole read-ahead window).
        RawFiles.adviseRandom(map);
        slices = new ByteBuffer[count];
        for (int i = 0; i < count; i++) {
            MemorySegment slice = map.asSlice((long) i * pageSize, pageSize);
            DiskBenchData.check(i, slice, scratch);
            slices[i] = slice.asByteBuffer();
        }

        // Warm: every byte of both files through the page cache, and every page of both mappings touched.
        PageCache.readAll(data.allFiles());
        long sink = 0;
        for (int i = 0; i < count; i++) {
            Page page = tier.get(keys[i]);
            try {
                sink += consume(page.buffer(), scratch);
            } finally {
                page.release();
            }
            sink += consume(slices[i], scratch);
        }
        before = tier.stats();
        System.out.printf(
                "%n[setup] %s on %s; tier: %s, recovery %s; page cache residency of the files: %s" + " (sink %x)%n",
                data,
                DiskBenchData.describeFileSystem(run),
                tier,
                tier.recovery(),
                PageCache.residency(data.allFiles()),
                sink);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        try {
            if (tier != null) {
                TierStats delta = tier.stats();
                long misses = delta.misses() - before.misses();
                long corruptions = delta.corruptions() - before.corruptions();
                tier.close();
                if (misses != 0 || corruptions != 0) {
                    throw new IllegalStateException("the tier missed " + misses + " times (" + corruptions
                            + " corruptions) during the measurement (expected: 0)");
                }
            }
        } finally {
            slices = null;
            if (arena != null) {
                arena.close();
            }
            if (data != null) {
                data.delete();
            }
        }
    }

    @Benchmark
    public long read(Scratch s) {
        int i = ThreadLocalRandom.current().nextInt(count);
        if (granary) {
            Page page = tier.get(keys[i]);
            try {
                return consume(page.buffer(), s.bytes);
            } finally {
                page.release();
            }
        }
        return consume(slices[i], s.bytes);
    }

    /** As {@link #read}, with the page paged out of the page cache just before (see the class comment). */
    @Benchmark
    public long readPagedOut(Scratch s, PagedOut out) {
        int i = out.next;
        if (granary) {
            Page page = tier.get(keys[i]);
            try {
                return consume(page.buffer(), s.bytes);
            } finally {
                page.release();
            }
        }
        return consume(slices[i], s.bytes);
    }

    /**
     * The consumer both subjects share (and {@link DiskColdReadBenchmark} too): copies every byte into the thread's
     * scratch array (one bulk {@code get}, which the JVM runs as one memory copy) and returns two of the copied longs,
     * so the work depends on the bytes. The same as {@code MemoryTierHitBenchmark.consume}.
     */
    @CompilerControl(CompilerControl.Mode.DONT_INLINE)
    static long consume(ByteBuffer bytes, byte[] scratch) {
        int n = bytes.remaining();
        bytes.get(bytes.position(), scratch, 0, n);
        return (long) LONGS.get(scratch, 0) ^ (long) LONGS.get(scratch, n - 8);
    }

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
}
