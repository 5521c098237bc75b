// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
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
 * <h2>Accounting</h2>
 * An object counts once it is finished: staged (every page now in a staging tier), already cached (every page was
 * there before), or failed (the first failure of one of its pages, or of its stat). An object cancelled half-way
 * counts nowhere. Counters are atomics read racily for progress and exactly at the end, once every worker has stopped.
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
    private final List<PrestageResult.Failure> failures = new ArrayList<>(); // guarded by itself
    private volatile long objectsTotal = -1;
    private volatile long bytesTotal = -1;

    /** The objects to stage: listed ones carry their version, keys are stat'ed by the worker that takes them. */
    private final Object source = new Object();
    private final Iterator<?> items; // guarded by source
    private final String sourceName;
    private boolean sourceFailed; // guarded by source
    private long listed; // guarded by source
    private long listedBytes; // guarded by source; -1 for keys, whose sizes are not known in advance

    Prestage(TieredCache cache, int from, Iterator<?> items, String sourceName, long objectsTotal,
            Consumer<Progress> listener, int concurrency, long timeoutNanos) {
        this.cache = cache;
        this.from = from;
        this.items = items;
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
        boolean interrupted = false;
        CountDownLatch finished = new CountDownLatch(workers);
        Thread counting = counter == null ? null : Thread.ofVirtual().name("granary-prestage-count").start(() ->
                count(counter));
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
        return new PrestageResult(objectsStaged.get(), bytesDone.get(), alreadyCached.get(), bytesFetched.get(), kept,
                failedCount.get(), cancel.get(), elapsed());
    }

    private Duration elapsed() {
        return Duration.ofNanos(System.nanoTime() - start);
    }

    private Progress progress() {
        return new Progress(objectsDone.get(), objectsTotal, bytesDone.get(), bytesTotal, bytesFetched.get(),
                alreadyCached.get(), failedCount.get(), elapsed(), cancel);
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
        ObjectTask task = new ObjectTask(info);
        boolean issuedAll = true;
        for (long i = 0; i < pages; i++) {
            if (cancel.get() || task.error != null) {
                issuedAll = task.error != null; // a failed object is finished; a cancelled one is not
                break;
            }
            PageKey key = cache.pageKey(info, i);
            if (cache.staged(key, from)) {
                task.counted.addAndGet(key.length());
                bytesDone.addAndGet(key.length());
                continue;
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
            OriginFetcher.Flight flight;
            try {
                flight = cache.stageFetch(info, key, from);
            } catch (RuntimeException e) {
                inFlight.release();
                task.pageDone(key, e);
                break;
            }
            flight.whenComplete((page, error) -> {
                if (page != null) {
                    page.release(); // our reference as one of the flight's joiners
                }
            });
            flight.copy().orTimeout(timeoutNanos, TimeUnit.NANOSECONDS).whenComplete((page, error) -> {
                inFlight.release();
                if (error == null && !cache.staged(key, from)) {
                    error = new IOException("no staging tier kept page " + key.offset() / cache.pageSize()
                            + " (" + cache.stagingTierNames(from) + " refused it: full, a page larger than it holds, or"
                            + " its medium failing; see the tier's stats().failures())");
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
        if (t instanceof java.util.concurrent.CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof java.util.concurrent.TimeoutException) {
            return "timed out waiting for the origin (the cache's readTimeout elapsed)";
        }
        String message = t.getMessage();
        String text = message == null ? t.getClass().getSimpleName() : t.getClass().getSimpleName() + ": " + message;
        return text.replace('\n', ' ');
    }

    /** One object's pages in flight: completes {@link #done} once every page started has finished. */
    private final class ObjectTask {
        final ObjectInfo info;
        /** Pages in flight, plus one until every page was started. */
        final AtomicInteger pending = new AtomicInteger(1);
        /** What this object added to {@link #bytesDone}, taken back if it fails or is cancelled. */
        final AtomicLong counted = new AtomicLong();
        final CompletableFuture<Void> done = new CompletableFuture<>();
        volatile boolean fetching;
        volatile Throwable error;
        volatile PageKey errorKey;

        ObjectTask(ObjectInfo info) {
            this.info = info;
        }

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
