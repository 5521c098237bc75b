package dev.granary;

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
 * simply asked for again).
 *
 * <p>Thread safety: all methods are safe from any thread.
 */
final class MetadataCache {

    private static final System.Logger LOG = System.getLogger(MetadataCache.class.getName());

    private record Entry(ObjectInfo info, long confirmedAt) {}

    private final OriginFetcher fetcher;
    private final long ttlNanos;
    private final int capacity;
    private final LongSupplier ticker;
    private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, CompletableFuture<ObjectInfo>> inflight = new ConcurrentHashMap<>();
    private final LongAdder staleServes = new LongAdder();
    private final AtomicBoolean outageLogged = new AtomicBoolean();

    MetadataCache(OriginFetcher fetcher, long ttlNanos, int capacity, LongSupplier ticker) {
        this.fetcher = fetcher;
        this.ttlNanos = ttlNanos;
        this.capacity = capacity;
        this.ticker = ticker;
    }

    /**
     * Returns the object's current version as far as the TTL allows, asking the origin when it has expired.
     *
     * @throws NoSuchObjectException if the origin says the object does not exist
     * @throws IOException           if the origin cannot be asked and no earlier version is known
     */
    ObjectInfo get(String key, long deadlineNanos) throws IOException {
        Entry entry = entries.get(key);
        if (entry != null && ticker.getAsLong() - entry.confirmedAt < ttlNanos) {
            return entry.info;
        }
        CompletableFuture<ObjectInfo> mine = new CompletableFuture<>();
        CompletableFuture<ObjectInfo> flight = inflight.putIfAbsent(key, mine);
        if (flight == null) {
            flight = mine;
            try {
                mine.complete(revalidate(key, deadlineNanos));
            } catch (IOException | RuntimeException | Error e) {
                mine.completeExceptionally(e);
            } finally {
                inflight.remove(key, mine);
            }
        }
        return OriginFetcher.await(flight, deadlineNanos, () -> "the metadata of '" + key + "'");
    }

    private ObjectInfo revalidate(String key, long deadlineNanos) throws IOException {
        ObjectInfo info;
        try {
            info = fetcher.stat(key, deadlineNanos);
        } catch (NoSuchObjectException e) {
            entries.remove(key);
            throw e;
        } catch (IOException e) {
            Entry known = entries.get(key);
            if (known == null) {
                throw e;
            }
            staleServes.increment();
            if (outageLogged.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.WARNING, "cannot revalidate '" + key + "' at " + fetcher.originUri()
                        + ": serving the last known versions of cached objects until the origin answers again"
                        + " (stale-if-error; counted in CacheStats.staleServes)", e);
            }
            // Trust the known version for one more TTL, so an outage costs one failed stat per key and TTL rather
            // than one per read.
            entries.put(key, new Entry(known.info, ticker.getAsLong()));
            return known.info;
        }
        outageLogged.set(false);
        observe(info);
        return info;
    }

    /** Records a version the origin just reported (a stat, or a listing). */
    void observe(ObjectInfo info) {
        entries.put(info.key(), new Entry(info, ticker.getAsLong()));
        if (entries.size() > capacity) {
            shrink();
        }
    }

    /** Forgets what is known of a key, so the next read asks the origin. */
    void forget(String key) {
        entries.remove(key);
    }

    long staleServes() {
        return staleServes.sum();
    }

    private void shrink() {
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
