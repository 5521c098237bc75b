// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The "outside check" of a memory-tier hit: what a user who reads leases through plain {@link ByteBuffer} access (a
 * decoder's loop of {@code getLong}s over every byte) would write to compare Granary with the buffer they would
 * otherwise hold themselves. A plain Java main, no JMH: one JVM, the subject and its ceiling alternating, several
 * rounds, a ratio per round.
 *
 * <h2>Subjects</h2>
 * Every page size keeps {@code --totalMiB} of data (default 256: far beyond the CPU caches); each op picks a
 * uniformly random object and reads every byte of it through {@link #read(ByteBuffer)}, one method for all subjects.
 * <ul>
 *   <li>{@code granary}: {@code cache.read(key)} on a {@link TieredCache} with one {@link MemoryTier} holding every
 *       object (page size = object size), then {@code read(lease.bytes())}, then {@code close()}. Leak detection is
 *       the builder's default ({@link LeakDetection#SAMPLED}) unless {@code --leak} says otherwise: what a user
 *       gets.</li>
 *   <li>{@code direct} (the ceiling at every size): one {@link ByteBuffer#allocateDirect(int)} holding all objects back
 *       to back, a precomputed slice per object; no lookup.</li>
 *   <li>{@code caffeine} (the peer at 4 KiB): a Caffeine {@code Cache<String, ByteBuffer>} whose values are those
 *       direct slices; op = {@code getIfPresent(key)} + read.</li>
 *   <li>{@code granary-disabled} (diagnostic): the same with {@link LeakDetection#DISABLED}, a cache of its own.</li>
 *   <li>{@code segment} (diagnostic, not a ceiling): precomputed read-only slices of one shared-arena
 *       {@link MemorySegment}'s {@code asReadOnly().asByteBuffer()}, the kind of buffer the memory tier hands out:
 *       no lookup, only the buffer's kind differs from {@code direct}.</li>
 *   <li>{@code global} (diagnostic): the same memory as a global-scope segment ({@code ofAddress().reinterpret()}),
 *       read-only, as a buffer: whether a view with no closeable scope reads faster.</li>
 * </ul>
 * Setup reads every Granary key twice (the fill, then the hit that leaves the page's hint), so the rounds measure
 * the steady state.
 *
 * <h2>The consumer ({@code --consumer})</h2>
 * {@code shared} (default, what the outside check did): every subject reads through {@link #read(ByteBuffer)}, so
 * its JIT profile has seen both plain direct buffers and segment-backed ones. {@code separate}: the ceilings read
 * through {@link #readCopy(ByteBuffer)}, a byte-for-byte copy, so each loop is compiled for one kind of buffer, as
 * in a program whose decoder only ever reads Granary's. Decision 0021 explains why the two differ.
 *
 * <h2>Rounds</h2>
 * {@code --warmup} unmeasured rounds, then {@code --rounds} measured ones (default 7). A round runs every subject once
 * for {@code --millis} on {@code --threads} threads (each thread its own random keys), in an order that reverses
 * from round to round. Per round and subject: ops/s by wall clock and CPU-ns per op of the reading threads
 * ({@link java.lang.management.ThreadMXBean#getCurrentThreadCpuTime()}: counts only while the threads run, steadier
 * on a shared host).
 * Printed: per page size, the ratio of each subject to the ceiling per round, as median (min–max), by wall clock and
 * by CPU; above 1 the subject is faster. The ceiling is {@code caffeine} at 4 KiB and below when it runs, else
 * {@code direct}.
 *
 * <h2>Run</h2>
 * From the repository root:
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@lease-read
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@lease-read -Dleaseread.args="--threads=2 --sizes=1048576"
 * </pre>
 * Options ({@code --name=value}): {@code sizes} (comma-separated page sizes, default {@code 4096,131072,1048576}),
 * {@code threads} (default 1), {@code rounds} (7), {@code warmup} (2), {@code millis} (1000), {@code totalMiB} (256),
 * {@code subjects} (default {@code granary,direct,caffeine,segment}), {@code leak} ({@code default}, {@code DISABLED},
 * {@code SAMPLED} or {@code PARANOID}), {@code consumer} ({@code shared} or {@code separate}). Also printed: bytes
 * allocated per op by the reading threads.
 */
public final class LeaseReadCheck {

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static final AtomicLong SINK = new AtomicLong();

    private LeaseReadCheck() {}

    /**
     * The consumer every subject shares, as a user's decoder reads: a {@code getLong} per 8 bytes, every byte of the
     * buffer, the values folded so that the work cannot be skipped.
     *
     * @param bytes the buffer to read, from its position to its limit (a multiple of 8 bytes here)
     * @return a fold of the longs read
     */
    static long read(ByteBuffer bytes) {
        long sum = 0;
        int end = bytes.limit() - 7;
        for (int i = bytes.position(); i < end; i += 8) {
            sum += bytes.getLong(i);
        }
        return sum;
    }

    /**
     * A copy of {@link #read(ByteBuffer)}, byte for byte, for {@code --consumer=separate}: the ceilings read through
     * it, so that the JIT profiles each kind of buffer on its own, as in a program whose decoder only ever sees one.
     */
    static long readCopy(ByteBuffer bytes) {
        long sum = 0;
        int end = bytes.limit() - 7;
        for (int i = bytes.position(); i < end; i += 8) {
            sum += bytes.getLong(i);
        }
        return sum;
    }

    /** One op of a subject over object {@code i}; returns what {@link #read(ByteBuffer)} returned. */
    @FunctionalInterface
    private interface Op {
        long run(int i) throws IOException;
    }

    /** Runs the check; see the class comment for the options. */
    public static void main(String[] args) throws Exception {
        Map<String, String> o = options(args);
        int[] sizes = Arrays.stream(o.get("sizes").split(","))
                .mapToInt(s -> Integer.parseInt(s.strip()))
                .toArray();
        int threads = Integer.parseInt(o.get("threads"));
        int rounds = Integer.parseInt(o.get("rounds"));
        int warmup = Integer.parseInt(o.get("warmup"));
        long millis = Long.parseLong(o.get("millis"));
        long total = Long.parseLong(o.get("totalMiB")) << 20;
        List<String> subjects = List.of(o.get("subjects").split(","));
        String leak = o.get("leak");
        System.out.printf(
                Locale.ROOT,
                "LeaseReadCheck: %s, %d thread(s), %d rounds (+%d warm-up) of %d ms per"
                        + " subject, %d MiB per size, leak detection %s; JDK %s, %d CPUs%n",
                subjects,
                threads,
                rounds,
                warmup,
                millis,
                total >> 20,
                leak,
                Runtime.version(),
                Runtime.getRuntime().availableProcessors());
        for (int size : sizes) {
            checkSize(
                    size,
                    subjects,
                    threads,
                    rounds,
                    warmup,
                    millis,
                    total,
                    leak,
                    o.get("consumer").equals("separate"));
        }
        System.out.println("(sink " + SINK.get() + ")");
    }

    private static void checkSize(
            int size,
            List<String> subjects,
            int threads,
            int rounds,
            int warmup,
            long millis,
            long total,
            String leak,
            boolean separate)
            throws Exception {
        int count = Math.toIntExact(total / size);
        SyntheticOrigin origin = SyntheticOrigin.of(count, size);
        String[] keys = origin.keys();
        ByteBuffer direct = ByteBuffer.allocateDirect(Math.toIntExact(total));
        for (int i = 0; i < count; i++) {
            SyntheticOrigin.fill(i, 0, MemorySegment.ofBuffer(direct).asSlice((long) i * size, size));
        }
        ByteBuffer[] directSlices = new ByteBuffer[count];
        for (int i = 0; i < count; i++) {
            directSlices[i] = direct.slice(i * size, size);
            check(i, directSlices[i]);
        }
        Map<String, Op> ops = new LinkedHashMap<>();
        TieredCache cache = null;
        Arena arena = null;
        for (String subject : subjects) {
            switch (subject) {
                case "granary" -> {
                    cache = cache(origin, size, total, leak);
                    TieredCache c = cache;
                    for (int pass = 0; pass < 2; pass++) { // the fill, then the hit that leaves the page's hint
                        for (int i = 0; i < count; i++) {
                            try (Lease lease = c.read(keys[i])) {
                                check(i, lease.bytes());
                            }
                        }
                    }
                    ops.put(subject, i -> {
                        try (Lease lease = c.read(keys[i])) {
                            return read(lease.bytes());
                        }
                    });
                }
                case "granary-disabled" -> {
                    TieredCache c = cache(origin, size, total, "DISABLED");
                    for (int pass = 0; pass < 2; pass++) {
                        for (int i = 0; i < count; i++) {
                            c.read(keys[i]).close();
                        }
                    }
                    ops.put(subject, i -> {
                        try (Lease lease = c.read(keys[i])) {
                            return read(lease.bytes());
                        }
                    });
                }
                case "direct" ->
                    ops.put(subject, separate ? i -> readCopy(directSlices[i]) : i -> read(directSlices[i]));
                case "caffeine" -> {
                    Cache<String, ByteBuffer> caffeine =
                            Caffeine.newBuilder().maximumSize(count).build();
                    for (int i = 0; i < count; i++) {
                        caffeine.put(keys[i], directSlices[i]);
                    }
                    caffeine.cleanUp();
                    ops.put(
                            subject,
                            separate
                                    ? i -> readCopy(caffeine.getIfPresent(keys[i]))
                                    : i -> read(caffeine.getIfPresent(keys[i])));
                }
                case "segment" -> {
                    arena = arena == null ? Arena.ofShared() : arena;
                    MemorySegment memory = arena.allocate(total, 4096);
                    MemorySegment.copy(MemorySegment.ofBuffer(direct), 0, memory, 0, total);
                    ByteBuffer view = memory.asReadOnly().asByteBuffer();
                    ByteBuffer[] slices = new ByteBuffer[count];
                    for (int i = 0; i < count; i++) {
                        slices[i] = view.slice(i * size, size);
                        check(i, slices[i]);
                    }
                    ops.put(subject, i -> read(slices[i]));
                }
                case "global" -> {
                    arena = arena == null ? Arena.ofShared() : arena;
                    MemorySegment memory = arena.allocate(total, 4096);
                    MemorySegment.copy(MemorySegment.ofBuffer(direct), 0, memory, 0, total);
                    ByteBuffer view = globalView(memory);
                    ByteBuffer[] slices = new ByteBuffer[count];
                    for (int i = 0; i < count; i++) {
                        slices[i] = view.slice(i * size, size);
                        check(i, slices[i]);
                    }
                    ops.put(subject, i -> read(slices[i]));
                }
                default ->
                    throw new IllegalArgumentException("subject: '" + subject
                            + "' (expected: granary, granary-disabled, direct, caffeine, segment or global)");
            }
        }
        String ceiling = size <= 4096 && ops.containsKey("caffeine") ? "caffeine" : "direct";
        Map<String, double[]> wall = new LinkedHashMap<>();
        Map<String, double[]> cpu = new LinkedHashMap<>();
        Map<String, double[]> alloc = new LinkedHashMap<>();
        List<String> names = new ArrayList<>(ops.keySet());
        for (int round = -warmup; round < rounds; round++) {
            List<String> order = new ArrayList<>(names);
            if ((round & 1) != 0) {
                order = order.reversed();
            }
            for (String name : order) {
                double[] r = run(ops.get(name), count, threads, millis);
                if (round >= 0) {
                    wall.computeIfAbsent(name, n -> new double[rounds])[round] = r[0];
                    cpu.computeIfAbsent(name, n -> new double[rounds])[round] = r[1];
                    alloc.computeIfAbsent(name, n -> new double[rounds])[round] = r[2];
                }
            }
        }
        System.out.printf(Locale.ROOT, "%n== %s, %d thread(s), ceiling %s%n", bytes(size), threads, ceiling);
        for (String name : names) {
            double[] w = wall.get(name);
            double[] c = cpu.get(name);
            double[] byWall = new double[rounds];
            double[] byCpu = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                byWall[r] = w[r] / wall.get(ceiling)[r];
                byCpu[r] = cpu.get(ceiling)[r] / c[r];
            }
            System.out.printf(
                    Locale.ROOT,
                    "%-16s %10.0f ops/s %9.0f cpu-ns/op %6.0f B/op | ÷ %s: wall %s, cpu %s%n",
                    name,
                    median(w),
                    median(c),
                    median(alloc.get(name)),
                    ceiling,
                    summary(byWall),
                    summary(byCpu));
        }
        if (cache != null) {
            System.out.println("granary: " + cache.stats().tiers().getFirst() + ", leases open "
                    + cache.stats().openLeases());
            cache.close();
        }
        if (arena != null) {
            arena.close();
        }
        // The next size starts afresh: this size's direct buffers (the ceiling's, the tier's direct slabs) are freed
        // now rather than whenever the collector gets to them, so that they do not count against the JVM's
        // direct-memory limit when the next tier reserves its slabs (decision 0021).
        System.gc();
    }

    /** The same memory as a segment of the global scope (never closed), read-only, as a buffer. */
    @SuppressWarnings("restricted") // a diagnostic: the memory outlives every use of the view (main's arena)
    private static ByteBuffer globalView(MemorySegment memory) {
        return MemorySegment.ofAddress(memory.address())
                .reinterpret(memory.byteSize())
                .asReadOnly()
                .asByteBuffer();
    }

    private static TieredCache cache(SyntheticOrigin origin, int size, long total, String leak) {
        MemoryTier tier = MemoryTier.builder()
                .capacity(total + (64L << 20))
                .slabSize(Math.max(64L << 20, size))
                .build();
        TieredCache.Builder b =
                TieredCache.builder(origin).tier(tier).pageSize(size).metadataTtl(Duration.ofDays(1));
        if (!leak.equals("default")) {
            b.leakDetection(LeakDetection.valueOf(leak));
        }
        return b.build();
    }

    /** {@return wall ops/s and CPU-ns per op of one subject on {@code threads} threads for {@code millis}} */
    private static double[] run(Op op, int count, int threads, long millis) throws InterruptedException {
        long[] ops = new long[threads];
        long[] cpuNanos = new long[threads];
        long[] allocated = new long[threads];
        Throwable[] failure = new Throwable[1];
        Thread[] workers = new Thread[threads];
        long start = System.nanoTime();
        long deadline = start + millis * 1_000_000L;
        for (int t = 0; t < threads; t++) {
            int id = t;
            workers[t] = Thread.ofPlatform().name("reader-" + t).start(() -> {
                SplittableRandom random = new SplittableRandom();
                long cpu0 = THREADS.getCurrentThreadCpuTime();
                long bytes0 = THREADS.getCurrentThreadAllocatedBytes();
                long n = 0;
                long sink = 0;
                try {
                    do {
                        for (int k = 0; k < 8; k++) {
                            sink += op.run(random.nextInt(count));
                        }
                        n += 8;
                    } while (System.nanoTime() < deadline);
                } catch (IOException | RuntimeException e) {
                    failure[0] = e;
                }
                cpuNanos[id] = THREADS.getCurrentThreadCpuTime() - cpu0;
                allocated[id] = THREADS.getCurrentThreadAllocatedBytes() - bytes0;
                ops[id] = n;
                SINK.addAndGet(sink);
            });
        }
        for (Thread w : workers) {
            w.join();
        }
        long elapsed = System.nanoTime() - start;
        if (failure[0] != null) {
            throw new IllegalStateException("a reader failed", failure[0]);
        }
        long allOps = Arrays.stream(ops).sum();
        return new double[] {
            allOps * 1e9 / elapsed,
            (double) Arrays.stream(cpuNanos).sum() / allOps,
            (double) Arrays.stream(allocated).sum() / allOps
        };
    }

    private static void check(int index, ByteBuffer bytes) {
        long at = SyntheticOrigin.firstMismatch(index, 0, bytes);
        if (at >= 0 || bytes.remaining() == 0) {
            throw new IllegalStateException("object " + index + ": wrong byte at " + at + " of " + bytes.remaining());
        }
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static String summary(double[] ratios) {
        double[] v = ratios.clone();
        Arrays.sort(v);
        return String.format(Locale.ROOT, "%.2f (%.2f–%.2f)", median(v), v[0], v[v.length - 1]);
    }

    private static String bytes(int size) {
        return size >= 1 << 20 ? (size >> 20) + " MiB" : (size >> 10) + " KiB";
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> o = new LinkedHashMap<>();
        o.put("sizes", "4096,131072,1048576");
        o.put("threads", "1");
        o.put("rounds", "7");
        o.put("warmup", "2");
        o.put("millis", "1000");
        o.put("totalMiB", "256");
        o.put("subjects", "granary,direct,caffeine,segment");
        o.put("leak", "default");
        o.put("consumer", "shared");
        for (String arg : args) {
            if (arg.isBlank()) {
                continue;
            }
            int eq = arg.indexOf('=');
            String name = arg.startsWith("--") && eq > 2 ? arg.substring(2, eq) : null;
            if (name == null || !o.containsKey(name)) {
                throw new IllegalArgumentException(
                        "argument: '" + arg + "' (expected: --name=value with a name in " + o.keySet() + ")");
            }
            o.put(name, arg.substring(eq + 1));
        }
        return o;
    }
}
