// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.memory;

import dev.granary.tier.internal.TierInternals;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * How much memory each allocator candidate holds for what it was asked, the other half of the allocator decision
 * beside {@link AllocatorBenchmark}'s speed: with the same size sequence ({@link AllocationSizes}), each allocator is
 * filled until about 1 GiB has been requested, then a random half of the allocations is freed and the allocator
 * refilled to 1 GiB requested (the churn a cache sees), then everything is freed.
 *
 * <p>Printed per phase: the live allocations, the bytes requested (sum of sizes live), the bytes the allocator holds,
 * and the overhead {@code held / requested - 1}. Held is, for the slab allocator, {@link
 * TierInternals.Slabs#reserved()}
 * (the slabs taken from the OS; nothing is returned before close) with {@link TierInternals.Slabs#used()} (the 512-byte
 * blocks allocated) beside it; for Netty, {@code PooledByteBufAllocator.metric().usedDirectMemory()} (the chunks its
 * arenas hold). The slab allocator gets 2 GiB of capacity, so that its fragmentation shows as reserved memory rather
 * than as failed allocations (failures are printed too).
 *
 * <p>Run from the repository root:
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@footprint
 * </pre>
 * Single-threaded; deterministic apart from Netty's choice of arena.
 */
public final class AllocatorFootprint {

    private static final long TARGET = 1L << 30;
    private static final long SEED = 42;
    private static final double MIB = 1 << 20;

    private AllocatorFootprint() {}

    /** A candidate under test, reduced to what the probe needs. */
    private interface Candidate {
        /** Allocates, or returns null if the allocator refuses. */
        Object allocate(int size);

        void free(Object allocation, int size);

        /** Bytes the allocator holds now. */
        long held();

        /** A detail shown beside held, or empty. */
        String detail();
    }

    private record Allocation(Object handle, int size) {}

    /**
     * Runs the probe for both candidates and prints one table.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        int[] sizes = AllocationSizes.sequence(1 << 16, SEED);
        System.out.printf(
                "size mix: 40%% exactly 1 MiB, 60%% uniform 4 KiB..1 MiB; target %.0f MiB requested%n", TARGET / MIB);
        System.out.printf(
                "%-13s %-20s %7s %15s %12s %10s %9s  %s%n",
                "allocator", "phase", "live", "requested MiB", "held MiB", "overhead", "failures", "detail");

        TierInternals.Slabs slab = TierInternals.slabs(2 * TARGET, 64L << 20);
        probe("ffm-slab", sizes, new Candidate() {
            @Override
            public Object allocate(int size) {
                long block = slab.allocate(size);
                return block < 0 ? null : block;
            }

            @Override
            public void free(Object allocation, int size) {
                slab.free((Long) allocation, size);
            }

            @Override
            public long held() {
                return slab.reserved();
            }

            @Override
            public String detail() {
                return String.format("used (blocks) %.1f MiB", slab.used() / MIB);
            }
        });
        slab.close();

        PooledByteBufAllocator netty = new PooledByteBufAllocator(true);
        probe("netty-pooled", sizes, new Candidate() {
            @Override
            public Object allocate(int size) {
                return netty.directBuffer(size, size);
            }

            @Override
            public void free(Object allocation, int size) {
                ((ByteBuf) allocation).release();
            }

            @Override
            public long held() {
                return netty.metric().usedDirectMemory();
            }

            @Override
            public String detail() {
                return "chunk " + netty.metric().chunkSize() / (1 << 10) + " KiB, "
                        + netty.metric().numDirectArenas() + " direct arenas";
            }
        });
    }

    private static void probe(String name, int[] sizes, Candidate candidate) {
        List<Allocation> live = new ArrayList<>();
        int[] cursor = {0};
        long[] failures = {0};
        long requested = fill(sizes, cursor, candidate, live, 0, failures);
        print(name, "fill to 1 GiB", live, requested, candidate, failures[0]);

        Collections.shuffle(live, new Random(SEED));
        int half = live.size() / 2;
        for (Allocation a : live.subList(0, half)) {
            candidate.free(a.handle, a.size);
            requested -= a.size;
        }
        live.subList(0, half).clear();
        print(name, "free random half", live, requested, candidate, failures[0]);

        requested = fill(sizes, cursor, candidate, live, requested, failures);
        print(name, "refill to 1 GiB", live, requested, candidate, failures[0]);

        for (Allocation a : live) {
            candidate.free(a.handle, a.size);
        }
        live.clear();
        print(name, "free all", live, 0, candidate, failures[0]);
    }

    private static long fill(
            int[] sizes, int[] cursor, Candidate candidate, List<Allocation> live, long requested, long[] failures) {
        while (requested < TARGET) {
            int size = sizes[cursor[0]++ % sizes.length];
            Object handle = candidate.allocate(size);
            if (handle == null) {
                failures[0]++;
                if (failures[0] > 10_000) {
                    throw new IllegalStateException(
                            "allocator refuses every request (expected: room for " + TARGET + " bytes)");
                }
                continue;
            }
            live.add(new Allocation(handle, size));
            requested += size;
        }
        return requested;
    }

    private static void print(
            String name, String phase, List<Allocation> live, long requested, Candidate candidate, long failures) {
        long held = candidate.held();
        String overhead = requested == 0 ? "-" : String.format("%+.2f%%", 100.0 * (held - requested) / requested);
        System.out.printf(
                "%-13s %-20s %7d %15.1f %12.1f %10s %9d  %s%n",
                name, phase, live.size(), requested / MIB, held / MIB, overhead, failures, candidate.detail());
    }
}
