// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.support;

import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff with full jitter, for origins that retry by themselves: before attempt {@code n + 1} sleep a
 * uniformly random time in {@code [0, min(max, base × 2^(n−1))]}, with a base four times larger after throttling
 * (AWS's "full jitter", which spreads the retries of many clients hit by the same burst). Immutable and thread-safe.
 *
 * @param base the ceiling of the first sleep, {@code >= 0}
 * @param max  the largest ceiling, {@code >= base}
 */
public record Backoff(Duration base, Duration max) {

    /**
     * Validates the durations.
     *
     * @throws IllegalArgumentException if {@code base} is null or negative, or {@code max} is null or below it
     */
    public Backoff {
        if (base == null || base.isNegative()) {
            throw new IllegalArgumentException("backoff base: " + base + " (expected: >= 0)");
        }
        if (max == null || max.compareTo(base) < 0) {
            throw new IllegalArgumentException("backoff max: " + max + " (expected: >= base " + base + ")");
        }
    }

    /**
     * {@return the sleep before the attempt after {@code attempt}, drawn at random}
     *
     * @param attempt    the attempt that just failed, {@code >= 1}
     * @param throttling whether it failed because the origin asked to slow down
     */
    public Duration delay(int attempt, boolean throttling) {
        long baseNanos = throttling ? base.toNanos() * 4 : base.toNanos();
        long ceiling = Math.min(max.toNanos(), baseNanos << Math.min(Math.max(attempt, 1) - 1, 20));
        return Duration.ofNanos(ceiling <= 0 ? 0 : ThreadLocalRandom.current().nextLong(ceiling + 1));
    }

    /**
     * Sleeps {@link #delay(int, boolean)}.
     *
     * @param attempt    the attempt that just failed, {@code >= 1}
     * @param throttling whether it failed because the origin asked to slow down
     * @throws InterruptedIOException if interrupted while sleeping; the interrupt flag is set again
     */
    public void sleep(int attempt, boolean throttling) throws InterruptedIOException {
        try {
            Thread.sleep(delay(attempt, throttling));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while backing off before a retry");
        }
    }
}
