// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Tier;
import dev.granary.spi.Workload;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * A cache's epoch bookkeeping: the {@link EpochDriver}s loaders hold, the epoch clock, and the {@link Workload} the
 * tiers are told whenever an epoch starts or ends.
 *
 * <p>The rule (see {@link Workload}): while any driver is inside an epoch the cache is <em>driven</em> — fills go to
 * one tier only and hits are not promoted — and a page is live if some driver read it in its previous epoch or since.
 * A driver in its first epoch protects everything, so a warm cache reopened under a loader keeps its pages until the
 * loader has seen them once.
 *
 * <p>Thread safety: this object's monitor guards the drivers' state and the clock; {@link #driven()} is a volatile
 * read for the read path. Tiers are told under the monitor, so they see workloads in clock order.
 */
final class EpochClock {

    private final Tier[] tiers;
    private final URI originUri;
    private final List<EpochDriver> drivers = new ArrayList<>();
    private long clock;
    private boolean cacheClosed;
    /** Whether some driver is inside an epoch; read without the lock on every fill and lookup. */
    private volatile boolean driven;

    EpochClock(Tier[] tiers, URI originUri) {
        this.tiers = tiers;
        this.originUri = originUri;
    }

    /** {@return whether some driver is inside an epoch now} */
    boolean driven() {
        return driven;
    }

    synchronized EpochDriver newDriver() {
        ensureCacheOpen();
        EpochDriver driver = new EpochDriver(this);
        drivers.add(driver);
        return driver;
    }

    synchronized void start(EpochDriver driver) {
        ensureOpen(driver);
        if (driver.inEpoch) {
            throw new IllegalStateException("epoch driver of " + originUri + ": an epoch is already started"
                    + " (expected: endEpoch() before the next startEpoch())");
        }
        ensureCacheOpen();
        clock++;
        driver.previousStart = driver.currentStart;
        driver.currentStart = clock;
        driver.inEpoch = true;
        publish();
    }

    synchronized void end(EpochDriver driver) {
        ensureOpen(driver);
        if (driver.inEpoch) {
            driver.inEpoch = false;
            publish();
        }
    }

    synchronized void close(EpochDriver driver) {
        if (!driver.closed) {
            driver.closed = true;
            driver.inEpoch = false;
            drivers.remove(driver);
            publish();
        }
    }

    synchronized boolean inEpoch(EpochDriver driver) {
        return driver.inEpoch;
    }

    synchronized String describe(EpochDriver driver) {
        return driver.closed ? "closed" : driver.inEpoch ? "in epoch since clock " + driver.currentStart
                : "between epochs";
    }

    /** The cache is closing: its tiers are not told anything any more; new drivers and epochs are refused. */
    synchronized void cacheClosed() {
        cacheClosed = true;
    }

    /** Tells the tiers the new workload (see the class comment for the rule). */
    private void publish() {
        boolean anyInEpoch = false;
        long keepFrom = Long.MAX_VALUE;
        for (EpochDriver d : drivers) {
            anyInEpoch |= d.inEpoch;
            if (d.currentStart >= 0) {
                keepFrom = Math.min(keepFrom, Math.max(0, d.previousStart));
            }
        }
        Workload workload = new Workload(clock, keepFrom == Long.MAX_VALUE ? 0 : keepFrom, anyInEpoch);
        driven = anyInEpoch;
        if (cacheClosed) {
            return;
        }
        for (Tier tier : tiers) {
            tier.workload(workload);
        }
    }

    private void ensureOpen(EpochDriver driver) {
        if (driver.closed) {
            throw new IllegalStateException("epoch driver of " + originUri + " is closed (expected: an open driver"
                    + " from cache.loaderSupport().driver())");
        }
    }

    private void ensureCacheOpen() {
        if (cacheClosed) {
            throw new IllegalStateException("cache over " + originUri + " is closed (expected: an open cache)");
        }
    }
}
