// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Page;
import java.lang.ref.Cleaner;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;

/**
 * Counts a cache's open leases and, for the leases it samples, notices the ones that are garbage collected without
 * being closed (Netty's {@code ResourceLeakDetector} idea): it logs where the lease was created and releases its
 * memory, so a leak costs a log line rather than pinned memory forever.
 *
 * <p>Thread safety: all methods are safe from any thread. A tracked lease's release runs exactly once, either from
 * {@link Lease#close()} or from the cleaner thread.
 */
final class LeaseTracker {

    private static final System.Logger LOG = System.getLogger(LeaseTracker.class.getName());
    /** One cleaner thread for all caches: it only runs release actions of leaked leases. */
    private static final Cleaner CLEANER = Cleaner.create(Thread.ofPlatform().daemon().name("granary-lease-cleaner")
            .factory());
    private static final int SAMPLE_MASK = 127;

    private final LeakDetection detection;
    private final LongAdder opened = new LongAdder();
    private final LongAdder closed = new LongAdder();
    private final LongAdder leaked = new LongAdder();

    LeaseTracker(LeakDetection detection) {
        this.detection = detection;
    }

    /** Counts a new lease and decides whether to track it; returns its tracked release, or null. */
    TrackedRelease opened(Lease lease, Page page) {
        opened.increment();
        boolean track = switch (detection) {
            case DISABLED -> false;
            case SAMPLED -> (ThreadLocalRandom.current().nextInt() & SAMPLE_MASK) == 0;
            case PARANOID -> true;
        };
        if (!track) {
            return null;
        }
        TrackedRelease release = new TrackedRelease(page, this, new LeakTrace(lease.key(), lease.offset(),
                lease.length()));
        release.cleanable = CLEANER.register(lease, release);
        return release;
    }

    /** Releases an untracked lease's page and counts the close. Never throws. */
    static void release(Page page, LeaseTracker tracker) {
        try {
            if (page != null) {
                page.release();
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "releasing " + page + " failed; this is a bug in Granary", e);
        } finally {
            tracker.closed.increment();
        }
    }

    long open() {
        // Read closed first: a lease counted in closed was counted in opened before, so the difference never dips
        // below zero under concurrency.
        long c = closed.sum();
        return opened.sum() - c;
    }

    long leaked() {
        return leaked.sum();
    }

    /** The release action of a tracked lease. Must not reference the lease, or it would never become unreachable. */
    static final class TrackedRelease implements Runnable {

        private final Page page;
        private final LeaseTracker tracker;
        private final LeakTrace trace;
        private volatile boolean explicitlyClosed;
        private Cleaner.Cleanable cleanable;

        TrackedRelease(Page page, LeaseTracker tracker, LeakTrace trace) {
            this.page = page;
            this.tracker = tracker;
            this.trace = trace;
        }

        void closeExplicitly() {
            explicitlyClosed = true;
            cleanable.clean();
        }

        @Override
        public void run() {
            release(page, tracker);
            if (!explicitlyClosed) {
                tracker.leaked.increment(); // after the release, so a reader of the counter sees the memory freed
                LOG.log(System.Logger.Level.ERROR, "LEAK: a Lease was garbage collected without close(); its memory"
                        + " is released now, but close every lease (try-with-resources). It was created here:", trace);
            }
        }
    }

    /** Where a tracked lease was created; logged if it leaks. */
    static final class LeakTrace extends Throwable {

        private static final long serialVersionUID = 1L;

        LeakTrace(String key, long offset, int length) {
            super("lease of '" + key + "' [" + offset + ", +" + length + ") created", null, false, true);
        }
    }
}
