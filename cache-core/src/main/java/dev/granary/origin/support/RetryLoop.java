// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.support;

import dev.granary.internal.FlightEvents;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * The retries of one request to a remote origin: how many attempts it has made, how long it has been trying, whether
 * another attempt is allowed, the backoff before it, and the message when it gives up. Every remote origin runs its
 * requests through one of these, so that all of them retry, count and report alike:
 * {@snippet :
 * RetryLoop retry = policy.start("GET", key, uri, retries);
 * while (true) {
 *     try {
 *         return send();                        // an attempt
 *     } catch (IOException e) {
 *         if (OriginLimits.isInterruption(e)) {
 *             throw retry.interrupted(e);
 *         }
 *         if (!retryable(e)) {
 *             throw e;                          // an answer, not a fault
 *         }
 *         retry.backOff(e.toString(), e, false); // sleeps, or throws "... failed after 9 attempts over 12.3 s: ..."
 *     }
 * }
 * }
 *
 * <h2>When it gives up</h2>
 * After a failed attempt another one starts unless the request has made {@link Policy#maxAttempts()} attempts, or its
 * {@link Policy#budget()} (counted from {@link Policy#start}) is spent. The sleep before the next attempt is drawn from
 * {@link Backoff} (exponential, full jitter) and cut short to end at the budget, so the last attempt starts at the
 * latest when the budget runs out. An attempt in progress is not cut by the budget (the request timeout bounds it), so
 * a request can take up to {@code budget + one request timeout} in all; that is what a caller waiting on it, such as
 * the cache's read timeout, must allow for.
 *
 * <p>Not thread-safe: one loop per request, used by the thread that sends it. The {@link Policy} is immutable and
 * shared.
 */
public final class RetryLoop {

    /**
     * How a remote origin retries: at most {@code maxAttempts} attempts per request (the first included), no new one
     * after {@code budget}, sleeping {@code backoff} between them. Immutable and thread-safe.
     *
     * @param maxAttempts the attempts per request, 1..100
     * @param budget      how long a request may keep retrying, 0 .. 1 h (0: a failure after the first attempt is
     *                    final)
     * @param backoff     the sleep between attempts
     */
    public record Policy(int maxAttempts, Duration budget, Backoff backoff) {

        /**
         * Validates the settings.
         *
         * @throws IllegalArgumentException if {@code maxAttempts} is not 1..100, {@code budget} is null or not
         *                                  0 .. 1 h, or {@code backoff} is null
         */
        public Policy {
            OriginLimits.maxAttempts(maxAttempts);
            OriginLimits.retryBudget(budget);
            if (backoff == null) {
                throw new IllegalArgumentException("backoff: null (expected: a Backoff)");
            }
        }

        /**
         * {@return the retries of a new request}, its clock started now
         *
         * @param what    the request, e.g. {@code "GET"}, for messages
         * @param key     the object key (or listing prefix), for messages
         * @param uri     the origin, for messages
         * @param retries where to count each retry (the origin's total), or null
         */
        public RetryLoop start(String what, String key, URI uri, LongAdder retries) {
            return new RetryLoop(this, what, key, uri, retries);
        }
    }

    private final Policy policy;
    private final String what;
    private final String key;
    private final URI uri;
    private final LongAdder retries;
    private final long startNanos = System.nanoTime();
    private int attempt = 1;

    private RetryLoop(Policy policy, String what, String key, URI uri, LongAdder retries) {
        this.policy = policy;
        this.what = what;
        this.key = key;
        this.uri = uri;
        this.retries = retries;
    }

    /** {@return the attempt in progress, from 1} */
    public int attempt() {
        return attempt;
    }

    /** {@return how long this request has been trying} */
    public Duration elapsed() {
        return Duration.ofNanos(System.nanoTime() - startNanos);
    }

    /**
     * Called after attempt {@link #attempt()} failed in a way worth retrying: if another attempt is allowed, counts a
     * retry and sleeps before it; otherwise throws what the request waited for.
     *
     * @param detail     what the last attempt failed with, for the message (e.g. {@code "HTTP 503 SlowDown"})
     * @param cause      the last failure, the cause of the exception thrown
     * @param throttling whether the origin asked to slow down (a longer backoff)
     * @throws IOException            {@code "<what> of '<key>' in <uri> failed after <n> attempts over <s> s:
     *                                <detail>"} when no attempt is left
     * @throws InterruptedIOException if interrupted while sleeping; the interrupt flag is set again
     */
    public void backOff(String detail, Throwable cause, boolean throttling) throws IOException {
        long elapsed = System.nanoTime() - startNanos;
        long left = policy.budget().toNanos() - elapsed;
        if (attempt >= policy.maxAttempts() || left <= 0) {
            throw exhausted(detail, cause);
        }
        long sleep = Math.min(policy.backoff().delay(attempt, throttling).toNanos(), left);
        if (retries != null) {
            retries.increment();
        }
        FlightEvents.retried();
        try {
            TimeUnit.NANOSECONDS.sleep(sleep);
        } catch (InterruptedException e) {
            throw interrupted(e);
        }
        attempt++;
    }

    /**
     * {@return the exception for a request that is given up}, naming the attempts and the time spent:
     * {@code "<what> of '<key>' in <uri> failed after <n> attempts over <s> s: <detail>"}
     *
     * @param detail what the last attempt failed with
     * @param cause  the last failure
     */
    public IOException exhausted(String detail, Throwable cause) {
        return new IOException(what + " of '" + key + "' in " + uri + " failed " + summary() + ": " + detail, cause);
    }

    /** {@return {@code "after <n> attempt(s) over <s> s"}, what the request has waited for so far} */
    public String summary() {
        double seconds = (System.nanoTime() - startNanos) / 1e9;
        return "after " + attempt + (attempt == 1 ? " attempt" : " attempts") + " over "
                + String.format(Locale.ROOT, "%.1f", seconds) + " s";
    }

    /**
     * {@return an exception for a request cut short by an interrupt}, with the thread's interrupt flag set again
     *
     * @param cause what the client library (or the sleep) threw
     */
    public InterruptedIOException interrupted(Throwable cause) {
        return OriginLimits.interrupted(what, key, uri, cause);
    }
}
