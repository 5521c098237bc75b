// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.internal.TierCounters;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Workload;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The other processes a {@link DiskTier} shares its directory with (shared mode, {@link DiskTier.Builder#shared};
 * decision 0009), as the tier's reads ({@link DiskTier}, {@link PageChecks}) and its appender
 * ({@link SegmentAppender}) see them. Every place where sharing a directory changes what the tier does goes through
 * this seam, and nowhere else.
 *
 * <p>Two implementations. {@link #NONE}, for a tier that holds its directory alone, does nothing: each method is
 * empty, or answers as if no other process existed (no owner, no segment anyone else appends to, nothing forbidden).
 * {@link SharedPeers} follows the others through {@code granary.shared} and the segment files they append to.
 *
 * <p>The methods below group as the protocol does: the directory's change lock and the changes made under it;
 * what opening the directory finds; the rules sharing changes in eviction; following the others' appends on reads;
 * the order of header stores; and fills claimed across processes. Lock order, and which lock each method is called
 * under: {@link SegmentAppender}.
 */
interface Peers {

    /** The tier holds its directory alone: nothing to follow, coordinate or wait for. */
    Peers NONE = new Alone();

    /**
     * Opens what the tier coordinates through: for a shared tier, the directory's {@code granary.shared} (an owner
     * slot is taken); else {@link #NONE}. The caller {@linkplain #attach attaches} the tier's appender next.
     *
     * @param shared        shared mode ({@link DiskTier.Builder#shared})
     * @param fillWaitNanos how long a fill waits for another process's page ({@link DiskTier.Builder#fillWait})
     */
    static Peers open(
            boolean shared,
            Path directory,
            DiskDirectory.Access access,
            DiskIndex index,
            TierCounters counters,
            long fillWaitNanos)
            throws IOException {
        return shared ? SharedPeers.open(directory, access, index, counters, fillWaitNanos) : NONE;
    }

    /** Connects the tier's appender, whose segments are followed; once, by the tier's constructor, before any use. */
    void attach(SegmentAppender appender);

    /** {@return whether other processes see this tier's pages: shared mode} */
    boolean shared();

    // ---- the directory's change lock, and the changes made under it

    /**
     * Takes the directory's change lock, held by whoever changes the set of segment files (creates, evicts or deletes
     * one) and while a tier opens the directory; waits for another process holding it.
     *
     * @throws IOException if interrupted while waiting: not a failure of the medium
     */
    void lock() throws IOException;

    /** Lets the directory's change lock go. */
    void unlock();

    /**
     * Under {@link #lock}: makes the tier's segment list match the directory (segments other processes created or
     * evicted), deleting segment files whose creator died creating them.
     */
    void catchUpLocked();

    /**
     * {@return the number of a new segment, never used in the directory, at least {@code floor}}; under {@link #lock}
     */
    long nextSegment(long floor);

    /** {@return the owner id written into the header of every segment the tier creates; 0 for none} */
    long owner();

    /** Under {@link #lock}: the tier changed the set of segment files, and its segment list matches it now. */
    void changed();

    /**
     * The tier deleted a segment file outside {@link #lock} (a damaged one): every process, this one included, lists
     * the directory again at its next lookup.
     */
    void dropped();

    // ---- opening

    /** {@return whether another live process may still append to a segment found at open} (a scan ending on a record
     *  not yet complete is then not damage) */
    boolean appendedByAnother(Segment segment);

    /**
     * After the recovery scan, under the allocation lock and {@link #lock}: notes the owner of each segment and
     * follows those other live processes append to.
     */
    void recovered() throws IOException;

    /** {@return whether the tier may take appends again in a segment it found at open} */
    boolean mayResume(Segment segment);

    /**
     * {@return whether the segments' recency outlives a reopen}: then eviction at open asks the region policy; else
     * it takes the oldest segments first, the coarse clock of recency having started over
     */
    boolean keepsRecency();

    // ---- eviction

    /**
     * {@return the segments eviction may choose from, oldest first}: a new list, without {@code active} and without
     * any segment another live process appends to, each with its {@link Segment#lastAccess()} as eviction ranks it
     * across processes. Under the allocation lock.
     */
    List<Segment> evictable(List<Segment> segments, Segment active);

    /** {@return the workload eviction follows: this process's own, or none where the others' reads count too} */
    Workload evictionWorkload(Workload own);

    /**
     * {@return whether the capacity counts the directory's segment files}, which an eviction unlinks at once whoever
     * still maps them; else it counts the tier's own segments until their last mapping goes
     */
    boolean countsFiles();

    /** A segment leaves the tier (evicted, dropped, or gone from the directory): it is followed no more. */
    void left(Segment segment);

    // ---- reads

    /** Before a lookup: catches up with the set of segment files, if it changed (one load when it did not). */
    void catchUp();

    /** {@return whether a page may have been indexed}: after a miss, indexes the records others appended since */
    boolean caughtUpOnMiss();

    /** A hit on {@code segment}: orders it for eviction across processes. */
    void read(Segment segment);

    // ---- the order of header stores

    /** Before the tier stores the record header at {@code header}: waits until every header before it is stored. */
    void awaitTurn(Segment segment, long header);

    /** After the tier stored the record header at {@code header} (or a skip record in its place). */
    void passTurn(Segment segment, long header, int headerLength);

    // ---- fills

    /**
     * {@return a page another process filled meanwhile, or null: then the caller fills it, claimed if this
     * returned with a claim} See {@link DiskTier#awaitFill}.
     *
     * @param look a page in the tier's index now, checked and retained, or null
     */
    Page awaitFill(PageKey key, long deadlineNanos, Function<PageKey, Page> look);

    /** Ends the claim {@link #awaitFill} took for {@code key}, if it took one. */
    void fillDone(PageKey key);

    /** {@return how many fills took a page another process filled, and how many waits for one timed out} */
    long[] sharingCounts();

    /** Gives up what the tier coordinates through: the others may evict its segments now. Idempotent. */
    void close();

    /** The null object: a tier alone in its directory. */
    final class Alone implements Peers {

        private Alone() {}

        @Override
        public void attach(SegmentAppender appender) {}

        @Override
        public boolean shared() {
            return false;
        }

        @Override
        public void lock() {}

        @Override
        public void unlock() {}

        @Override
        public void catchUpLocked() {}

        @Override
        public long nextSegment(long floor) {
            return floor;
        }

        @Override
        public long owner() {
            return 0;
        }

        @Override
        public void changed() {}

        @Override
        public void dropped() {}

        @Override
        public boolean appendedByAnother(Segment segment) {
            return false;
        }

        @Override
        public void recovered() {}

        @Override
        public boolean mayResume(Segment segment) {
            return true;
        }

        @Override
        public boolean keepsRecency() {
            return false;
        }

        @Override
        public List<Segment> evictable(List<Segment> segments, Segment active) {
            List<Segment> candidates = new ArrayList<>(segments);
            candidates.remove(active);
            return candidates;
        }

        @Override
        public Workload evictionWorkload(Workload own) {
            return own;
        }

        @Override
        public boolean countsFiles() {
            return false;
        }

        @Override
        public void left(Segment segment) {}

        @Override
        public void catchUp() {}

        @Override
        public boolean caughtUpOnMiss() {
            return false;
        }

        @Override
        public void read(Segment segment) {}

        @Override
        public void awaitTurn(Segment segment, long header) {}

        @Override
        public void passTurn(Segment segment, long header, int headerLength) {}

        @Override
        public Page awaitFill(PageKey key, long deadlineNanos, Function<PageKey, Page> look) {
            return null;
        }

        @Override
        public void fillDone(PageKey key) {}

        @Override
        public long[] sharingCounts() {
            return new long[2];
        }

        @Override
        public void close() {}

        @Override
        public String toString() {
            return "Peers.NONE";
        }
    }
}
