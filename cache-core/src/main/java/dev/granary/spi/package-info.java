// SPDX-License-Identifier: Apache-2.0
/**
 * The service-provider interfaces: what a tier, an origin or an eviction policy implements to plug into a
 * {@link dev.granary.TieredCache}.
 *
 * <ul>
 *   <li>{@link dev.granary.spi.Origin} — where objects live (S3, GCS, a POSIX directory).</li>
 *   <li>{@link dev.granary.spi.Tier} — a level that keeps {@link dev.granary.spi.Page pages} (memory, disk).</li>
 *   <li>{@link dev.granary.spi.Page} — a reference-counted extent of bytes in some tier's memory, identified by a
 *       {@link dev.granary.spi.PageKey} that includes the object's version.</li>
 *   <li>{@link dev.granary.spi.EvictionPolicy}, {@link dev.granary.spi.RegionPolicy} — what a tier keeps when full
 *       (page by page, or region by region).</li>
 *   <li>{@link dev.granary.spi.Workload} — what a loader tells the tiers about the epochs it drives.</li>
 * </ul>
 *
 * <p>This package holds contracts only. Code that helps implement them lives elsewhere: for origins,
 * {@code dev.granary.origin.support} (backoff, key rules, builder limits).
 *
 * <p>Every SPI states its thread-safety; all of them are called concurrently by the cache. Contract test suites for
 * implementations are in the {@code cache-core} test jar ({@code OriginContractTest}, {@code TierContractTest}).
 */
package dev.granary.spi;
