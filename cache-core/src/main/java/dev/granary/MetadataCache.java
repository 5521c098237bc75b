// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Tier;
import java.io.IOException;
import java.util.Iterator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * The versions the cache has seen, each trusted for the metadata TTL after it was last confirmed by the origin.
 *
 * <p>Concurrent lookups of an expired or unknown key make one {@code stat} (single flight). When the origin cannot be
 * asked and an earlier version is known, that version is served again (stale-if-error), counted and logged once per
 * outage; when none is known the error propagates.
 *
 * <p>Memory is bounded: past {@code capacity} entries, expired ones are dropped first, then arbitrary ones (they are
 * simply asked for again); the first time, a warning says so.
 *
 * <p>Thread safety: all methods are safe from any thread.
 */
final class MetadataCache {

    private static final System.Logger LOG = System.getLogger(MetadataCache.class.getName());

    /**
     * One known version of an object. Besides the version, it remembers the first tier's page 0 of the object (a
     * hint): a hit on page 0 then only asks the tier to {@linkplain Tier.Hints#touch confirm} that page, instead of
     * looking its key up again. The hint belongs to this version only; a new version is a new entry without one.
     */
    static final class Known {
        final ObjectInfo info;
        /** {@code info.size()}, read on every hit without a second dependent load. */
        final long size;

        final long confirmedAt;
        /** The first tier's {@linkplain Tier.Hints#hint hint} for page 0 of this version, or null. */
        volatile Object hint;

        Known(ObjectInfo info, long confirmedAt, Object hint) {
            this.info = info;
            this.size = info.size();
            this.confirmedAt = confirmedAt;
            this.hint = hint;
        }
    }

    private final OriginFetcher fetcher;
    private final long ttlNanos;
    private final int capacity;
    private final LongSupplier ticker;
    private final long timeoutNanos;
    private final ConcurrentHashMap<String, Known> entries = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, CompletableFuture<Known>> inflight = new ConcurrentHashMap<>();
    private final LongAdder staleServes = new LongAdder();
    private final AtomicBoolean outageLogged = new AtomicBoolean();
    private final AtomicBoolean capacityLogged = new AtomicBoolean();

    MetadataCache(OriginFetcher fetcher, long ttlNanos, int capacity, LongSupplier ticker, long timeoutNanos) {
        this.timeoutNanos = timeoutNanos;
        this.fetcher = fetcher;
        this.ttlNanos = ttlNanos;
        this.capacity = capacity;
        this.ticker = ticker;
    }

    /**
     * Returns the object's current version as far as the TTL allows, asking the origin when it has expired and waiting
     * for it at most the read timeout.
     *
     * @throws NoSuchObjectException if the origin says the object does not exist
     * @throws IOException           if the origin cannot be asked and no earlier version is known
     */
    Known get(String key) throws IOException {
        Known entry = entries.get(key);
        if (entry != null && ticker.getAsLong() - entry.confirmedAt < ttlNanos) {
            return entry;
        }
        long deadlineNanos = System.nanoTime() + timeoutNanos;
        CompletableFuture<Known> mine = new CompletableFuture<>();
        CompletableFuture<Known> flight = inflight.putIfAbsent(key, mine);
        if (flight == null) {
            flight = mine;
            try {
                // A flight that ended between our look and our registration has left a fresh entry: asking the
                // origin again would make two stats of one lookup burst (SingleFlightStressTest caught it).
                Known fresh = entries.get(key);
                mine.complete(
                        fresh != null && ticker.getAsLong() - fresh.confirmedAt < ttlNanos
                                ? fresh
                                : revalidate(key, deadlineNanos));
            } catch (IOException | RuntimeException | Error e) {
                mine.completeExceptionally(e);
            } finally {
                inflight.remove(key, mine);
            }
        }
        return Deadlines.await(flight, deadlineNanos, () -> "the metadata of '" + key + "'");
    }

    private Known revalidate(String key, long deadlineNanos) throws IOException {
        ObjectInfo info;
        try {
            info = fetcher.stat(key, deadlineNanos);
        } catch (NoSuchObjectException e) {
            entries.remove(key);
            throw e;
        } catch (IOException e) {
            Known known = entries.get(key);
            if (known == null) {
                throw e;
            }
            staleServes.increment();
            if (outageLogged.compareAndSet(false, true)) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "cannot revalidate '" + key + "' at " + fetcher.originUri()
                                + ": serving the last known versions of cached objects until the origin answers again"
                                + " (stale-if-error; counted in CacheStats.staleServes)",
                        e);
            }
            // Trust the known version for one more TTL, so an outage costs one failed stat per key and TTL rather
            // than one per read.
            Known again = new Known(known.info, ticker.getAsLong(), known.hint);
            entries.put(key, again);
            return again;
        }
        outageLogged.set(false);
        return observe(info);
    }

    /** Records a version the origin just reported (a stat, or a listing); a confirmed version keeps its hint. */
    Known observe(ObjectInfo info) {
        Known previous = entries.get(info.key());
        Object hint = previous != null && previous.info.equals(info) ? previous.hint : null;
        Known known = new Known(info, ticker.getAsLong(), hint);
        entries.put(info.key(), known);
        if (entries.size() > capacity) {
            shrink();
        }
        return known;
    }

    /**
     * {@return what is known of a key without asking anyone, or null} For dry runs: {@code fresh} says whether a read
     * now would trust it without a stat.
     */
    Peeked peek(String key) {
        Known entry = entries.get(key);
        return entry == null ? null : new Peeked(entry.info, ticker.getAsLong() - entry.confirmedAt < ttlNanos);
    }

    /** A version known to the cache, and whether it is still within the TTL. */
    record Peeked(ObjectInfo info, boolean fresh) {}

    /** {@return the TTL, in nanoseconds} */
    long ttlNanos() {
        return ttlNanos;
    }

    /** Forgets what is known of a key, so the next read asks the origin. */
    void forget(String key) {
        entries.remove(key);
    }

    long staleServes() {
        return staleServes.sum();
    }

    private void shrink() {
        if (capacityLogged.compareAndSet(false, true)) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "the versions of more than " + capacity + " objects of "
                            + fetcher.originUri()
                            + " are known: dropping the expired, then arbitrary others, so the next"
                            + " read of each asks the origin again (a stat). Raise TieredCache.Builder.metadataCapacity"
                            + " if the application reads that many objects by key within the metadata TTL (listed"
                            + " loader datasets do not need it); this is logged once");
        }
        long now = ticker.getAsLong();
        entries.values().removeIf(e -> now - e.confirmedAt >= ttlNanos);
        int target = capacity - capacity / 10;
        Iterator<String> it = entries.keySet().iterator();
        while (entries.size() > target && it.hasNext()) {
            it.next();
            it.remove();
        }
    }
}
