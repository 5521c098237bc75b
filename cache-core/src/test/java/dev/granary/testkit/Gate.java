// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/** A gate that origin calls wait at until the test opens it; counts how many are waiting. */
public final class Gate {

    private final CountDownLatch open = new CountDownLatch(1);
    private final AtomicInteger waiting = new AtomicInteger();

    /** Blocks until the gate is opened (or 60 s pass, to never hang a broken test forever). */
    public void pass() throws InterruptedException {
        waiting.incrementAndGet();
        try {
            if (!open.await(60, TimeUnit.SECONDS)) {
                throw new AssertionError("gate never opened");
            }
        } finally {
            waiting.decrementAndGet();
        }
    }

    public int waiting() {
        return waiting.get();
    }

    public void open() {
        open.countDown();
    }
}
