// SPDX-License-Identifier: Apache-2.0
package dev.granary.internal;

import java.util.concurrent.atomic.LongAdder;

/**
 * What one reader of a cache — a data loader — caused in it: the lookups each tier served for it, its misses, and the
 * origin reads its misses made. A cache's own counters are cache-wide, so two loaders on one cache would see each
 * other's traffic in them; an account sees only the reads made while it is bound ({@link #call}).
 *
 * <p>Binding is a {@link ScopedValue}: the loader binds its account around each read on the thread that makes it;
 * the cache charges the account it finds bound. A miss that starts an origin read carries the account to the fill's
 * own thread, so the origin read is charged to the reader that caused it; a miss that joins another reader's fill
 * counts as a miss of its own reader, but the origin read stays charged to the first.
 *
 * <p>Thread-safe: every counter is a {@link LongAdder}. Costs nothing for reads with no account bound but the bound
 * check.
 */
public final class ReadAccount {

    private static final ScopedValue<ReadAccount> CURRENT = ScopedValue.newInstance();

    private final LongAdder[] tierHits;
    private final LongAdder misses = new LongAdder();
    private final LongAdder originReads = new LongAdder();
    private final LongAdder originBytes = new LongAdder();
    private final LongAdder originNanos = new LongAdder();

    /**
     * Creates an account at zero.
     *
     * @param tiers the number of tiers of the cache it will be used with
     * @throws IllegalArgumentException if {@code tiers} is negative
     */
    public ReadAccount(int tiers) {
        if (tiers < 0) {
            throw new IllegalArgumentException("tiers: " + tiers + " (expected: >= 0)");
        }
        tierHits = new LongAdder[tiers];
        for (int i = 0; i < tiers; i++) {
            tierHits[i] = new LongAdder();
        }
    }

    /**
     * Runs {@code op} with {@code account} bound on this thread, or just runs it when {@code account} is null.
     *
     * @return what {@code op} returned
     * @throws X what {@code op} threw
     */
    public static <T, X extends Throwable> T call(ReadAccount account, ScopedValue.CallableOp<T, X> op) throws X {
        return account == null ? op.call() : ScopedValue.where(CURRENT, account).call(op);
    }

    /** {@return the account bound on this thread, or null} */
    public static ReadAccount current() {
        return CURRENT.isBound() ? CURRENT.get() : null;
    }

    /** Tier {@code tier} served a lookup: charged to the bound account, if any. */
    public static void hit(int tier) {
        if (CURRENT.isBound()) {
            ReadAccount a = CURRENT.get();
            if (tier < a.tierHits.length) {
                a.tierHits[tier].increment();
            }
        }
    }

    /** No tier could serve a lookup: charged to the bound account, if any. */
    public static void missed() {
        if (CURRENT.isBound()) {
            CURRENT.get().misses.increment();
        }
    }

    /** An origin read of {@code bytes} took {@code nanos}: charged to the bound account, if any. */
    public static void originRead(long bytes, long nanos) {
        if (CURRENT.isBound()) {
            ReadAccount a = CURRENT.get();
            a.originReads.increment();
            a.originBytes.add(bytes);
            a.originNanos.add(nanos);
        }
    }

    /** {@return the hits each tier served, in tier order} */
    public long[] tierHits() {
        long[] hits = new long[tierHits.length];
        for (int i = 0; i < hits.length; i++) {
            hits[i] = tierHits[i].sum();
        }
        return hits;
    }

    /** {@return lookups no tier could serve} */
    public long misses() {
        return misses.sum();
    }

    /** {@return origin data reads made for this account's misses} */
    public long originReads() {
        return originReads.sum();
    }

    /** {@return bytes those origin reads fetched} */
    public long originBytes() {
        return originBytes.sum();
    }

    /** {@return the time those origin reads took, summed over reads in flight at once} */
    public long originNanos() {
        return originNanos.sum();
    }
}
