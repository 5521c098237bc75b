// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.memory;

import dev.granary.tier.internal.TierInternals;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
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
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * The memory tier's allocator candidates under page churn, in one run: Granary's {@code SlabAllocator}
 * ({@link TierInternals#slabs}: FFM slabs, 512-byte blocks, best fit with coalescing, one lock) against Netty's
 * {@link PooledByteBufAllocator} (jemalloc-style arenas of 4 MiB chunks, per-thread caches), direct memory.
 *
 * <h2>Workload</h2>
 * Each thread keeps a ring of {@code live / threads} live allocations (default 1 024 in total, about 720 MiB). One op
 * frees the oldest allocation of its ring and allocates a new one whose size is the next of
 * {@link AllocationSizes#sequence} (40 % exactly 1 MiB, 60 % uniform 4 KiB..1 MiB); for the slab allocator the op
 * also takes the allocation's {@code MemorySegment}, as the tier does. The allocator is shared by all threads
 * ({@code -t 2} measures its lock). The slab allocator is bounded (1 GiB, 64 MiB slabs, as a tier would be): when
 * fragmentation leaves no run for a request it fails, which is counted in the secondary result
 * {@code churn:failures} (a tier would evict instead); Netty is unbounded and never fails. Memory held is measured by
 * {@link AllocatorFootprint}, not here.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@jmh -Djmh.args="AllocatorBenchmark -t 1"
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@jmh -Djmh.args="AllocatorBenchmark -t 2"
 * </pre>
 * Quote {@code ffm-slab / netty-pooled} from one run. Smoke run: {@code -Djmh.args="AllocatorBenchmark -f 1 -wi 1 -i 1
 * -w 1s -r 1s"}.
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
public class AllocatorBenchmark {

    static final long SLAB_CAPACITY = 1L << 30;
    static final long SLAB_SIZE = 64L << 20;
    /** Length of the shared size sequence; a power of two, each thread starts at its own offset. */
    static final int SEQUENCE = 1 << 16;

    @Param({"ffm-slab", "netty-pooled"})
    String allocator;

    /** Live allocations kept by all threads together. */
    @Param({"1024"})
    int live;

    TierInternals.Slabs slab;
    PooledByteBufAllocator netty;
    int[] sizes;

    @Setup(Level.Trial)
    public void setUp() {
        sizes = AllocationSizes.sequence(SEQUENCE, 42);
        switch (allocator) {
            case "ffm-slab" -> slab = TierInternals.slabs(SLAB_CAPACITY, SLAB_SIZE);
            case "netty-pooled" -> netty = new PooledByteBufAllocator(true);
            default ->
                throw new IllegalArgumentException(
                        "allocator: '" + allocator + "' (expected: ffm-slab or netty-pooled)");
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (slab != null) {
            slab.close();
        }
    }

    /** One thread's ring of live allocations. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Ring {

        /** Allocations the bounded allocator could not serve, per iteration. */
        public long failures;

        AllocatorBenchmark bench;
        long[] blocks;
        int[] lengths;
        ByteBuf[] bufs;
        int next;
        int cursor;

        @Setup(Level.Trial)
        public void fill(AllocatorBenchmark bench, BenchmarkParams params) {
            this.bench = bench;
            int size = Math.max(1, bench.live / params.getThreads());
            blocks = new long[size];
            lengths = new int[size];
            bufs = new ByteBuf[size];
            // Threads walk the sequence from different points, so they do not allocate in lockstep.
            cursor = System.identityHashCode(this) & (SEQUENCE - 1);
            for (int i = 0; i < size; i++) {
                blocks[i] = -1;
                allocate(i);
            }
            next = 0;
        }

        @Setup(Level.Iteration)
        public void resetCounters() {
            failures = 0;
        }

        @TearDown(Level.Trial)
        public void drain() {
            for (int i = 0; i < blocks.length; i++) {
                free(i);
            }
        }

        Object allocate(int slot) {
            int size = bench.sizes[cursor++ & (SEQUENCE - 1)];
            if (bench.slab != null) {
                long block = bench.slab.allocate(size);
                blocks[slot] = block;
                lengths[slot] = size;
                if (block < 0) {
                    failures++;
                    return null;
                }
                return bench.slab.segment(block, size);
            }
            ByteBuf buf = bench.netty.directBuffer(size, size);
            bufs[slot] = buf;
            return buf;
        }

        void free(int slot) {
            if (bench.slab != null) {
                if (blocks[slot] >= 0) {
                    bench.slab.free(blocks[slot], lengths[slot]);
                    blocks[slot] = -1;
                }
            } else if (bufs[slot] != null) {
                bufs[slot].release();
                bufs[slot] = null;
            }
        }
    }

    /** Frees the ring's oldest allocation and allocates the next size in its place. */
    @Benchmark
    public Object churn(Ring ring) {
        int slot = ring.next;
        ring.next = slot + 1 == ring.blocks.length ? 0 : slot + 1;
        ring.free(slot);
        return ring.allocate(slot);
    }
}
