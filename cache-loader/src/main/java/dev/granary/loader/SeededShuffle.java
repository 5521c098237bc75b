// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/**
 * {@link Sampler#shuffled(int, long)}: a Fisher–Yates permutation per epoch, driven by SplitMix64 seeded from
 * {@code (seed, epoch)}, as documented there; optionally one rank's strided part. The algorithm is part of the
 * contract (orders must reproduce across JVMs and versions): {@code SamplerTest} pins it with a known vector.
 */
record SeededShuffle(int datasetSize, long seed, int rank, int worldSize) implements Sampler {

    private static final long GAMMA = 0x9E3779B97F4A7C15L;

    @Override
    public Sampler shard(int rank, int worldSize) {
        Samplers.checkShard(this, rank, worldSize);
        return new SeededShuffle(datasetSize, seed, rank, worldSize);
    }

    @Override
    public int[] fullOrder(long epoch) {
        int[] order = Samplers.identity(datasetSize, epoch);
        long state = mix(seed + GAMMA * (epoch + 1));
        for (int i = order.length - 1; i > 0; i--) {
            // Lemire: j uniform in [0, bound) from the high half of a 32x32 product, rejecting the biased low range.
            long bound = i + 1L;
            long product;
            long threshold = (-bound & 0xFFFFFFFFL) % bound; // 2^32 mod bound
            do {
                state += GAMMA;
                long r = mix(state) >>> 32;
                product = r * bound;
            } while ((product & 0xFFFFFFFFL) < threshold);
            int j = (int) (product >>> 32);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        return order;
    }

    @Override
    public int[] epoch(long epoch) {
        return Samplers.strided(fullOrder(epoch), rank, worldSize, epochSize());
    }

    /** SplitMix64's finalizer (Steele, Lea, Flood 2014). */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
