// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Where a {@link TieredCache#prestage(String, java.util.function.Consumer) prestage} stands: one immutable snapshot of
 * its counters, handed to the caller's listener, plus the prestage's cancel switch.
 *
 * <p>Counts grow from one snapshot to the next. {@link #objectsTotal()} and {@link #bytesTotal()} are {@code -1} while
 * unknown: a prefix is counted by a listing of its own that runs beside the prestage, so the totals appear once that
 * listing is done (for a list of keys, the number of objects is known at once, their bytes never ahead of time).
 *
 * <h2>Thread safety</h2>
 * The counters are immutable. {@link #cancel()} may be called from any thread, at any time, also after the prestage
 * returned (it then does nothing).
 */
public final class Progress {

    private final long objectsDone;
    private final long objectsTotal;
    private final long bytesDone;
    private final long bytesTotal;
    private final long bytesFetched;
    private final long alreadyCached;
    private final long failed;
    private final long notStaged;
    private final Duration elapsed;
    private final AtomicBoolean cancel;

    Progress(
            long objectsDone,
            long objectsTotal,
            long bytesDone,
            long bytesTotal,
            long bytesFetched,
            long alreadyCached,
            long failed,
            long notStaged,
            Duration elapsed,
            AtomicBoolean cancel) {
        this.objectsDone = objectsDone;
        this.objectsTotal = objectsTotal;
        this.bytesDone = bytesDone;
        this.bytesTotal = bytesTotal;
        this.bytesFetched = bytesFetched;
        this.alreadyCached = alreadyCached;
        this.failed = failed;
        this.notStaged = notStaged;
        this.elapsed = elapsed;
        this.cancel = cancel;
    }

    /**
     * {@return the objects finished so far: staged now, found cached already, failed, or not staged for lack of room}
     */
    public long objectsDone() {
        return objectsDone;
    }

    /** {@return the number of objects to stage, or {@code -1} while unknown} */
    public long objectsTotal() {
        return objectsTotal;
    }

    /** {@return the bytes of the objects finished so far (fetched now or found cached), failed ones excluded} */
    public long bytesDone() {
        return bytesDone;
    }

    /** {@return the bytes of all objects to stage, or {@code -1} while unknown} */
    public long bytesTotal() {
        return bytesTotal;
    }

    /** {@return the bytes brought into the staging tiers so far: read from the origin, or copied from a tier above} */
    public long bytesFetched() {
        return bytesFetched;
    }

    /** {@return the objects found wholly cached already (an earlier, interrupted prestage staged them)} */
    public long alreadyCached() {
        return alreadyCached;
    }

    /** {@return the objects that failed so far} */
    public long failed() {
        return failed;
    }

    /**
     * {@return the objects left out so far for lack of room}: once the staging tiers are full of what this prestage
     * staged, it stops fetching, and every object it reaches after that counts here (see
     * {@link PrestageResult#notStaged()})
     */
    public long notStaged() {
        return notStaged;
    }

    /** {@return the time since the prestage started} */
    public Duration elapsed() {
        return elapsed;
    }

    /** {@return the staging rate so far: {@link #bytesFetched()} per second of elapsed time; 0 at the start} */
    public double bytesPerSecond() {
        long nanos = elapsed.toNanos();
        return nanos <= 0 ? 0.0 : bytesFetched * 1e9 / nanos;
    }

    /**
     * {@return the time left at the rate so far}: from bytes when their total is known, else from objects; empty while
     * neither total is known or nothing was done yet
     */
    public Optional<Duration> eta() {
        long nanos = elapsed.toNanos();
        double left;
        if (bytesTotal >= 0 && bytesDone > 0) {
            left = (double) Math.max(0, bytesTotal - bytesDone) / bytesDone;
        } else if (objectsTotal >= 0 && objectsDone > 0) {
            left = (double) Math.max(0, objectsTotal - objectsDone) / objectsDone;
        } else {
            return Optional.empty();
        }
        return Optional.of(Duration.ofNanos((long) Math.min(Long.MAX_VALUE / 2.0, left * nanos)));
    }

    /**
     * Asks the prestage to stop: no new object or page is started, reads in flight finish, and
     * {@code prestage} returns a result with {@link PrestageResult#cancelled()} set. Idempotent.
     */
    public void cancel() {
        cancel.set(true);
    }

    /** {@return whether {@link #cancel()} was called, on this snapshot or another of the same prestage} */
    public boolean isCancelled() {
        return cancel.get();
    }

    @Override
    public String toString() {
        return "Progress[objects=" + objectsDone + "/" + (objectsTotal < 0 ? "?" : objectsTotal) + ", bytes="
                + bytesDone + "/" + (bytesTotal < 0 ? "?" : bytesTotal) + ", fetched=" + bytesFetched
                + ", alreadyCached=" + alreadyCached + ", failed=" + failed + ", notStaged=" + notStaged + ", elapsed="
                + elapsed + "]";
    }
}
