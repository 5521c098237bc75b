// SPDX-License-Identifier: Apache-2.0
package dev.granary;

/**
 * A snapshot of the cache's traffic to its origin, taken by {@link TieredCache#stats()}.
 *
 * @param reads            data requests (ranged reads) sent to the origin
 * @param bytes            data bytes fetched from the origin
 * @param metadataRequests stat and list requests
 * @param errors           requests that failed (after the origin's own retries)
 * @param retries          requests the origin retried on its own
 * @param inFlight         data reads in progress at the origin now (a gauge; at most the origin's
 *                         {@link dev.granary.spi.Origin#maxConcurrency()})
 */
public record OriginStats(long reads, long bytes, long metadataRequests, long errors, long retries, int inFlight) {

    /** A snapshot with no read in flight: the counters of an interval, or of a cache at rest. */
    public OriginStats(long reads, long bytes, long metadataRequests, long errors, long retries) {
        this(reads, bytes, metadataRequests, errors, retries, 0);
    }
}
