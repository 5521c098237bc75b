// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.PageKey;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * One run of {@link TieredCache#prestage}: pulls objects, page by page, into the cache's staging tiers.
 *
 * <h2>Threads and memory</h2>
 * {@code workers} virtual threads each take the next object from one shared source (a lazy listing or the caller's
 * key list, read under {@link #source}'s lock), look each of its pages up in the staging tiers, and start a fill for
 * every missing one through the cache's single-flight fetcher. A semaphore of {@code concurrency} permits (the
 * origin's {@code maxConcurrency}) bounds the pages in flight across all workers, so memory is at most that many pages
 * plus one object description per worker, whatever the dataset's size; a worker waits for its object's pages before it
 * takes the next object. The caller's thread only waits, and calls the listener every {@link #REPORT_NANOS}: the
 * listener is never called concurrently with itself.
 *
 * <h2>Room</h2>
 * The prestage runs under an {@link EpochDriver} of its own that protects only what it touches
 * ({@link EpochClock#startStaging}): the staging tiers may replace anything they held before, but never a page this
 * prestage staged or found, so a dataset larger than the tiers does not push its own first objects out. When the
 * staging tiers hold anything at the start, a first pass looks every object's pages up before anything is fetched
 * ({@link #protectHeld}), so that what an earlier run staged is found, not replaced by this run's first fills. Once a
 * staging tier refuses a page while its medium is healthy (no new failure counted) and its used bytes leave no room for
 * the page, the tiers are full: the prestage stops fetching, and every object it reaches after that counts as
 * {@linkplain PrestageResult#notStaged() not staged}
 * (with its bytes, so the caller can say how much room was missing). If the staging tiers evicted anything during the
 * run (old pages, or, in a directory other processes share, whatever their policy chose), the objects are looked up
 * once more at the end and only those still held count as staged.
 *
 * <h2>Accounting</h2>
 * An object counts once it is finished: staged (every page now in a staging tier), already cached (every page was
 * there before), failed (the first failure of one of its pages, or of its stat), or not staged for lack of room. An
 * object cancelled half-way counts nowhere. Counters are atomics read racily for progress and exactly at the end,
 * once every worker has stopped.
 */
final class Prestage {

    static final long REPORT_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

    private final TieredCache cache;
    private final int from;
    private final Consumer<Progress> listener;
    private final long timeoutNanos;
    private final int workers;
    private final Semaphore inFlight;
    private final AtomicBoolean cancel = new AtomicBoolean();
    private final long start = System.nanoTime();

    private final AtomicLong objectsDone = new AtomicLong();
    private final AtomicLong objectsStaged = new AtomicLong();
    private final AtomicLong bytesDone = new AtomicLong();
    private final AtomicLong bytesFetched = new AtomicLong();
    private final AtomicLong alreadyCached = new AtomicLong();
    private final AtomicLong failedCount = new AtomicLong();
    private final AtomicLong notStaged = new AtomicLong();
    private final AtomicLong bytesNotStaged = new AtomicLong();
    /** Set once a staging tier refused a page for lack of room: no object is fetched after that. */
    private final AtomicBoolean full = new AtomicBoolean();
    /** The staging tiers' medium failures when the prestage started: a refusal with no new failure means no room. */
    private long failuresAtStart;

    private final List<PrestageResult.Failure> failures = new ArrayList<>(); // guarded by itself
    private volatile long objectsTotal = -1;
    private volatile long bytesTotal = -1;

    /** The objects to stage: listed ones carry their version, keys are stat'ed by the worker that takes them. */
    private final Object source = new Object();

    private final Iterator<?> items; // guarded by source
    private final String sourceName;
    /** The same objects again, for the final look-up after evictions. */
    private final Reopen reopen;

    private boolean sourceFailed; // guarded by source
    private long listed; // guarded by source
    private long listedBytes; // guarded by source; -1 for keys, whose sizes are not known in advance

    /** Lists the objects of a prestage again: {@link ObjectInfo}s, or keys to stat. */
    @FunctionalInterface
    interface Reopen {
        Stream<?> open() throws IOException;
    }

    Prestage(
            TieredCache cache,
            int from,
            Iterator<?> items,
            Reopen reopen,
            String sourceName,
            long objectsTotal,
            Consumer<Progress> listener,
            int concurrency,
            long timeoutNanos) {
        this.cache = cache;
        this.from = from;
        this.items = items;
        this.reopen = reopen;
        this.sourceName = sourceName;
        this.objectsTotal = objectsTotal;
        this.listener = listener;
        this.timeoutNanos = timeoutNanos;
        this.workers = concurrency;
        this.inFlight = new Semaphore(concurrency);
    }

    /**
     * Runs the prestage on virtual threads and waits for it, reporting progress on this thread.
     *
     * @param counter a listing that only counts (the totals), run beside the prestage; null if the totals are known
     */
    PrestageResult run(Stream<ObjectInfo> counter) {
        try (EpochDriver driver = cache.newDriver()) {
            cache.startStaging(driver);
            failuresAtStart = cache.stagingCounts(from).failures();
            long evictionsAtStart = cache.stagingCounts(from).evictions();
            if (cache.stagingCounts(from).usedBytes() > 0 && protectHeld()) {
                if (counter != null) {
                    counter.close(); // the protecting pass counted the totals already
                }
                counter = null;
            }
            PrestageResult result = stageAll(counter);
            if (cache.stagingCounts(from).evictions() != evictionsAtStart && !result.cancelled()) {
                result = recount(result);
            }
            return result;
        }
    }

    private PrestageResult stageAll(Stream<ObjectInfo> counter) {
        boolean interrupted = false;
        CountDownLatch finished = new CountDownLatch(workers);
        Thread counting = counter == null
                ? null
                : Thread.ofVirtual().name("granary-prestage-count").start(() -> count(counter));
        RuntimeException listenerFailure = null;
        try (ExecutorService executor = Executors.newThreadPerTaskExecutor(
                Thread.ofVirtual().name("granary-prestage-", 0).factory())) {
            for (int i = 0; i < workers; i++) {
                executor.execute(() -> {
                    try {
                        work();
                    } finally {
                        finished.countDown();
                    }
                });
            }
            long next = System.nanoTime() + REPORT_NANOS;
            while (true) {
                try {
                    if (finished.await(Math.max(0, next - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                        break;
                    }
                } catch (InterruptedException e) {
                    // Interrupting the caller cancels: workers stop starting pages, reads in flight finish or time out.
                    interrupted = true;
                    cancel.set(true);
                    continue;
                }
                next = System.nanoTime() + REPORT_NANOS;
                if (listenerFailure == null) {
                    try {
                        listener.accept(progress());
                    } catch (RuntimeException e) {
                        listenerFailure = e;
                        cancel.set(true);
                    }
                }
            }
        } finally {
            if (counting != null) {
                counting.interrupt();
                try {
                    counting.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        if (listenerFailure != null) {
            throw listenerFailure;
        }
        listener.accept(progress());
        List<PrestageResult.Failure> kept;
        synchronized (failures) {
            kept = List.copyOf(failures);
        }
        return new PrestageResult(
                objectsStaged.get(),
                bytesDone.get(),
                alreadyCached.get(),
                bytesFetched.get(),
                kept,
                failedCount.get(),
                cancel.get(),
                elapsed(),
                notStaged.get(),
                bytesNotStaged.get());
    }

    /**
     * The staging tiers hold pages already: looks every object's pages up before anything is fetched, which stamps
     * those found with the prestage's epoch, so that no fill of this run replaces a page of an object it has not
     * reached yet (a second run after a first that ran out of room must find all the first one kept). Counts the
     * totals on the way. One more listing of a prefix (a LIST request per 1 000 objects on S3), or the keys' stats.
     *
     * @return whether the totals are known now (the pass reached the end)
     */
    private boolean protectHeld() {
        long n = 0;
        long bytes = 0;
        try (Stream<?> all = reopen.open()) {
            Iterator<?> it = all.iterator();
            while (it.hasNext()) {
                if (cancel.get()) {
                    return false;
                }
                Object item = it.next();
                ObjectInfo info;
                try {
                    info = item instanceof ObjectInfo listed ? listed : cache.stat((String) item);
                } catch (IOException | RuntimeException e) {
                    continue; // the staging pass meets it again and names the failure
                }
                n++;
                bytes += info.size();
                long pages = (info.size() + cache.pageSize() - 1) / cache.pageSize();
                for (long i = 0; i < pages; i++) {
                    cache.findStaged(cache.pageKey(info, i), from);
                }
            }
        } catch (IOException | RuntimeException e) {
            return false; // the staging pass lists again and reports what fails
        }
        synchronized (source) {
            objectsTotal = n;
            bytesTotal = bytes;
        }
        return true;
    }

    /**
     * The staging tiers evicted pages during the run: looks every object up again and counts as staged only those
     * whose every page is still held; the others move to {@link PrestageResult#notStaged()}. If the objects cannot be
     * listed again, the result stays as it was (what was counted was true when counted).
     */
    private PrestageResult recount(PrestageResult result) {
        long held = 0;
        long heldBytes = 0;
        try (Stream<?> again = reopen.open()) {
            Iterator<?> it = again.iterator();
            while (it.hasNext()) {
                Object item = it.next();
                ObjectInfo info;
                try {
                    info = item instanceof ObjectInfo listed ? listed : cache.stat((String) item);
                } catch (IOException | RuntimeException e) {
                    continue; // failed, and counted as failed, during the run
                }
                if (heldWhole(info)) {
                    held++;
                    heldBytes += info.size();
                }
            }
        } catch (IOException | RuntimeException e) {
            return result;
        }
        long lost = Math.max(0, result.objects() - held);
        long lostBytes = Math.max(0, result.bytes() - heldBytes);
        return new PrestageResult(
                result.objects() - lost,
                result.bytes() - lostBytes,
                Math.min(result.alreadyCached(), result.objects() - lost),
                result.bytesFetched(),
                result.failed(),
                result.failedCount(),
                result.cancelled(),
                elapsed(),
                result.notStaged() + lost,
                result.bytesNotStaged() + lostBytes);
    }

    private boolean heldWhole(ObjectInfo info) {
        long pages = (info.size() + cache.pageSize() - 1) / cache.pageSize();
        for (long i = 0; i < pages; i++) {
            if (!cache.staged(cache.pageKey(info, i), from)) {
                return false;
            }
        }
        return true;
    }

    private Duration elapsed() {
        return Duration.ofNanos(System.nanoTime() - start);
    }

    private Progress progress() {
        return new Progress(
                objectsDone.get(),
                objectsTotal,
                bytesDone.get(),
                bytesTotal,
                bytesFetched.get(),
                alreadyCached.get(),
                failedCount.get(),
                notStaged.get(),
                elapsed(),
                cancel);
    }

    /** The counting listing: sets the totals when it reaches the end; stops early when the prestage is over. */
    private void count(Stream<ObjectInfo> counter) {
        long n = 0;
        long bytes = 0;
        try (counter) {
            Iterator<ObjectInfo> it = counter.iterator();
            while (it.hasNext()) {
                if (Thread.currentThread().isInterrupted()) {
                    return;
                }
                ObjectInfo o = it.next();
                n++;
                bytes += o.size();
            }
        } catch (RuntimeException e) {
            return; // the totals stay unknown; the prestage's own listing reports what failed
        }
        synchronized (source) {
            if (objectsTotal < 0) {
                bytesTotal = bytes;
                objectsTotal = n;
            }
        }
    }

    /** {@return the next object (an ObjectInfo or a key), or null at the end, once cancelled, or after a failure} */
    private Object next() {
        synchronized (source) {
            if (sourceFailed || cancel.get()) {
                return null;
            }
            try {
                if (!items.hasNext()) {
                    // The end of the listing: the totals are exact now, whatever the counting listing got to.
                    objectsTotal = listed;
                    if (listedBytes >= 0) {
                        bytesTotal = listedBytes;
                    }
                    return null;
                }
                Object item = items.next();
                listed++;
                if (item instanceof ObjectInfo info && listedBytes >= 0) {
                    listedBytes += info.size();
                } else {
                    listedBytes = -1;
                }
                return item;
            } catch (UncheckedIOException | IllegalStateException e) {
                sourceFailed = true;
                fail(sourceName, "the listing stopped after " + objectsDone.get() + " objects: " + oneLine(e));
                return null;
            }
        }
    }

    private void work() {
        Object item;
        while ((item = next()) != null) {
            ObjectInfo info;
            if (item instanceof ObjectInfo listed) {
                info = listed;
            } else {
                String key = (String) item;
                try {
                    info = cache.stat(key);
                } catch (IOException | RuntimeException e) {
                    objectFailed(key, oneLine(e));
                    continue;
                }
            }
            stage(info);
        }
    }

    /** Stages one object's pages and waits for them; accounts the object unless cancelled half-way. */
    private void stage(ObjectInfo info) {
        long pages = (info.size() + cache.pageSize() - 1) / cache.pageSize();
        ObjectTask task = new ObjectTask();
        boolean issuedAll = true;
        for (long i = 0; i < pages; i++) {
            if (cancel.get() || task.error != null) {
                issuedAll = task.error != null; // a failed object is finished; a cancelled one is not
                break;
            }
            PageKey key = cache.pageKey(info, i);
            if (cache.findStaged(key, from)) {
                task.counted.addAndGet(key.length());
                bytesDone.addAndGet(key.length());
                continue;
            }
            if (full.get()) {
                task.noRoom = true; // the tiers are full of what this prestage staged: fetch nothing more
                break;
            }
            try {
                inFlight.acquire();
            } catch (InterruptedException e) {
                cancel.set(true);
                issuedAll = false;
                break;
            }
            if (cancel.get()) { // cancelled while this worker waited for a slot
                inFlight.release();
                issuedAll = false;
                break;
            }
            task.pending.incrementAndGet();
            task.fetching = true;
            PageFlights.Flight flight;
            try {
                flight = cache.stageFetch(info, key, from);
            } catch (RuntimeException e) {
                inFlight.release();
                task.pageDone(key, e);
                break;
            }
            // Both continuations are fire and forget: the second reports to the task, which this worker waits for.
            var _ = flight.whenComplete((page, error) -> {
                if (page != null) {
                    page.release(); // our reference as one of the flight's joiners
                }
            });
            var _ = flight.copy().orTimeout(timeoutNanos, TimeUnit.NANOSECONDS).whenComplete((page, error) -> {
                inFlight.release();
                if (error == null && !cache.staged(key, from)) {
                    if (cache.stagingCounts(from).failures() == failuresAtStart
                            && cache.stagingFull(from, key.length())) {
                        full.set(true); // refused, healthy and full: its room holds this prestage's own pages
                        task.noRoom = true;
                        task.pageRefused();
                        return;
                    } else {
                        error = new IOException("no staging tier kept page " + key.offset() / cache.pageSize() + " ("
                                + cache.stagingTierNames(from) + " refused it: a page larger than it holds, or its"
                                + " medium failing; see the tier's stats().failures())");
                    }
                }
                task.pageDone(key, error);
            });
        }
        task.issued();
        try {
            task.done.get();
        } catch (InterruptedException e) {
            cancel.set(true);
            Thread.currentThread().interrupt();
            return;
        } catch (ExecutionException e) {
            throw new AssertionError(e); // never completed exceptionally
        }
        if (task.error != null) {
            bytesDone.addAndGet(-task.counted.get());
            objectFailed(info.key(), task.errorMessage(cache));
        } else if (task.noRoom) {
            bytesDone.addAndGet(-task.counted.get());
            objectsDone.incrementAndGet();
            notStaged.incrementAndGet();
            bytesNotStaged.addAndGet(info.size());
        } else if (issuedAll) {
            objectsDone.incrementAndGet();
            objectsStaged.incrementAndGet();
            if (!task.fetching) {
                alreadyCached.incrementAndGet();
            }
        } else {
            bytesDone.addAndGet(-task.counted.get()); // cancelled half-way: the object counts nowhere
        }
    }

    private void objectFailed(String key, String reason) {
        objectsDone.incrementAndGet();
        fail(key, reason);
    }

    private void fail(String key, String reason) {
        failedCount.incrementAndGet();
        synchronized (failures) {
            if (failures.size() < PrestageResult.MAX_FAILURES_KEPT) {
                failures.add(new PrestageResult.Failure(key, reason));
            }
        }
    }

    static String oneLine(Throwable e) {
        Throwable t = e;
        if (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof TimeoutException) {
            return "timed out waiting for the origin (the cache's readTimeout elapsed)";
        }
        String message = t.getMessage();
        String text =
                message == null ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + message;
        return text.replace('\n', ' ');
    }

    /** One object's pages in flight: completes {@link #done} once every page started has finished. */
    private final class ObjectTask {
        /** Pages in flight, plus one until every page was started. */
        final AtomicInteger pending = new AtomicInteger(1);
        /** What this object added to {@link #bytesDone}, taken back if it fails or is cancelled. */
        final AtomicLong counted = new AtomicLong();

        final CompletableFuture<Void> done = new CompletableFuture<>();
        volatile boolean fetching;
        /** A page of this object found no room: the object counts as not staged. */
        volatile boolean noRoom;

        volatile Throwable error;
        volatile PageKey errorKey;

        void pageDone(PageKey key, Throwable failure) {
            if (failure != null) {
                synchronized (this) {
                    if (error == null) {
                        errorKey = key;
                        error = failure;
                    }
                }
            } else {
                counted.addAndGet(key.length());
                bytesDone.addAndGet(key.length());
                bytesFetched.addAndGet(key.length());
            }
            if (pending.decrementAndGet() == 0) {
                done.complete(null);
            }
        }

        /** A page was fetched but no staging tier had room for it: nothing of it counts. */
        void pageRefused() {
            if (pending.decrementAndGet() == 0) {
                done.complete(null);
            }
        }

        void issued() {
            if (pending.decrementAndGet() == 0) {
                done.complete(null);
            }
        }

        String errorMessage(TieredCache cache) {
            return "page " + errorKey.offset() / cache.pageSize() + ": " + oneLine(error);
        }
    }
}
