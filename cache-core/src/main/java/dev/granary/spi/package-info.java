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
 *   <li>{@link dev.granary.spi.EvictionPolicy} — what a tier keeps when full.</li>
 * </ul>
 *
 * <p>Every SPI states its thread-safety; all of them are called concurrently by the cache. Contract test suites for
 * implementations are in the {@code cache-core} test jar ({@code OriginContractTest}, {@code TierContractTest}).
 */
package dev.granary.spi;
