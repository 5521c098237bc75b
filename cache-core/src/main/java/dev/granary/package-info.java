// SPDX-License-Identifier: Apache-2.0
/**
 * The cache users code against.
 *
 * <p>Start at {@link dev.granary.TieredCache}: build one over an {@link dev.granary.spi.Origin} with one or more
 * tiers, {@link dev.granary.TieredCache#read(String) read} through it, and close the {@link dev.granary.Lease} each
 * read returns. {@link dev.granary.TieredCache#stats()} gives an immutable {@link dev.granary.CacheStats} snapshot.
 * {@link dev.granary.TieredCache#prestage(String, java.util.function.Consumer)} pulls a dataset into the lower tiers
 * ahead of a job, reporting {@link dev.granary.Progress} and returning a {@link dev.granary.PrestageResult}; its engine
 * is {@code Prestage}.
 *
 * <p>Errors: {@link IllegalArgumentException} for bad arguments (the message names the value and what was expected),
 * {@link IllegalStateException} for use after close, {@link dev.granary.NoSuchObjectException},
 * {@link dev.granary.ObjectChangedException} and {@link java.io.EOFException} for what the origin says about an
 * object, other {@link java.io.IOException}s for failing or silent origins.
 *
 * <p>Inside, the read path is: {@code TieredCache} (page math, tier lookups, fills) → {@code MetadataCache} (versions
 * and their TTL, single-flight stats, stale-if-error) → {@code OriginFetcher} (each request metered, data reads
 * bounded by the concurrency limit, metadata requests on virtual threads) → the origin. A page miss goes through
 * {@code PageFlights} (one fill per page however many readers miss it), which runs fills on {@code FillThreads}; every
 * wait for the origin is bounded by the read timeout ({@code Deadlines}). {@code LeaseTracker} counts leases and finds
 * leaks.
 */
package dev.granary;
