// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Page;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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
@SuppressWarnings("restricted") // MemorySegment.reinterpret: a lease's own scope (runs with --enable-native-access)
final class LeaseTracker {

    private static final System.Logger LOG = System.getLogger(LeaseTracker.class.getName());
    /** One cleaner thread for all caches: it only runs release actions of leaked leases. */
    private static final Cleaner CLEANER = Cleaner.create(
            Thread.ofPlatform().daemon().name("granary-lease-cleaner").factory());

    private static final int SAMPLE_MASK = 127;

    private final LeakDetection detection;
    private final LongAdder opened = new LongAdder();
    private final LongAdder closed = new LongAdder();
    private final LongAdder leaked = new LongAdder();
    /** The tracked leases not yet closed, so that closing the cache can name them. */
    private final Set<TrackedRelease> tracked = ConcurrentHashMap.newKeySet();

    LeaseTracker(LeakDetection detection) {
        this.detection = detection;
    }

    /** Counts a new lease and decides whether to track it; returns its tracked release, or null. */
    TrackedRelease opened(Lease lease, Page page, Guard guard) {
        opened.increment();
        boolean track = switch (detection) {
            case DISABLED -> false;
            case SAMPLED -> (ThreadLocalRandom.current().nextInt() & SAMPLE_MASK) == 0;
            case PARANOID -> true;
        };
        if (!track) {
            return null;
        }
        TrackedRelease release =
                new TrackedRelease(page, this, new LeakTrace(lease.key(), lease.offset(), lease.length()), guard);
        tracked.add(release);
        release.cleanable = CLEANER.register(lease, release);
        return release;
    }

    /** {@return whether every lease is tracked, and its zero-copy views invalidated when it closes} */
    boolean paranoid() {
        return detection == LeakDetection.PARANOID;
    }

    /**
     * Under {@link LeakDetection#PARANOID}, a view of a page's bytes that stops working when its lease closes: a
     * reader that kept the buffer past {@code close()} gets an {@link IllegalStateException} ("Already closed")
     * instead of silently reading whatever the memory holds next. Returns null where that is not possible (pages on
     * the heap, which are never reused) or not asked for.
     */
    static Guard guard(ByteBuffer view) {
        MemorySegment bytes = MemorySegment.ofBuffer(view);
        if (!bytes.isNative()) {
            return null;
        }
        Arena arena = Arena.ofShared();
        ByteBuffer guarded = bytes.reinterpret(arena, null).asReadOnly().asByteBuffer();
        return new Guard(arena, guarded);
    }

    /** A lease's view under a scope of its own, closed with the lease. */
    record Guard(Arena arena, ByteBuffer view) {
        void close() {
            try {
                arena.close();
            } catch (IllegalStateException e) {
                // another thread is inside an access of it right now: the view stays valid, the page is released
                LOG.log(
                        System.Logger.Level.WARNING,
                        "a lease's buffer was in use by another thread while the lease"
                                + " closed; close leases only after their readers are done",
                        e);
            }
        }
    }

    /**
     * Logs one warning if leases are still open when the cache closes, naming the tracked ones (every one under
     * {@link LeakDetection#PARANOID}). Their memory stays valid until each is closed.
     */
    void warnIfOpen(URI origin) {
        long open = open();
        if (open <= 0) {
            return;
        }
        List<String> named = new ArrayList<>();
        for (TrackedRelease r : tracked) {
            if (named.size() == 10) {
                named.add("…");
                break;
            }
            named.add(r.trace.getMessage());
        }
        String which = named.isEmpty()
                ? "none of them is tracked (LeakDetection." + detection + ")"
                : (detection == LeakDetection.PARANOID ? "" : "some of them, sampled: ") + String.join("; ", named);
        LOG.log(
                System.Logger.Level.WARNING,
                "cache over " + origin + " closed with " + open + " lease(s) still"
                        + " open: " + which
                        + ". Their memory is freed when each is closed; close every lease (try-with-"
                        + "resources) before the cache, or use LeakDetection.PARANOID to name them all with where they"
                        + " were made.");
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
        private final Guard guard;
        private volatile boolean explicitlyClosed;
        private Cleaner.Cleanable cleanable;

        TrackedRelease(Page page, LeaseTracker tracker, LeakTrace trace, Guard guard) {
            this.page = page;
            this.tracker = tracker;
            this.trace = trace;
            this.guard = guard;
        }

        void closeExplicitly() {
            explicitlyClosed = true;
            cleanable.clean();
        }

        @Override
        public void run() {
            tracker.tracked.remove(this);
            if (guard != null) {
                guard.close(); // before the page goes back: no view of it outlives the lease
            }
            release(page, tracker);
            if (!explicitlyClosed) {
                tracker.leaked.increment(); // after the release, so a reader of the counter sees the memory freed
                LOG.log(
                        System.Logger.Level.ERROR,
                        "LEAK: a Lease was garbage collected without close(); its memory"
                                + " is released now, but close every lease (try-with-resources). It was created here:",
                        trace);
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
