// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.memory;

import java.util.SplittableRandom;

/**
 * The allocation sizes of the allocator comparison ({@link AllocatorBenchmark}, {@link AllocatorFootprint}): what a
 * memory tier with 1 MiB pages is asked for.
 *
 * <p>The mix: 40 % exactly 1 MiB (full pages of large objects), 60 % uniform over {@code [4 KiB, 1 MiB]} in bytes,
 * not rounded to anything (whole small objects and last pages, which are one page of their own size). Mean about
 * 0.70 MiB. Deterministic for a seed, so both allocators see the same sequence.
 *
 * <p>Not instantiable; thread-safe.
 */
final class AllocationSizes {

    static final int PAGE = 1 << 20;
    static final int MIN = 4 << 10;

    private AllocationSizes() {}

    /**
     * {@return {@code n} sizes drawn from the mix}
     *
     * @param n    how many
     * @param seed the seed; equal seeds give equal sequences
     */
    static int[] sequence(int n, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int[] sizes = new int[n];
        for (int i = 0; i < n; i++) {
            sizes[i] = random.nextInt(100) < 40 ? PAGE : random.nextInt(MIN, PAGE + 1);
        }
        return sizes;
    }
}
