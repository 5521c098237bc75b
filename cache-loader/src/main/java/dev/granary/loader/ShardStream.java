// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.Lease;
import dev.granary.LoaderSupport;
import dev.granary.ObjectInfo;
import dev.granary.internal.ReadAccount;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Reads an epoch's shards in large parts, ahead of the trainer, and serves its samples as slices of them: the read
 * side of a {@link StreamPlan}. A prefetcher (one virtual thread) starts the plan's parts in order of first use, each
 * as one {@link LoaderSupport#readExtent(ObjectInfo, long, int) readExtent} of the part's bytes on a virtual thread of
 * its own — so the part is cached as one unit under the cache's policy, and a part resident from the previous epoch
 * (or left by indexing) is a hit. {@link #take(int)} waits for the parts a position's sample needs and hands out the
 * sample: a zero-copy slice of its part, or, for a sample crossing a part boundary, a copy into a buffer of its own.
 *
 * <h2>Memory</h2>
 * Each part is counted from the start of its read until its last use is released: the part's lease stays open while
 * any position that uses it is neither taken-and-released nor given up, and is closed at once after that (reference
 * counting: {@link StreamPlan#uses(int)} references, one per position). Copies of crossing samples count until their
 * sample is released. A new part read starts only while fewer than {@code parallelism} are in flight and the counted
 * bytes plus the part stay within {@code budget} — except the parts the earliest position not yet taken needs, which
 * are always allowed, so the stream can never wait for memory that only its own consumer can free (with nothing
 * counted, one part larger than the budget is allowed too). So at most {@code budget} plus one sample's parts are
 * held, whatever the trainer does.
 *
 * <h2>Failures</h2>
 * A part that fails to read fails exactly the positions that use it: {@link #take(int)} throws the origin's
 * {@link IOException} as it is (so an {@link dev.granary.ObjectChangedException} stays one; it names the shard), and
 * the loader's {@link SampleException} names the sample's shard and offset. Other parts go on.
 *
 * <h2>Lifecycle and thread safety</h2>
 * {@link #start()} once; {@link #take(int)} once per position in {@code [plan.from(), plan.to())}, from any threads;
 * {@link #close()} stops the reads (interrupting those in flight), waits for their threads and closes every lease
 * still open, whatever was taken or released: after it returns the stream holds nothing. The state is guarded by this
 * object's monitor; leases are closed under it (closing never blocks).
 */
final class ShardStream implements AutoCloseable {

    private static final System.Logger LOG = System.getLogger(ShardStream.class.getName());

    private static final byte NEW = 0;
    private static final byte READING = 1;
    private static final byte READY = 2;
    private static final byte FAILED = 3;
    /** Released (every use given back), or never to be read (every position that uses it was given up). */
    private static final byte DONE = 4;

    private final ShardedDataset dataset;
    private final StreamPlan plan;
    private final int[] order;
    /** The loader's account, charged with the parts' reads (per-loader figures); null for none. */
    private final ReadAccount account;

    private final int parallelism;
    private final long budget;
    private final Thread prefetcher;
    private final Set<Thread> readers = ConcurrentHashMap.newKeySet();

    // Guarded by this.
    private final byte[] state;
    private final Lease[] leases;
    private final IOException[] failures;
    /** Uses of each part not yet given back; the part is released when it reaches 0. */
    private final int[] remaining;
    /** Positions served (a sample handed out, or a failure thrown), relative to {@code plan.from()}. */
    private final BitSet taken = new BitSet();
    /** The earliest position not yet taken. */
    private int frontier;
    /** Bytes counted against the budget: parts being read or held, and copies of crossing samples not released. */
    private long held;

    private long peakHeld;
    private int reading;
    private boolean closed;

    /**
     * @param dataset     the dataset the plan was made for
     * @param plan        a plan that {@link StreamPlan#streams() streams}
     * @param order       the order the plan was made from
     * @param parallelism part reads in flight at most, {@code >= 1} (the origin's own limit still applies)
     * @param budget      bytes counted at most, but see the class comment, {@code >= 1}
     * @param name        names the threads: the epoch, for thread dumps
     * @param account     the loader's account, charged with the parts' reads; null for none
     */
    ShardStream(
            ShardedDataset dataset,
            StreamPlan plan,
            int[] order,
            int parallelism,
            long budget,
            String name,
            ReadAccount account) {
        if (!plan.streams() || parallelism < 1 || budget < 1) {
            throw new IllegalStateException("shard stream: plan " + plan + ", parallelism " + parallelism + ", budget "
                    + budget + " (expected: a plan that streams, both >= 1)");
        }
        this.dataset = dataset;
        this.plan = plan;
        this.order = order;
        this.account = account;
        this.parallelism = parallelism;
        this.budget = budget;
        int n = plan.partCount();
        this.state = new byte[n];
        this.leases = new Lease[n];
        this.failures = new IOException[n];
        this.remaining = new int[n];
        for (int i = 0; i < n; i++) {
            remaining[i] = plan.uses(i);
        }
        this.frontier = plan.from();
        this.prefetcher =
                Thread.ofVirtual().name("granary-loader-stream-" + name).unstarted(this::prefetch);
    }

    /** Starts reading ahead. */
    void start() {
        prefetcher.start();
    }

    // --------------------------------------------------------------------------------------------- reading parts

    private void prefetch() {
        try {
            for (int i = 0; i < plan.partCount(); i++) {
                long length = length(i);
                synchronized (this) {
                    while (!closed && remaining[i] > 0 && !mayRead(i, length)) {
                        wait();
                    }
                    if (closed) {
                        return;
                    }
                    if (remaining[i] == 0) { // every position that uses it was given up
                        state[i] = DONE;
                        continue;
                    }
                    state[i] = READING;
                    reading++;
                    count(length);
                }
                read(i, length);
            }
        } catch (InterruptedException e) {
            // closed
        }
    }

    /** Whether part {@code i} may start now (see the class comment). Caller holds the monitor. */
    private boolean mayRead(int i, long length) {
        if (reading >= parallelism) {
            return false;
        }
        return held + length <= budget || held == 0 || plan.firstUse(i) <= frontier;
    }

    private void read(int i, long length) {
        int s = plan.shard(i);
        ObjectInfo shard = dataset.shardInfo(s);
        long start = ShardParts.start(plan.number(i), plan.partSize());
        Thread reader = Thread.ofVirtual().name("granary-loader-part").unstarted(() -> {
            Lease lease = null;
            IOException failure = null;
            try {
                lease = ReadAccount.call(account, () -> dataset.readShard(s, start, (int) length));
            } catch (IOException e) {
                failure = e; // as the origin said it (ObjectChangedException, …): it names the shard
            } catch (RuntimeException | Error e) {
                failure = new IOException(
                        "part " + plan.number(i) + " of shard '" + shard.key() + "' (bytes [" + start + ", "
                                + (start + length) + ")) could not be read: " + e,
                        e);
            }
            synchronized (this) {
                readers.remove(Thread.currentThread());
                Thread.interrupted(); // an interrupt from close is consumed here
                reading--;
                if (closed || remaining[i] == 0) {
                    if (lease != null) {
                        lease.close();
                    }
                    state[i] = DONE;
                    uncount(length);
                } else if (lease != null) {
                    leases[i] = lease;
                    state[i] = READY;
                } else {
                    failures[i] = failure;
                    state[i] = FAILED;
                    uncount(length);
                }
                notifyAll();
            }
        });
        readers.add(reader); // before it starts, so that close() interrupts it whenever it runs
        reader.start();
    }

    private long length(int i) {
        return ShardParts.length(
                plan.number(i), dataset.shardInfo(plan.shard(i)).size(), plan.partSize());
    }

    private void count(long bytes) {
        held += bytes;
        peakHeld = Math.max(peakHeld, held);
    }

    private void uncount(long bytes) {
        held -= bytes;
        notifyAll();
    }

    // --------------------------------------------------------------------------------------------- serving samples

    /**
     * Waits until the sample at {@code position} can be served and hands it out; release it when decoded.
     *
     * @param position a position in {@code [plan.from(), plan.to())}, each taken once
     * @return the sample, whose release gives its memory back
     * @throws IOException          if a part it needs failed to read (the origin's exception), or its fields do
     *                              not match its extent
     * @throws InterruptedIOException if the stream is closed, or the thread interrupted, while waiting
     */
    Sample take(int position) throws IOException {
        int sample = order[position];
        int length = dataset.sampleLength(sample);
        int shard = dataset.shardOf(sample);
        long start = dataset.sampleStart(sample);
        int firstPart = length == 0 ? 0 : ShardParts.partOf(start, plan.partSize());
        int parts = length == 0 ? 0 : ShardParts.partOf(start + length - 1, plan.partSize()) - firstPart + 1;
        int[] needed = new int[parts];
        for (int k = 0; k < parts; k++) {
            needed[k] = plan.indexOf(shard, firstPart + k);
        }
        IOException failure = null;
        Lease[] held = new Lease[parts];
        synchronized (this) {
            try {
                while (!closed && !settled(needed)) {
                    wait();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failure = new InterruptedIOException(
                        "interrupted while waiting for sample " + sample + " at position " + position);
            }
            // Served from here on, whatever the outcome: the frontier moves past it (see mayRead).
            markTaken(position);
            if (failure == null && closed) {
                failure = new InterruptedIOException("the epoch's shard stream is closed");
            }
            for (int k = 0; failure == null && k < parts; k++) {
                if (state[needed[k]] == FAILED) {
                    failure = failures[needed[k]];
                }
                held[k] = leases[needed[k]];
            }
            if (failure != null) {
                for (int part : needed) {
                    releaseUse(part);
                }
                throw failure;
            }
        }
        // The parts stay open while this position's uses are not given back: slice or copy outside the monitor.
        try {
            if (parts == 0) {
                return sample(sample, ByteBuffer.allocate(0), () -> {});
            }
            if (parts == 1) {
                int part = needed[0];
                ByteBuffer bytes = held[0].bytes().slice((int) (start - partStart(part)), length);
                return sample(sample, bytes, () -> releaseUse(part));
            }
            return assemble(sample, start, length, needed, held);
        } catch (IOException | RuntimeException | Error e) {
            synchronized (this) {
                for (int part : needed) {
                    releaseUse(part);
                }
            }
            throw e;
        }
    }

    /** A sample crossing parts: copied into memory of its own, counted until released; its parts are let go now. */
    private Sample assemble(int sample, long start, int length, int[] needed, Lease[] held) throws IOException {
        ByteBuffer copy = ByteBuffer.allocate(length);
        for (int k = 0; k < needed.length; k++) {
            ByteBuffer bytes = held[k].bytes();
            long partStart = partStart(needed[k]);
            int from = (int) Math.max(0, start - partStart);
            int to = (int) Math.min(bytes.capacity(), start + length - partStart);
            copy.put(copy.position(), bytes, from, to - from);
            copy.position(copy.position() + to - from);
        }
        copy.flip();
        Sample result = sample(sample, copy.asReadOnlyBuffer(), () -> {
            synchronized (this) {
                uncount(length);
            }
        });
        synchronized (this) {
            count(length);
            for (int part : needed) {
                releaseUse(part);
            }
        }
        return result;
    }

    private Sample sample(int sample, ByteBuffer extent, Runnable release) throws IOException {
        Map<String, ByteBuffer> fields = dataset.fieldsOf(sample, extent);
        return new Sample(
                dataset.key(sample), sample, dataset.source(sample), fields, dataset.wholeOf(sample, extent), release);
    }

    private long partStart(int part) {
        return ShardParts.start(plan.number(part), plan.partSize());
    }

    private boolean settled(int[] needed) {
        for (int part : needed) {
            byte s = state[part];
            if (s != READY && s != FAILED) {
                return false;
            }
        }
        return true;
    }

    /** Records that {@code position} is served, and moves the frontier. Caller holds the monitor. */
    private void markTaken(int position) {
        int from = plan.from();
        taken.set(position - from);
        if (position == frontier) {
            frontier = from + taken.nextClearBit(position - from);
            notifyAll(); // the prefetcher may be waiting for the parts the new frontier needs
        }
    }

    /** Gives back one use of {@code part}; the last one releases it. */
    private synchronized void releaseUse(int part) {
        if (--remaining[part] > 0) {
            return;
        }
        if (state[part] == READY) {
            leases[part].close();
            leases[part] = null;
            state[part] = DONE;
            uncount(length(part));
        } else if (state[part] == FAILED) {
            failures[part] = null;
            state[part] = DONE;
        } else if (state[part] == NEW) {
            notifyAll(); // the prefetcher skips it
        }
        // READING: the reader sees remaining == 0 and closes the lease when the read ends.
    }

    // --------------------------------------------------------------------------------------------- closing

    /** Stops reading, waits for the reads in flight, and closes every lease still held. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            notifyAll();
        }
        prefetcher.interrupt();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try {
            prefetcher.join(TimeUnit.SECONDS.toMillis(30));
            synchronized (this) {
                // Reads in flight end (interrupted, or done) and close their own leases under the monitor.
                while (reading > 0 && System.nanoTime() < deadline) {
                    readers.forEach(Thread::interrupt);
                    wait(10);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        int open = 0;
        synchronized (this) {
            for (int i = 0; i < leases.length; i++) {
                if (leases[i] != null) {
                    leases[i].close();
                    leases[i] = null;
                    state[i] = DONE;
                    open++;
                }
            }
            held = 0;
            if (reading > 0) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        reading + " part reads of " + dataset + " still running 30 s"
                                + " after the epoch closed: they close their leases when they end");
            }
        }
        LOG.log(
                System.Logger.Level.DEBUG,
                () -> "shard stream over " + dataset + " closed; " + plan.partCount() + " parts planned, peak held "
                        + peakHeld + " bytes");
        if (open > 0) {
            LOG.log(System.Logger.Level.TRACE, open + " part leases closed with the stream");
        }
    }

    /** {@return the threads still running: the prefetcher and the part reads} */
    List<Thread> threads() {
        List<Thread> threads = new ArrayList<>(readers);
        if (prefetcher.isAlive()) {
            threads.add(prefetcher);
        }
        return threads;
    }

    /** {@return the bytes counted against the budget now} */
    synchronized long held() {
        return held;
    }

    /** {@return the most bytes counted at once} */
    synchronized long peakHeld() {
        return peakHeld;
    }
}
