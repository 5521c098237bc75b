// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

/**
 * A keyed pseudo-random bijection on {@code [0, n)}, evaluated one index at a time: a rank computes the entries of an
 * epoch's permutation it needs and nothing else, instead of shuffling an {@code int[n]}.
 *
 * <p>The algorithm is part of Granary's reproducibility contract (the same orders on every JVM and every version that
 * keeps it; {@code SamplerTest} pins it with known vectors, decision 0006). With {@code mix} = SplitMix64's
 * finalizer, {@code γ = 0x9E3779B97F4A7C15} and {@code combine(h, v) = mix(h + γ × (v + 1))}:
 * <ul>
 *   <li><b>{@code n >= 2^16}: a Feistel network with cycle-walking.</b> With {@code bits = ⌈log2 n⌉}, a value is
 *       {@code x = L × 2^b + R}, {@code L} its {@code a = ⌈bits / 2⌉} high bits and {@code R} its
 *       {@code b = ⌊bits / 2⌋} low bits, so the network's domain {@code 2^bits} is below {@code 2n}. Step
 *       {@code i = 0 … 7} has key {@code k_i = combine(key, i)} and round function
 *       {@code F_i(v) = mix(k_i + γ × (v + 1))} (output {@code v + 1} of a SplitMix64 stream seeded with
 *       {@code k_i}); an even step sets {@code L ^= F_i(R) & (2^a − 1)}, an odd one {@code R ^= F_i(L) & (2^b − 1)}:
 *       8 steps are 4 Luby–Rackoff rounds. A result {@code >= n} is encrypted again until it falls below {@code n}
 *       (cycle-walking keeps it a bijection of {@code [0, n)}; fewer than 2 passes on average). O(1) memory, about
 *       8 to 16 {@code mix} calls per index.</li>
 *   <li><b>{@code n < 2^16}: a Fisher–Yates shuffle</b> of {@code 0 … n − 1} from the state {@code key}: each draw
 *       adds {@code γ} to the state and takes {@code mix(state) >>> 32}; {@code i} runs from {@code n − 1} down to
 *       {@code 1} and swaps with {@code j} uniform in {@code [0, i]} by Lemire's multiply-shift with rejection. A
 *       Feistel network over so few bits reaches only a small, biased set of permutations (and cycle-walking a tiny
 *       domain inside a wide one is slow), while a table of under 2^16 ints costs nothing.</li>
 * </ul>
 *
 * <p>Immutable and thread-safe.
 */
final class KeyedPermutation {

    static final long GAMMA = 0x9E3779B97F4A7C15L;
    static final int ROUNDS = 8;
    /** Domains below this are shuffled into a table; at and above it, evaluated by the Feistel network. */
    static final int TABLE_LIMIT = 1 << 16;

    private final long n;
    private final int lowBits;
    private final long highMask;
    private final long lowMask;
    private final long[] keys;
    private final int[] table;

    /**
     * @param n   the domain size, {@code 0 <= n <= 2^62}
     * @param key the permutation's key (see {@link #combine(long, long)})
     * @throws IllegalArgumentException if {@code n} is out of range
     */
    KeyedPermutation(long n, long key) {
        if (n < 0 || n > (1L << 62)) {
            throw new IllegalArgumentException("permutation domain: " + n + " (expected: 0..2^62)");
        }
        this.n = n;
        if (n < TABLE_LIMIT) {
            table = fisherYates((int) n, key);
            lowBits = 0;
            highMask = 0;
            lowMask = 0;
            keys = null;
            return;
        }
        table = null;
        int bits = 64 - Long.numberOfLeadingZeros(n - 1);
        this.lowBits = bits / 2;
        this.highMask = (1L << (bits - lowBits)) - 1;
        this.lowMask = (1L << lowBits) - 1;
        this.keys = new long[ROUNDS];
        for (int i = 0; i < ROUNDS; i++) {
            keys[i] = combine(key, i);
        }
    }

    /** {@return the domain size} */
    long size() {
        return n;
    }

    /**
     * {@return the image of {@code x}}
     *
     * @throws IndexOutOfBoundsException unless {@code 0 <= x < n}
     */
    long apply(long x) {
        if (x < 0 || x >= n) {
            throw new IndexOutOfBoundsException("permutation index: " + x + " (expected: 0 <= x < " + n + ")");
        }
        if (table != null) {
            return table[(int) x];
        }
        long y = x;
        do {
            y = encrypt(y);
        } while (y >= n);
        return y;
    }

    /** {@return {@link #apply(long)} for an int domain} */
    int applyAsInt(int x) {
        return (int) apply(x);
    }

    private long encrypt(long x) {
        long l = x >>> lowBits;
        long r = x & lowMask;
        for (int i = 0; i < ROUNDS; i += 2) {
            l ^= mix(keys[i] + GAMMA * (r + 1)) & highMask;
            r ^= mix(keys[i + 1] + GAMMA * (l + 1)) & lowMask;
        }
        return (l << lowBits) | r;
    }

    private static int[] fisherYates(int n, long state) {
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
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

    /** {@return {@code mix(h + γ × (v + 1))}}: how every key of an order is derived from the seed, step by step */
    static long combine(long h, long v) {
        return mix(h + GAMMA * (v + 1));
    }

    /** SplitMix64's finalizer (Steele, Lea, Flood 2014). */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
