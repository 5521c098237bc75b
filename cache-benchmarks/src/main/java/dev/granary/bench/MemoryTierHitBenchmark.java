// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.granary.CacheStats;
import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.TierStats;
import dev.granary.TieredCache;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.tier.MemoryTier;
import dev.granary.tier.WindowTinyLfuPolicy;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.SplittableRandom;
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
 * Warm memory-tier hits, each page read whole by a consumer that touches every byte, against the same consumer over
 * memory with no cache in front of it.
 *
 * <h2>Subjects ({@code @Param subject})</h2>
 * <ul>
 *   <li>{@code granary}: {@link TieredCache#read(String)} of a uniformly random key, over a {@link SyntheticOrigin}
 *       with one {@link MemoryTier} that holds every object, page size = object size (each object is one page),
 *       leak detection off. Consumes {@link Lease#bytes()}, closes the lease. This is what a loader pays per hit:
 *       key check, metadata lookup, page-key construction, tier index, reference count, policy access record,
 *       lease.</li>
 *   <li>{@code tier}: the same tier asked directly, {@code tier.get(pageKey)} with precomputed keys; consumes
 *       {@link Page#buffer()}, releases the page. The difference to {@code granary} is the facade's cost.</li>
 *   <li>{@code raw} (ceiling 1): one off-heap buffer with all objects back to back, and a precomputed read-only
 *       slice per object; the op consumes slice {@code i}: no lookup, no reference count, no lease — the consumer
 *       alone, over a buffer handed to it, which is what every other subject's consumer gets.</li>
 *   <li>{@code caffeine} (ceiling 2): a Caffeine {@code Cache<String, ByteBuffer>} ({@code maximumSize} = number of
 *       keys) whose values are read-only slices of the {@code raw} buffer; op = {@code getIfPresent} + consume.</li>
 * </ul>
 * The consumer is {@link #consume(ByteBuffer, byte[])} for every subject: a bulk copy of the whole buffer into a
 * per-thread scratch array. Every page size keeps 256 MiB of data: 65 536 keys at 4 KiB, 2 048 at 128 KiB, 256 at
 * 1 MiB, so the working set is far beyond the CPU caches and reads come from DRAM for every subject.
 *
 * <p>The metadata TTL is set to a day so that revalidation (one {@code stat} per key per TTL, a separate cost) never
 * happens inside a measurement. Setup warms every key and then refuses to run (throws) unless a second full pass
 * reads every byte correctly with no tier miss and no origin read.
 *
 * <h2>Run</h2>
 * From the repository root, 1 and 2 threads (two runs; quote ratios {@code granary/raw}, {@code tier/raw},
 * {@code granary/caffeine} per page size from within one run, never across runs):
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@jmh -Djmh.args="MemoryTierHitBenchmark -t 1 -rf json -rff cache-benchmarks/target/memory-tier-hit-t1.json"
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@jmh -Djmh.args="MemoryTierHitBenchmark -t 2 -rf json -rff cache-benchmarks/target/memory-tier-hit-t2.json"
 * </pre>
 * JMH runs each (pageSize, subject) pair in forks of its own, one pair after another; it does not alternate subject
 * and ceiling. For the A B A B pairing of {@code BENCHMARKS.md}, run with {@code -f 1} several times and take the
 * ratio within each run. A smoke run (seconds, proves it works, numbers meaningless):
 * {@code -Djmh.args="MemoryTierHitBenchmark -f 1 -wi 1 -i 1 -w 1s -r 1s"}.
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
public class MemoryTierHitBenchmark {

    /** Bytes of data per page size: well beyond the last-level cache, well within the fork's direct memory. */
    static final long TOTAL_BYTES = 256L << 20;

    private static final int GRANARY = 0;
    private static final int TIER = 1;
    private static final int RAW = 2;
    private static final int CAFFEINE = 3;

    @Param({"4096", "131072", "1048576"})
    int pageSize;

    @Param({"granary", "tier", "raw", "caffeine"})
    String subject;

    /** The memory tier's policy records one hit in this many (ignored by raw and caffeine). */
    @Param({"8"})
    int sampling;

    private int mode;
    private int count;
    private String[] keys;
    private PageKey[] pageKeys;
    private TieredCache cache;
    private MemoryTier tier;
    private Arena arena;
    private ByteBuffer raw;
    private ByteBuffer[] slices;
    private Cache<String, ByteBuffer> caffeine;

    /** Each benchmark thread draws its own keys and copies into its own scratch array. */
    @State(Scope.Thread)
    public static class Keys {
        final SplittableRandom random = new SplittableRandom();
        byte[] scratch;

        @Setup(Level.Trial)
        public void setUp(MemoryTierHitBenchmark benchmark) {
            scratch = new byte[benchmark.pageSize];
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        count = Math.toIntExact(TOTAL_BYTES / pageSize);
        SyntheticOrigin origin = SyntheticOrigin.of(count, pageSize);
        keys = origin.keys();
        mode = switch (subject) {
            case "granary" -> GRANARY;
            case "tier" -> TIER;
            case "raw" -> RAW;
            case "caffeine" -> CAFFEINE;
            default ->
                throw new IllegalArgumentException(
                        "subject: '" + subject + "' (expected: granary, tier, raw or caffeine)");
        };
        if (mode == GRANARY || mode == TIER) {
            setUpCache(origin);
        } else {
            setUpRaw();
        }
    }

    private void setUpCache(SyntheticOrigin origin) throws IOException {
        // Room for every page plus one slab, so neither the policy nor slab tails ever evict or refuse.
        tier = MemoryTier.builder()
                .capacity(TOTAL_BYTES + (64L << 20))
                .slabSize(64L << 20)
                .policy(WindowTinyLfuPolicy.sampling(sampling))
                .build();
        cache = TieredCache.builder(origin)
                .tier(tier)
                .pageSize(pageSize)
                .leakDetection(LeakDetection.DISABLED)
                .metadataTtl(Duration.ofDays(1))
                .build();
        for (String key : keys) {
            cache.read(key).close();
        }
        // Verification pass: every byte right, every page a hit, nothing from the origin.
        CacheStats before = cache.stats();
        for (int i = 0; i < count; i++) {
            try (Lease lease = cache.read(keys[i])) {
                check(i, lease.bytes());
            }
        }
        String originId = cache.originUri().toString();
        pageKeys = new PageKey[count];
        for (int i = 0; i < count; i++) {
            pageKeys[i] = new PageKey(originId, keys[i], SyntheticOrigin.VERSION, 0, pageSize);
            Page page = tier.get(pageKeys[i]);
            if (page == null) {
                throw new IllegalStateException("warm-up left " + pageKeys[i] + " out of the tier");
            }
            try {
                check(i, page.buffer());
            } finally {
                page.release();
            }
        }
        CacheStats delta = cache.stats().minus(before);
        TierStats t = delta.tiers().getFirst();
        if (t.misses() != 0 || delta.origin().reads() != 0 || cache.stats().openLeases() != 0) {
            throw new IllegalStateException("warm-up did not leave every key cached: after it, a full pass over "
                    + count + " keys made " + t.hits() + " hits, " + t.misses() + " tier misses and "
                    + delta.origin().reads() + " origin reads; " + cache.stats().openLeases()
                    + " leases open (expected: 0 misses, 0 origin reads, no lease)");
        }
    }

    private void setUpRaw() {
        arena = Arena.ofShared();
        MemorySegment memory = arena.allocate(TOTAL_BYTES, 4096);
        for (int i = 0; i < count; i++) {
            SyntheticOrigin.fill(i, 0, memory.asSlice((long) i * pageSize, pageSize));
        }
        // Built like a Page's buffer: a read-only segment's ByteBuffer view.
        raw = memory.asReadOnly().asByteBuffer();
        slices = new ByteBuffer[count];
        for (int i = 0; i < count; i++) {
            slices[i] = slice(i);
            check(i, slices[i]);
        }
        if (mode == CAFFEINE) {
            caffeine = Caffeine.newBuilder().maximumSize(count).build();
            for (int i = 0; i < count; i++) {
                caffeine.put(keys[i], slice(i));
            }
            caffeine.cleanUp();
            for (int i = 0; i < count; i++) {
                ByteBuffer value = caffeine.getIfPresent(keys[i]);
                if (value == null) {
                    throw new IllegalStateException("Caffeine dropped '" + keys[i] + "' during warm-up ("
                            + caffeine.estimatedSize() + " of " + count + " entries left)");
                }
            }
        }
    }

    private static void check(int index, ByteBuffer bytes) {
        long at = SyntheticOrigin.firstMismatch(index, 0, bytes);
        if (at >= 0 || bytes.remaining() == 0) {
            throw new IllegalStateException("object " + index + ": wrong byte at " + at + " of " + bytes.remaining());
        }
    }

    private ByteBuffer slice(int index) {
        return raw.slice(index * pageSize, pageSize);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        if (cache != null) {
            long open = cache.stats().openLeases();
            cache.close();
            if (open != 0) {
                throw new IllegalStateException("leases left open: " + open + " (expected: 0)");
            }
        }
        if (arena != null) {
            caffeine = null;
            raw = null;
            slices = null;
            arena.close();
        }
    }

    @Benchmark
    public long hit(Keys k) throws IOException {
        int i = k.random.nextInt(count);
        switch (mode) {
            case GRANARY -> {
                try (Lease lease = cache.read(keys[i])) {
                    return consume(lease.bytes(), k.scratch);
                }
            }
            case TIER -> {
                Page page = tier.get(pageKeys[i]);
                try {
                    return consume(page.buffer(), k.scratch);
                } finally {
                    page.release();
                }
            }
            case RAW -> {
                return consume(slices[i], k.scratch);
            }
            default -> {
                return consume(caffeine.getIfPresent(keys[i]), k.scratch);
            }
        }
    }

    /**
     * The consumer every subject shares: copies every byte into the thread's scratch array (a bulk {@code get}, which
     * the JVM runs as one memory copy) and returns two of the copied longs, so the work depends on the bytes.
     *
     * <p>Why a copy and not a loop of {@code getLong}s: C2 compiled such a loop into very different machine code from
     * fork to fork (1 928 vs 4 606 instructions per 4 KiB op for the same subject, and 738 vs 2 984 for {@code raw},
     * measured with {@code -prof perfnorm}, whether inlined or not), which swamped the differences between subjects.
     * The copy is one intrinsic and compiles the same every time; it is also what decoders that take a
     * {@code byte[]} do.
     */
    @CompilerControl(CompilerControl.Mode.DONT_INLINE)
    static long consume(ByteBuffer bytes, byte[] scratch) {
        int n = bytes.remaining();
        bytes.get(bytes.position(), scratch, 0, n);
        return (long) LONGS.get(scratch, 0) ^ (long) LONGS.get(scratch, n - 8);
    }

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
}
