// SPDX-License-Identifier: Apache-2.0
package dev.granary.micrometer;

import dev.granary.CacheStats;
import dev.granary.TierStats;
import dev.granary.TieredCache;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.lang.ref.WeakReference;
import java.util.List;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/**
 * Registers a {@link TieredCache}'s figures with a Micrometer registry: per tier (tag {@code tier}) its hits, misses,
 * hit bytes, evictions, rejections, failures, corruptions, used and capacity bytes; the origin's data requests and
 * bytes, metadata requests, errors, retries and reads in flight; open and leaked leases and stale serves. Every meter
 * carries the tag {@code cache} with the name given here, plus the extra tags.
 *
 * {@snippet :
 * new TieredCacheMetrics(cache, "train", Tags.empty()).bindTo(registry);
 * // Prometheus: granary_cache_hits_total{cache="train",tier="memory"} 12345.0
 * }
 *
 * <p>The meters read {@link TieredCache#stats()} when the registry asks (a scrape, a push), in the manner of
 * Micrometer's {@code CaffeineCacheMetrics}: function counters and gauges, nothing on the read path. They hold the
 * cache weakly, so binding does not keep a closed and dropped cache alive; a collected cache reads as {@code NaN}.
 * The meter names and their Prometheus forms are listed in {@code docs/observability.md}.
 *
 * <p>Thread-safe; bind once per registry. The tiers are those of the cache when it is bound (a cache's tiers never
 * change).
 */
public final class TieredCacheMetrics implements MeterBinder {

    private final WeakReference<TieredCache> cache;
    private final Tags tags;

    /**
     * Prepares the meters of a cache.
     *
     * @param cache the cache
     * @param name  the value of the {@code cache} tag, such as {@code "train"}
     * @param tags  more tags for every meter, such as {@code Tags.empty()}
     * @throws IllegalArgumentException if an argument is null or the name is blank
     */
    public TieredCacheMetrics(TieredCache cache, String name, Iterable<Tag> tags) {
        if (cache == null) {
            throw new IllegalArgumentException("cache: null (expected: the TieredCache to observe)");
        }
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException(
                    "name: '" + name + "' (expected: a non-blank value for the cache tag," + " such as \"train\")");
        }
        if (tags == null) {
            throw new IllegalArgumentException("tags: null (expected: Tags.empty() or more tags)");
        }
        this.cache = new WeakReference<>(cache);
        this.tags = Tags.concat(tags, "cache", name);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        TieredCache c = cache.get();
        if (c == null) {
            return;
        }
        List<TierStats> tiers = c.stats().tiers();
        for (int i = 0; i < tiers.size(); i++) {
            int tier = i;
            Tags t = tags.and("tier", tiers.get(i).name());
            counter(
                    registry,
                    c,
                    "granary.cache.hits",
                    t,
                    "page lookups this tier served",
                    null,
                    s -> s.tiers().get(tier).hits());
            counter(
                    registry,
                    c,
                    "granary.cache.misses",
                    t,
                    "page lookups this tier could not serve",
                    null,
                    s -> s.tiers().get(tier).misses());
            counter(
                    registry,
                    c,
                    "granary.cache.hit.bytes",
                    t,
                    "bytes of the pages this tier served",
                    BaseUnits.BYTES,
                    s -> s.tiers().get(tier).hitBytes());
            counter(
                    registry,
                    c,
                    "granary.cache.evictions",
                    t,
                    "pages this tier's policy evicted",
                    null,
                    s -> s.tiers().get(tier).evictions());
            counter(
                    registry,
                    c,
                    "granary.cache.rejections",
                    t,
                    "pages this tier refused to hold",
                    null,
                    s -> s.tiers().get(tier).rejections());
            counter(
                    registry,
                    c,
                    "granary.cache.failures",
                    t,
                    "errors of this tier's medium (served as misses)",
                    null,
                    s -> s.tiers().get(tier).failures());
            counter(
                    registry,
                    c,
                    "granary.cache.corruptions",
                    t,
                    "damaged pages found and dropped (served as misses)",
                    null,
                    s -> s.tiers().get(tier).corruptions());
            gauge(
                    registry,
                    c,
                    "granary.cache.used",
                    t,
                    "bytes of this tier's capacity in use",
                    BaseUnits.BYTES,
                    s -> s.tiers().get(tier).usedBytes());
            gauge(
                    registry,
                    c,
                    "granary.cache.capacity",
                    t,
                    "this tier's capacity",
                    BaseUnits.BYTES,
                    s -> s.tiers().get(tier).capacityBytes());
        }
        counter(
                registry,
                c,
                "granary.origin.requests",
                tags,
                "data requests (ranged reads) sent to the origin",
                null,
                s -> s.origin().reads());
        counter(
                registry,
                c,
                "granary.origin.bytes",
                tags,
                "data bytes fetched from the origin",
                BaseUnits.BYTES,
                s -> s.origin().bytes());
        counter(
                registry,
                c,
                "granary.origin.metadata.requests",
                tags,
                "stat and list requests sent to the origin",
                null,
                s -> s.origin().metadataRequests());
        counter(
                registry,
                c,
                "granary.origin.errors",
                tags,
                "origin requests that failed after the origin's retries",
                null,
                s -> s.origin().errors());
        counter(
                registry,
                c,
                "granary.origin.retries",
                tags,
                "requests the origin retried on its own",
                null,
                s -> s.origin().retries());
        gauge(
                registry,
                c,
                "granary.origin.inflight",
                tags,
                "data reads in progress at the origin",
                null,
                s -> s.origin().inFlight());
        gauge(
                registry,
                c,
                "granary.cache.leases.open",
                tags,
                "leases handed out and not yet closed",
                null,
                CacheStats::openLeases);
        counter(
                registry,
                c,
                "granary.cache.leases.leaked",
                tags,
                "leases garbage collected without being closed",
                null,
                CacheStats::leakedLeases);
        counter(
                registry,
                c,
                "granary.cache.stale.serves",
                tags,
                "reads served from the last known version while the" + " origin could not be reached (stale-if-error)",
                null,
                CacheStats::staleServes);
    }

    private static void counter(
            MeterRegistry registry,
            TieredCache c,
            String name,
            Tags tags,
            String description,
            String unit,
            ToLongFunction<CacheStats> figure) {
        FunctionCounter.builder(name, c, read(figure))
                .tags(tags)
                .description(description)
                .baseUnit(unit)
                .register(registry);
    }

    private static void gauge(
            MeterRegistry registry,
            TieredCache c,
            String name,
            Tags tags,
            String description,
            String unit,
            ToLongFunction<CacheStats> figure) {
        Gauge.builder(name, c, read(figure))
                .tags(tags)
                .description(description)
                .baseUnit(unit)
                .register(registry);
    }

    /** Reads one figure of a fresh snapshot; the meter passes the cache it holds weakly. */
    private static ToDoubleFunction<TieredCache> read(ToLongFunction<CacheStats> figure) {
        return c -> figure.applyAsLong(c.stats());
    }

    @Override
    public String toString() {
        return "TieredCacheMetrics[" + tags + "]";
    }
}
