// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Waiting for what the origin answers — a page fill, a metadata request — until a deadline, the cache's read timeout
 * from the read's start: a hung origin costs a caller an {@link IOException} after the timeout, never a hang (the
 * request itself goes on until the origin gives up, on its own socket timeout).
 */
final class Deadlines {

    private Deadlines() {}

    /**
     * Waits for a result until the deadline, unwrapping failures to the exception the origin threw.
     *
     * @param future        the result
     * @param deadlineNanos when to stop waiting, on {@link System#nanoTime()}'s clock
     * @param what          what is awaited, for the messages
     * @throws IOException after the deadline, naming what was awaited and the origin; or the origin's own
     */
    static <T> T await(CompletableFuture<T> future, long deadlineNanos, Supplier<String> what) throws IOException {
        try {
            long remaining = deadlineNanos - System.nanoTime();
            return future.get(Math.max(0, remaining), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new IOException(
                    "timed out waiting for " + what.get()
                            + " from the origin (the cache's readTimeout elapsed; is the origin reachable?)",
                    e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted waiting for " + what.get() + " from the origin");
        } catch (ExecutionException e) {
            throw rethrow(e.getCause());
        }
    }

    private static IOException rethrow(Throwable cause) {
        switch (cause) {
            case IOException io -> {
                return io;
            }
            case RuntimeException re -> throw re;
            case Error err -> throw err;
            default -> {
                return new IOException(cause);
            }
        }
    }
}
