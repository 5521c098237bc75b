// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * What one epoch of a {@link DataLoader} is predicted to cost, from {@link DataLoader#plan}: how many of its reads each
 * tier serves, and what it asks of the origin. A "read" is one lookup in the cache: one page of an object read whole,
 * or one sample's extent of a shard — the unit the cache's own {@link dev.granary.TierStats} count hits and misses in,
 * so the figures compare directly with {@code cache.stats()} taken around the epoch.
 *
 * <p>Immutable and thread-safe.
 *
 * @param epoch            the epoch number
 * @param samples          the samples the epoch reads (this rank's; after a resume, those not yet handed out)
 * @param reads            the lookups the epoch makes in the cache
 * @param readBytes        the bytes of those lookups
 * @param tierHits         reads served by each tier, by tier name, in lookup order (tiers sharing a name are summed)
 * @param tierHitBytes     bytes served by each tier, by tier name, in the same order
 * @param originReads      reads the origin serves: data requests (ranged GETs over S3 and GCS)
 * @param metadataRequests requests for objects' versions (HEAD, stat) the epoch makes
 * @param originBytes      bytes read from the origin
 */
public record EpochPlan(
        long epoch,
        long samples,
        long reads,
        long readBytes,
        Map<String, Long> tierHits,
        Map<String, Long> tierHitBytes,
        long originReads,
        long metadataRequests,
        long originBytes) {

    /**
     * Validates and copies the maps.
     *
     * @throws IllegalArgumentException if a count is negative or a map is null
     */
    public EpochPlan {
        if (samples < 0 || reads < 0 || readBytes < 0 || originReads < 0 || metadataRequests < 0 || originBytes < 0) {
            throw new IllegalArgumentException("epoch plan counts: samples=" + samples + ", reads=" + reads
                    + ", readBytes=" + readBytes + ", originReads=" + originReads + ", metadataRequests="
                    + metadataRequests + ", originBytes=" + originBytes + " (expected: all >= 0)");
        }
        if (tierHits == null || tierHitBytes == null) {
            throw new IllegalArgumentException("tier hits: null (expected: a map from tier name to count)");
        }
        tierHits = Collections.unmodifiableMap(new LinkedHashMap<>(tierHits));
        tierHitBytes = Collections.unmodifiableMap(new LinkedHashMap<>(tierHitBytes));
    }

    /** {@return every request the epoch makes to the origin: data reads plus metadata requests} */
    public long originRequests() {
        return originReads + metadataRequests;
    }

    /** {@return the reads some tier serves} */
    public long hits() {
        long hits = 0;
        for (long h : tierHits.values()) {
            hits += h;
        }
        return hits;
    }

    /**
     * {@return the reads tier {@code tier} serves; 0 for a tier the cache does not have}
     *
     * @param tier a tier's name, such as {@code "memory"} or {@code "disk"}
     */
    public long hits(String tier) {
        return tierHits.getOrDefault(tier, 0L);
    }

    /** {@return the fraction of reads some tier serves, in [0, 1]; 0 for an epoch without reads} */
    public double hitRatio() {
        return reads == 0 ? 0.0 : (double) hits() / reads;
    }

    /** {@return the fraction of bytes read that some tier serves, in [0, 1]; 0 for an epoch without reads} */
    public double byteHitRatio() {
        return readBytes == 0 ? 0.0 : (double) (readBytes - originBytes) / readBytes;
    }

    /**
     * {@return what the epoch's origin requests cost at a price per 1 000 requests} Every request is priced alike,
     * metadata as data (S3 prices HEAD as GET); transfer is not included.
     *
     * @param dollarsPer1000Requests the price of 1 000 GET requests, e.g. {@code 0.0004} (S3 Standard)
     * @throws IllegalArgumentException if the price is negative, infinite or NaN
     */
    public double requestCost(double dollarsPer1000Requests) {
        if (!(dollarsPer1000Requests >= 0) || Double.isInfinite(dollarsPer1000Requests)) {
            throw new IllegalArgumentException("price per 1000 requests: " + dollarsPer1000Requests
                    + " (expected: a finite value >= 0, e.g. 0.0004)");
        }
        return originRequests() * dollarsPer1000Requests / 1000.0;
    }

    @Override
    public String toString() {
        return String.format(
                Locale.ROOT,
                "epoch %d: %d samples, %d reads, hits %s (ratio %.3f), origin %d reads + %d metadata = %d requests,"
                        + " %d bytes",
                epoch,
                samples,
                reads,
                tierHits,
                hitRatio(),
                originReads,
                metadataRequests,
                originRequests(),
                originBytes);
    }
}
