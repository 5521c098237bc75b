// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.support;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@link RetryLoop}: the attempt cap, the time budget, counting, the give-up message and interrupts. */
@Timeout(30)
class RetryLoopTest {

    private static final URI URI_ = URI.create("s3://bucket/prefix/");

    @Test
    void theAttemptCapEndsTheLoopAndTheMessageSaysWhatItWaitedFor() throws Exception {
        LongAdder retries = new LongAdder();
        RetryLoop loop = new RetryLoop.Policy(3, Duration.ofHours(1), new Backoff(Duration.ZERO, Duration.ZERO))
                .start("GET", "k", URI_, retries);
        loop.backOff("reset", null, false);
        loop.backOff("reset", null, false);
        assertEquals(3, loop.attempt());
        IOException cause = new IOException("Connection refused");
        IOException e = assertThrows(IOException.class, () -> loop.backOff("Connection refused", cause, false));
        assertTrue(
                e.getMessage()
                        .matches("GET of 'k' in s3://bucket/prefix/ failed after 3 attempts over \\d+\\.\\d s:"
                                + " Connection refused"),
                e.getMessage());
        assertEquals(cause, e.getCause());
        assertEquals(2, retries.sum(), "retries are the attempts after the first");
    }

    @Test
    void theBudgetEndsTheLoopAndTheLastSleepIsCutToIt() throws Exception {
        LongAdder retries = new LongAdder();
        // A backoff far longer than the budget: the sleep is cut to the budget, then the loop gives up.
        RetryLoop loop = new RetryLoop.Policy(
                        100, Duration.ofMillis(300), new Backoff(Duration.ofSeconds(10), Duration.ofSeconds(10)))
                .start("HEAD", "k", URI_, retries);
        int attempts = 1;
        IOException e;
        while (true) {
            try {
                loop.backOff("HTTP 503", null, true);
                attempts++;
            } catch (IOException given) {
                e = given;
                break;
            }
        }
        assertTrue(loop.elapsed().compareTo(Duration.ofMillis(300)) >= 0, "tried for the budget: " + loop.elapsed());
        assertTrue(loop.elapsed().compareTo(Duration.ofSeconds(5)) < 0, "never slept past it: " + loop.elapsed());
        assertEquals(attempts, loop.attempt());
        assertEquals(attempts - 1, retries.sum());
        assertTrue(
                e.getMessage().startsWith("HEAD of 'k' in s3://bucket/prefix/ failed after " + attempts + " attempt"),
                e.getMessage());
        assertTrue(e.getMessage().endsWith(" s: HTTP 503"), e.getMessage());
    }

    @Test
    void aZeroBudgetMakesTheFirstFailureFinal() {
        LongAdder retries = new LongAdder();
        RetryLoop loop = new RetryLoop.Policy(5, Duration.ZERO, OriginLimits.backoff(Duration.ofMillis(50)))
                .start("GET", "k", URI_, retries);
        IOException e = assertThrows(IOException.class, () -> loop.backOff("boom", null, false));
        assertTrue(e.getMessage().contains("failed after 1 attempt over "), e.getMessage());
        assertEquals(0, retries.sum());
    }

    @Test
    void anInterruptDuringTheSleepIsAnInterruptedIOExceptionWithTheFlagSet() {
        RetryLoop loop = new RetryLoop.Policy(
                        5, Duration.ofMinutes(1), new Backoff(Duration.ofSeconds(30), Duration.ofSeconds(30)))
                .start("GET", "k", URI_, null);
        Thread.currentThread().interrupt();
        try {
            InterruptedIOException e =
                    assertThrows(InterruptedIOException.class, () -> loop.backOff("reset", null, false));
            assertTrue(e.getMessage().contains("GET of 'k'"), e.getMessage());
            assertTrue(Thread.currentThread().isInterrupted());
        } finally {
            Thread.interrupted();
        }
    }

    @Test
    void badPoliciesAreRejectedWithClearMessages() {
        Backoff backoff = OriginLimits.backoff(Duration.ofMillis(50));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> new RetryLoop.Policy(5, Duration.ofMillis(-1), backoff));
        assertEquals("retry budget: PT-0.001S (expected: 0 .. 1 h)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new RetryLoop.Policy(5, null, backoff));
        assertEquals("retry budget: null (expected: 0 .. 1 h)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new RetryLoop.Policy(0, Duration.ZERO, backoff));
        assertEquals("max attempts: 0 (expected: 1..100)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> new RetryLoop.Policy(1, Duration.ZERO, null));
        assertEquals("backoff: null (expected: a Backoff)", e.getMessage());
    }
}
