// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Tier;
import dev.granary.spi.TierSimulation;
import dev.granary.spi.Workload;
import java.net.URI;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

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

    /** The eviction views of the tiers that have one: told every workload. */
    private final Tier.Eviction[] tiers;

    private final URI originUri;
    private final List<EpochDriver> drivers = new ArrayList<>();
    private long clock;
    private boolean cacheClosed;
    /** Whether some driver is inside an epoch; read without the lock on every fill and lookup. */
    private volatile boolean driven;
    /**
     * Whether a hit below the first tier is copied up while driven (into free room or in place of a dead page, never
     * in place of a live one): from each epoch start until a read misses every tier. See {@link #promoting()}.
     */
    private volatile boolean promoting;

    EpochClock(Tier[] tiers, URI originUri) {
        this.tiers = Arrays.stream(tiers).flatMap(t -> t.eviction().stream()).toArray(Tier.Eviction[]::new);
        this.originUri = originUri;
    }

    /** {@return whether some driver is inside an epoch now} */
    boolean driven() {
        return driven;
    }

    /**
     * {@return whether, while driven, a hit in a lower tier is copied into a tier above} True from an epoch's start
     * until its first read that every tier misses. While every read of the epoch hits, the dataset is wholly in the
     * tiers (a warm restart: a disk tier full, memory empty), so free room above holds copies at no cost and the next
     * epoch reads them at memory speed. From the first miss on, room above is kept for the misses, which is what
     * holds the tiers exclusive and the hit ratio at its ceiling {@code (C_mem + C_disk) / N}; the copies made before
     * it cost at most the pages read before the first miss (about {@code D / (N - D)} for {@code D} of {@code N}
     * pages resident). See docs/decisions/0017-copy-up-into-free-room.md.
     */
    boolean promoting() {
        return promoting;
    }

    /** A read missed every tier: while driven, no more copies up until the next epoch starts. */
    void missed() {
        if (promoting && driven) {
            promoting = false;
        }
    }

    synchronized EpochDriver newDriver() {
        ensureCacheOpen();
        EpochDriver driver = new EpochDriver(this);
        drivers.add(driver);
        return driver;
    }

    synchronized void start(EpochDriver driver) {
        begin(driver, false);
    }

    private void begin(EpochDriver driver, boolean staging) {
        ensureOpen(driver);
        if (driver.inEpoch) {
            throw new IllegalStateException("epoch driver of " + originUri + ": an epoch is already started"
                    + " (expected: endEpoch() before the next startEpoch())");
        }
        ensureCacheOpen();
        clock++;
        driver.previousStart = staging ? clock : driver.currentStart;
        driver.currentStart = clock;
        driver.inEpoch = true;
        promoting = !staging;
        publish();
    }

    /**
     * Starts a prestage's "epoch": like {@link #start}, but as if the driver's previous epoch had started now too, so
     * that only pages put or read from now on are live for it and everything the tiers held before is dead (may be
     * replaced). A prestage under such a driver never evicts what it staged itself: once the staging tiers are full of
     * its own pages they refuse the next one, which the prestage reports as not staged for lack of room.
     */
    synchronized void startStaging(EpochDriver driver) {
        begin(driver, true);
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
        return driver.closed
                ? "closed"
                : driver.inEpoch ? "in epoch since clock " + driver.currentStart : "between epochs";
    }

    /** The cache is closing: its tiers are not told anything any more; new drivers and epochs are refused. */
    synchronized void cacheClosed() {
        cacheClosed = true;
    }

    /** Tells the tiers the new workload (see the class comment for the rule). */
    private void publish() {
        Workload workload = workload(clock, states());
        driven = workload.driven();
        if (cacheClosed) {
            return;
        }
        for (Tier.Eviction tier : tiers) {
            tier.workload(workload);
        }
    }

    /** One driver's part in the rule, copied: the real drivers' and a dry run's ({@link CacheSimulation}) alike. */
    record DriverState(long previousStart, long currentStart, boolean inEpoch) {}

    /**
     * The rule of the class comment: the workload the tiers are told, given the clock and every open driver's state.
     * Shared by the cache and its dry runs, so that a prediction applies the very rule the cache applies.
     */
    static Workload workload(long clock, List<DriverState> drivers) {
        boolean anyInEpoch = false;
        long keepFrom = Long.MAX_VALUE;
        for (DriverState d : drivers) {
            anyInEpoch |= d.inEpoch();
            if (d.currentStart() >= 0) {
                keepFrom = Math.min(keepFrom, Math.max(0, d.previousStart()));
            }
        }
        return new Workload(clock, keepFrom == Long.MAX_VALUE ? 0 : keepFrom, anyInEpoch);
    }

    private List<DriverState> states() {
        List<DriverState> states = new ArrayList<>(drivers.size());
        for (EpochDriver d : drivers) {
            states.add(new DriverState(d.previousStart, d.currentStart, d.inEpoch));
        }
        return states;
    }

    /**
     * What a dry run starts from, taken atomically with respect to epoch starts and ends: the clock, every open
     * driver's state (the one of {@code mine} first), and the tiers' simulations, copied while no workload changes.
     *
     * @param mine the loader's own driver
     * @throws IllegalStateException if {@code mine} or the cache is closed
     */
    synchronized Snapshot snapshot(EpochDriver mine, Supplier<List<TierSimulation>> tierSimulations) {
        ensureOpen(mine);
        ensureCacheOpen();
        if (!drivers.contains(mine)) {
            throw new IllegalArgumentException(
                    "driver: " + mine + " (expected: a driver of the cache over " + originUri + ")");
        }
        List<DriverState> others = new ArrayList<>();
        for (EpochDriver d : drivers) {
            if (d != mine) {
                others.add(new DriverState(d.previousStart, d.currentStart, d.inEpoch));
            }
        }
        return new Snapshot(
                clock,
                new DriverState(mine.previousStart, mine.currentStart, mine.inEpoch),
                List.copyOf(others),
                tierSimulations.get(),
                promoting);
    }

    /** What {@link #snapshot} copied. */
    record Snapshot(
            long clock, DriverState mine, List<DriverState> others, List<TierSimulation> tiers, boolean promoting) {}

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
