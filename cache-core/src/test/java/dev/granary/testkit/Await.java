// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waits for a condition that another thread will make true, by polling it (with {@link Thread#onSpinWait()} and
 * {@link Thread#yield()}), never by sleeping a guessed time. Fails after a generous deadline so a broken condition
 * fails the test rather than hanging it.
 */
public final class Await {

    private Await() {}

    public static void until(BooleanSupplier condition, Supplier<String> description) {
        until(condition, Duration.ofSeconds(30), description);
    }

    // Thread.yield on purpose (no sleep of a guessed time): it hands the core to the thread being waited for on a
    // 2-core machine; nothing relies on the scheduler for correctness, and the deadline bounds the wait.
    @SuppressWarnings("ThreadPriorityCheck")
    public static void until(BooleanSupplier condition, Duration timeout, Supplier<String> description) {
        long deadline = System.nanoTime() + timeout.toNanos();
        int spins = 0;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("condition not met within " + timeout + ": " + description.get());
            }
            if (++spins % 64 == 0) {
                Thread.yield();
            } else {
                Thread.onSpinWait();
            }
        }
    }
}
