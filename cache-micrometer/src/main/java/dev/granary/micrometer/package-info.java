// SPDX-License-Identifier: Apache-2.0
/**
 * Micrometer meter binders for Granary: {@link dev.granary.micrometer.TieredCacheMetrics} (tiers, origin, leases)
 * and {@link dev.granary.micrometer.DataLoaderMetrics} (data-wait as a timer and as a ratio over a window, samples,
 * batches, queue depth, this loader's own hits and origin traffic). Bind them to any {@code MeterRegistry}; the meter
 * names and their Prometheus forms are in {@code docs/observability.md}. The JFR events Granary records are described
 * there too.
 */
package dev.granary.micrometer;
