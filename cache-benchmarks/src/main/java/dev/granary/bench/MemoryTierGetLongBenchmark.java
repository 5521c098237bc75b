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
import java.nio.ByteBuffer;
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
 * Warm memory-tier hits read as users read them: a loop of {@link ByteBuffer#getLong(int)} over every byte of
 * {@link Lease#bytes()}, against the same loop over a plain direct {@code ByteBuffer} (issue 31, item 8; decision
 * 0021). {@link MemoryTierHitBenchmark} copies each page out in bulk instead, and its ceilings are segment-backed
 * buffers like the tier's own; this one's are what a user would otherwise hold.
 *
 * <h2>Subjects ({@code @Param subject})</h2>
 * <ul>
 *   <li>{@code granary}: {@link TieredCache#read(String)} of a uniformly random key over one {@link MemoryTier} that
 *       holds every object (page size = object size), read, {@code close()}. Leak detection {@code @Param leak},
 *       by default the builder's default ({@link LeakDetection#SAMPLED}).</li>
 *   <li>{@code direct} (ceiling at every size): one {@link ByteBuffer#allocateDirect(int)} with all objects back to
 *       back and a precomputed slice per object; no lookup.</li>
 *   <li>{@code caffeine} (the peer at 4 KiB): a Caffeine {@code Cache<String, ByteBuffer>} of those slices;
 *       {@code getIfPresent} + read.</li>
 * </ul>
 * 256 MiB of data per page size, as in {@code MemoryTierHitBenchmark}.
 *
 * <h2>The consumer's profile ({@code @Param profile})</h2>
 * JMH runs each subject in a JVM of its own, so the consumer only ever sees one kind of buffer: {@code none} measures
 * that (a decoder that only reads Granary's buffers). {@code mixed} first runs the same consumer over a plain direct
 * buffer and over a segment-backed one, as a program does that reads both (and as a plain main that alternates
 * Granary with a raw buffer does): then C2 keeps the liveness check of segment-backed buffers inside the loop
 * (decision 0021).
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@jmh -Djmh.args="MemoryTierGetLongBenchmark -f 1 -wi 3 -w 1s -i 5 -r 1s -t 1"
 * </pre>
 * and {@code -t 2}; {@code -prof gc} gives the bytes allocated per op. Quote ratios to {@code direct} (and to
 * {@code caffeine} at 4 KiB) within one run.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {
            "--enable-native-access=ALL-UNNAMED",
            "-Xms1g",
            "-Xmx1g",
            "-XX:+AlwaysPreTouch",
            "-XX:MaxDirectMemorySize=3g"
        })
@State(Scope.Benchmark)
public class MemoryTierGetLongBenchmark {

    private static final long TOTAL_BYTES = MemoryTierHitBenchmark.TOTAL_BYTES;

    @Param({"4096", "131072", "1048576"})
    int pageSize;

    @Param({"granary", "direct", "caffeine"})
    String subject;

    @Param({"SAMPLED"})
    String leak;

    @Param({"none", "mixed"})
    String profile;

    private int count;
    private String[] keys;
    private TieredCache cache;
    private ByteBuffer[] slices;
    private Cache<String, ByteBuffer> caffeine;

    /** Each benchmark thread draws its own keys. */
    @State(Scope.Thread)
    public static class Keys {
        final SplittableRandom random = new SplittableRandom();
    }

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        count = Math.toIntExact(TOTAL_BYTES / pageSize);
        SyntheticOrigin origin = SyntheticOrigin.of(count, pageSize);
        keys = origin.keys();
        ByteBuffer direct = ByteBuffer.allocateDirect(Math.toIntExact(TOTAL_BYTES));
        slices = new ByteBuffer[count];
        for (int i = 0; i < count; i++) {
            slices[i] = direct.slice(i * pageSize, pageSize);
            SyntheticOrigin.fill(i, 0, MemorySegment.ofBuffer(slices[i]));
        }
        switch (subject) {
            case "granary" -> {
                MemoryTier tier = MemoryTier.builder()
                        .capacity(TOTAL_BYTES + (64L << 20))
                        .slabSize(64L << 20)
                        .build();
                cache = TieredCache.builder(origin)
                        .tier(tier)
                        .pageSize(pageSize)
                        .leakDetection(LeakDetection.valueOf(leak))
                        .metadataTtl(Duration.ofDays(1))
                        .build();
                for (int i = 0; i < count; i++) {
                    try (Lease lease = cache.read(keys[i])) {
                        check(i, lease.bytes());
                    }
                }
                if (cache.stats().tiers().getFirst().misses() != count
                        || cache.stats().origin().reads() != count) {
                    throw new IllegalStateException("warm-up: " + cache.stats() + " (expected: one miss and one"
                            + " origin read per key, then only hits)");
                }
            }
            case "direct" -> {}
            case "caffeine" -> {
                caffeine = Caffeine.newBuilder().maximumSize(count).build();
                for (int i = 0; i < count; i++) {
                    caffeine.put(keys[i], slices[i]);
                }
                caffeine.cleanUp();
            }
            default ->
                throw new IllegalArgumentException(
                        "subject: '" + subject + "' (expected: granary, direct or caffeine)");
        }
        for (int i = 0; i < count; i++) {
            check(i, slices[i]);
        }
        switch (profile) {
            case "none" -> {}
            case "mixed" -> pollute();
            default -> throw new IllegalArgumentException("profile: '" + profile + "' (expected: none or mixed)");
        }
    }

    /** Runs the consumer over a plain direct buffer and a segment-backed read-only one, until C2 compiled both. */
    private static void pollute() {
        try (Arena arena = Arena.ofShared()) {
            ByteBuffer plain = ByteBuffer.allocateDirect(4096);
            ByteBuffer backed = arena.allocate(4096, 4096).asReadOnly().asByteBuffer();
            long sink = 0;
            for (int i = 0; i < 20_000; i++) {
                sink += consume(plain) + consume(backed);
            }
            if (sink == 42) {
                System.out.println("(unlikely)");
            }
        }
    }

    private static void check(int index, ByteBuffer bytes) {
        long at = SyntheticOrigin.firstMismatch(index, 0, bytes);
        if (at >= 0 || bytes.remaining() == 0) {
            throw new IllegalStateException("object " + index + ": wrong byte at " + at + " of " + bytes.remaining());
        }
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
    }

    @Benchmark
    public long hit(Keys k) throws IOException {
        int i = k.random.nextInt(count);
        if (cache != null) {
            try (Lease lease = cache.read(keys[i])) {
                return consume(lease.bytes());
            }
        }
        return consume(caffeine != null ? caffeine.getIfPresent(keys[i]) : slices[i]);
    }

    /**
     * The consumer: a {@code getLong} per 8 bytes over the whole buffer, the values summed, as a decoder reads. Not
     * inlined, so that every subject runs the same compiled loop.
     */
    @CompilerControl(CompilerControl.Mode.DONT_INLINE)
    static long consume(ByteBuffer bytes) {
        long sum = 0;
        int end = bytes.limit() - 7;
        for (int i = bytes.position(); i < end; i += 8) {
            sum += bytes.getLong(i);
        }
        return sum;
    }
}
