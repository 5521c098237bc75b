// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.support;

import dev.granary.ObjectInfo;
import java.io.EOFException;
import java.io.InterruptedIOException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.channels.ClosedByInterruptException;
import java.time.Duration;

/**
 * The settings every remote origin's builder shares — concurrency, attempts, retry budget, timeouts, backoff —
 * validated once, with
 * the messages of the whole project ({@code "<what>: <value> (expected: <constraint>)"}), and how to tell an
 * interrupted call from a failed one. Stateless.
 */
public final class OriginLimits {

    private OriginLimits() {}

    /**
     * {@return the concurrency} if it is 1..4096
     *
     * @param maxConcurrency in-flight requests asked for
     * @throws IllegalArgumentException otherwise, naming the value
     */
    public static int maxConcurrency(int maxConcurrency) {
        if (maxConcurrency < 1 || maxConcurrency > 4096) {
            throw new IllegalArgumentException("max concurrency: " + maxConcurrency + " (expected: 1..4096)");
        }
        return maxConcurrency;
    }

    /**
     * {@return the attempts per request} if 1..100
     *
     * @param maxAttempts attempts asked for, the first included
     * @throws IllegalArgumentException otherwise, naming the value
     */
    public static int maxAttempts(int maxAttempts) {
        if (maxAttempts < 1 || maxAttempts > 100) {
            throw new IllegalArgumentException("max attempts: " + maxAttempts + " (expected: 1..100)");
        }
        return maxAttempts;
    }

    /**
     * {@return the timeout} if between 1 ms and 1 hour
     *
     * @param timeout the bound on every wait of an attempt
     * @throws IllegalArgumentException otherwise, naming the value
     */
    public static Duration requestTimeout(Duration timeout) {
        if (timeout == null
                || timeout.compareTo(Duration.ofMillis(1)) < 0
                || timeout.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("request timeout: " + timeout + " (expected: 1 ms .. 1 h)");
        }
        return timeout;
    }

    /**
     * {@return the backoff base} if between 0 and 10 s
     *
     * @param base the ceiling of the first sleep between attempts
     * @throws IllegalArgumentException otherwise, naming the value
     */
    public static Duration retryBackoff(Duration base) {
        if (base == null || base.isNegative() || base.compareTo(Duration.ofSeconds(10)) > 0) {
            throw new IllegalArgumentException("retry backoff: " + base + " (expected: 0 .. 10 s)");
        }
        return base;
    }

    /**
     * {@return the retry budget} if between 0 and 1 hour: how long one request may keep retrying (see
     * {@link RetryLoop})
     *
     * @param budget how long one request may keep retrying
     * @throws IllegalArgumentException otherwise, naming the value
     */
    public static Duration retryBudget(Duration budget) {
        if (budget == null || budget.isNegative() || budget.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("retry budget: " + budget + " (expected: 0 .. 1 h)");
        }
        return budget;
    }

    /**
     * {@return a {@link Backoff} with this base, capped at 5 s or the base if larger}
     *
     * @param base the ceiling of the first sleep
     */
    public static Backoff backoff(Duration base) {
        Duration cap = Duration.ofSeconds(5);
        return new Backoff(base, base.compareTo(cap) > 0 ? base : cap);
    }

    /**
     * {@return whether a failure means the calling thread was interrupted} (its flag is set, or the cause chain holds
     * an interruption), as opposed to a timeout or an I/O error, which are worth a retry
     *
     * @param failure what the client library threw
     */
    public static boolean isInterruption(Throwable failure) {
        if (Thread.currentThread().isInterrupted()) {
            return true;
        }
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof InterruptedException
                    || t instanceof ClosedByInterruptException
                    || (t instanceof InterruptedIOException && !(t instanceof SocketTimeoutException))) {
                return true;
            }
        }
        return false;
    }

    /**
     * {@return an exception for a call cut short by an interrupt}, with the thread's interrupt flag set again
     *
     * @param what  the request, e.g. {@code "GET"}
     * @param key   the object key (or listing prefix)
     * @param uri   the origin
     * @param cause what the client library threw
     */
    public static InterruptedIOException interrupted(String what, String key, URI uri, Throwable cause) {
        Thread.currentThread().interrupt();
        InterruptedIOException e = new InterruptedIOException(what + " of '" + key + "' in " + uri + " interrupted");
        e.initCause(cause);
        return e;
    }

    /**
     * Checks the arguments of {@link dev.granary.spi.Origin#read}: a position {@code >= 0} and a range that ends
     * within the object's known size.
     *
     * @param uri      the origin, for messages
     * @param object   the object and version being read
     * @param position the first byte asked for
     * @param length   the number of bytes asked for
     * @throws IllegalArgumentException if {@code position < 0}
     * @throws EOFException             if the range ends past the object's end
     */
    public static void checkRead(URI uri, ObjectInfo object, long position, long length) throws EOFException {
        if (position < 0) {
            throw new IllegalArgumentException("position in '" + object.key() + "': " + position + " (expected: >= 0)");
        }
        if (position > object.size() || length > object.size() - position) {
            throw new EOFException("read of '" + object.key() + "' in " + uri + " at " + position + " for " + length
                    + " bytes ends past the end of the object (size " + object.size() + ", version "
                    + object.version() + ")");
        }
    }
}
