// SPDX-License-Identifier: Apache-2.0
package dev.granary.micrometer;

import dev.granary.loader.DataLoader;
import dev.granary.loader.LoaderStats;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.lang.ref.WeakReference;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;

/**
 * Registers a {@link DataLoader}'s figures with a Micrometer registry — above all the trainer's data-wait, the one
 * figure that says whether the GPU starves: as a timer ({@code granary.loader.data.wait}: batches asked for and the
 * time spent waiting for them) and as the share of a sliding window spent waiting ({@code
 * granary.loader.data.wait.ratio}, {@link DataLoader#dataWaitRatio()}; alert on it at 0.2, page at 0.5). Also
 * samples, batches, bytes, skipped and failed samples, the prefetch queue depth, the epoch, whether the starvation
 * alarm is raised, and this loader's own tier hits, misses and origin traffic (tag {@code tier}). Every meter carries
 * the tag {@code loader} with the name given here, plus the extra tags.
 *
 * {@snippet :
 * new DataLoaderMetrics(loader, "train", Tags.empty()).bindTo(registry);
 * // Prometheus: granary_loader_data_wait_ratio{loader="train"} 0.031
 * }
 *
 * <p>The meters read {@link DataLoader#stats()} when the registry asks, nothing on the trainer's path; they hold the
 * loader weakly (a collected loader reads as {@code NaN}). The names and their Prometheus forms are listed in
 * {@code docs/observability.md}.
 *
 * <p>Thread-safe; bind once per registry.
 */
public final class DataLoaderMetrics implements MeterBinder {

    private final WeakReference<DataLoader<?>> loader;
    private final Tags tags;

    /**
     * Prepares the meters of a loader.
     *
     * @param loader the loader
     * @param name   the value of the {@code loader} tag, such as {@code "train"}
     * @param tags   more tags for every meter, such as {@code Tags.empty()}
     * @throws IllegalArgumentException if an argument is null or the name is blank
     */
    public DataLoaderMetrics(DataLoader<?> loader, String name, Iterable<Tag> tags) {
        if (loader == null) {
            throw new IllegalArgumentException("loader: null (expected: the DataLoader to observe)");
        }
        if (name == null || name.isBlank()) {
            throw new IllegalArgumentException(
                    "name: '" + name + "' (expected: a non-blank value for the loader" + " tag, such as \"train\")");
        }
        if (tags == null) {
            throw new IllegalArgumentException("tags: null (expected: Tags.empty() or more tags)");
        }
        this.loader = new WeakReference<>(loader);
        this.tags = Tags.concat(tags, "loader", name);
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        DataLoader<?> l = loader.get();
        if (l == null) {
            return;
        }
        FunctionTimer.builder(
                        "granary.loader.data.wait",
                        l,
                        x -> takes(x.stats()),
                        x -> x.stats().dataWaitNanos(),
                        TimeUnit.NANOSECONDS)
                .tags(tags)
                .description("the trainer waiting for its next batch: batches asked for, time waited")
                .register(registry);
        Gauge.builder("granary.loader.data.wait.ratio", l, DataLoader::dataWaitRatio)
                .tags(tags)
                .description("share of the loader's starvation window the trainer spent waiting for batches")
                .register(registry);
        Gauge.builder("granary.loader.starved", l, x -> x.starved() ? 1 : 0)
                .tags(tags)
                .description("1 while the starvation alarm is raised (data-wait over its threshold), else 0")
                .register(registry);
        counter(
                registry,
                l,
                "granary.loader.samples",
                tags,
                "samples handed to the trainer",
                null,
                LoaderStats::samples);
        counter(
                registry,
                l,
                "granary.loader.batches",
                tags,
                "batches handed to the trainer",
                null,
                LoaderStats::batches);
        counter(
                registry,
                l,
                "granary.loader.bytes",
                tags,
                "bytes of the samples read",
                BaseUnits.BYTES,
                LoaderStats::bytes);
        counter(
                registry,
                l,
                "granary.loader.samples.skipped",
                tags,
                "samples that failed and were skipped",
                null,
                LoaderStats::skipped);
        counter(
                registry,
                l,
                "granary.loader.samples.failed",
                tags,
                "samples that failed their batch",
                null,
                LoaderStats::failed);
        Gauge.builder("granary.loader.queue.depth", l, x -> x.stats().queueDepth())
                .tags(tags)
                .description("batches decoded and waiting for the trainer (the prefetch queue)")
                .register(registry);
        Gauge.builder("granary.loader.epoch", l, x -> x.state().epoch())
                .tags(tags)
                .description("the epoch the loader's position is in (the next one once an epoch is done)")
                .register(registry);
        List<String> tiers = l.stats().tierNames();
        for (int i = 0; i < tiers.size(); i++) {
            int tier = i;
            counter(
                    registry,
                    l,
                    "granary.loader.hits",
                    tags.and("tier", tiers.get(i)),
                    "this loader's reads the tier served",
                    null,
                    s -> s.tierHits()[tier]);
        }
        counter(
                registry,
                l,
                "granary.loader.misses",
                tags,
                "this loader's reads no tier could serve",
                null,
                LoaderStats::misses);
        counter(
                registry,
                l,
                "granary.loader.origin.requests",
                tags,
                "origin data requests this loader's misses" + " made",
                null,
                LoaderStats::originReads);
        counter(
                registry,
                l,
                "granary.loader.origin.bytes",
                tags,
                "origin bytes this loader's misses fetched",
                BaseUnits.BYTES,
                LoaderStats::originBytes);
    }

    /** Batches the trainer asked for, delivered or failed: one per data-wait. */
    private static long takes(LoaderStats s) {
        long n = 0;
        for (long d : s.depthAtTake()) {
            n += d;
        }
        return n;
    }

    private static void counter(
            MeterRegistry registry,
            DataLoader<?> l,
            String name,
            Tags tags,
            String description,
            String unit,
            ToLongFunction<LoaderStats> figure) {
        FunctionCounter.builder(name, l, x -> figure.applyAsLong(x.stats()))
                .tags(tags)
                .description(description)
                .baseUnit(unit)
                .register(registry);
    }

    @Override
    public String toString() {
        return "DataLoaderMetrics[" + tags + "]";
    }
}
