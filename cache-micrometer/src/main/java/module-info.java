// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's Micrometer binders: {@link dev.granary.micrometer.TieredCacheMetrics} and
 * {@link dev.granary.micrometer.DataLoaderMetrics} register a cache's and a loader's figures with any Micrometer
 * {@code MeterRegistry} (Prometheus, Datadog, CloudWatch, ...).
 */
@SuppressWarnings("requires-transitive-automatic")
module dev.granary.micrometer {
    requires transitive dev.granary.loader;
    requires transitive micrometer.core; // an automatic module (its manifest names it)

    exports dev.granary.micrometer;
}
