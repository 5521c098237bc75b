// SPDX-License-Identifier: Apache-2.0
package dev.granary.internal;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.spi.Origin;
import dev.granary.spi.PageKey;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * The JDK Flight Recorder events Granary emits, and the one-line hooks by which the cache, the tiers and the loader
 * emit them. Every hook is a static call that costs a disabled check when no recording asks for the event: an event
 * object is made, {@link Event#isEnabled()} (a constant the JIT folds once JFR instruments the class) says no, and
 * the object never leaves the method, so escape analysis removes it. Nothing is recorded, timed or formatted then.
 *
 * <table>
 *   <caption>The events (category "Granary")</caption>
 *   <tr><th>name</th><th>when</th><th>fields</th></tr>
 *   <tr><td>{@code dev.granary.OriginRead}</td><td>each data read from the origin, timed</td>
 *       <td>origin, key, offset, bytes, retries, outcome</td></tr>
 *   <tr><td>{@code dev.granary.CoalescedMiss}</td><td>a miss that joined another reader's origin read of the same
 *       page or extent instead of making its own</td><td>origin, key, offset, bytes</td></tr>
 *   <tr><td>{@code dev.granary.Eviction}</td><td>a page a tier evicted</td><td>tier, key, offset, bytes</td></tr>
 *   <tr><td>{@code dev.granary.DiskRecovery}</td><td>a disk tier reopened its directory</td>
 *       <td>tier, directory, segments, pages, damagedSegments, damagedTails, took</td></tr>
 *   <tr><td>{@code dev.granary.BatchWait}</td><td>each batch the trainer asked a loader for, timed: how long it
 *       waited</td><td>loader, epoch, batch, ready, samples, failed</td></tr>
 * </table>
 *
 * <p>Record them with {@code java -XX:StartFlightRecording:filename=rec.jfr ...} (custom events are on by default
 * with no threshold) and read them with {@code jfr print --events dev.granary.OriginRead rec.jfr}. No stack traces
 * are taken: the events are about data, and a stack walk per origin read would not be free.
 *
 * <p>Thread-safe and stateless. The hooks never throw on their own; {@link #originRead} rethrows what the origin
 * threw.
 */
public final class FlightEvents {

    private FlightEvents() {}

    /** Counts the retries of the origin read in progress on this thread, while an OriginRead event records it. */
    private static final ScopedValue<int[]> RETRIES = ScopedValue.newInstance();

    @Name("dev.granary.OriginRead")
    @Label("Origin Read")
    @Category("Granary")
    @Description("A data read from the origin (a ranged GET, a file read), from the request to the last byte")
    @StackTrace(false)
    static final class OriginRead extends Event {
        @Label("Origin")
        String origin;

        @Label("Key")
        String key;

        @Label("Offset")
        @DataAmount
        long offset;

        @Label("Bytes")
        @DataAmount
        long bytes;

        @Label("Retries")
        @Description("Attempts the origin retried before this read succeeded or gave up")
        int retries;

        @Label("Outcome")
        @Description("ok, changed (the object's version is gone), missing, eof, or the failure's class")
        String outcome;
    }

    @Name("dev.granary.CoalescedMiss")
    @Label("Coalesced Miss")
    @Category("Granary")
    @Description("A miss that joined the origin read already in flight for the same page or extent")
    @StackTrace(false)
    static final class CoalescedMiss extends Event {
        @Label("Origin")
        String origin;

        @Label("Key")
        String key;

        @Label("Offset")
        @DataAmount
        long offset;

        @Label("Bytes")
        @DataAmount
        long bytes;
    }

    @Name("dev.granary.Eviction")
    @Label("Eviction")
    @Category("Granary")
    @Description("A page or extent a tier evicted to make room")
    @StackTrace(false)
    static final class Eviction extends Event {
        @Label("Tier")
        String tier;

        @Label("Key")
        String key;

        @Label("Offset")
        @DataAmount
        long offset;

        @Label("Bytes")
        @DataAmount
        long bytes;
    }

    @Name("dev.granary.DiskRecovery")
    @Label("Disk Recovery")
    @Category("Granary")
    @Description("A disk tier reopened its directory and indexed the pages an earlier run left there")
    @StackTrace(false)
    static final class DiskRecovery extends Event {
        @Label("Tier")
        String tier;

        @Label("Directory")
        String directory;

        @Label("Segments")
        int segments;

        @Label("Pages")
        long pages;

        @Label("Damaged Segments")
        int damagedSegments;

        @Label("Damaged Tails")
        int damagedTails;

        @Label("Took")
        @Timespan(Timespan.NANOSECONDS)
        long took;
    }

    @Name("dev.granary.BatchWait")
    @Label("Batch Wait")
    @Category("Granary")
    @Description("The trainer asking a loader for its next batch: the event's duration is the data-wait")
    @StackTrace(false)
    static final class BatchWait extends Event {
        @Label("Loader")
        String loader;

        @Label("Epoch")
        long epoch;

        @Label("Batch")
        long batch;

        @Label("Ready")
        @Description("Batches decoded and waiting when the trainer asked (0: it had to wait)")
        int ready;

        @Label("Samples")
        int samples;

        @Label("Failed")
        boolean failed;
    }

    /**
     * Reads from the origin as {@link Origin#read} does, recording a {@code dev.granary.OriginRead} event when one is
     * enabled (timed, with the retries the origin made through {@link dev.granary.origin.support.RetryLoop}).
     *
     * @throws IOException what {@code origin.read} threw
     */
    public static void originRead(Origin origin, ObjectInfo object, long position, MemorySegment dst)
            throws IOException {
        OriginRead event = new OriginRead();
        if (!event.isEnabled()) {
            origin.read(object, position, dst);
            return;
        }
        int[] retries = new int[1];
        String outcome = "ok";
        event.begin();
        try {
            ScopedValue.where(RETRIES, retries).call(() -> {
                origin.read(object, position, dst);
                return null;
            });
        } catch (ObjectChangedException e) {
            outcome = "changed";
            throw e;
        } catch (NoSuchObjectException e) {
            outcome = "missing";
            throw e;
        } catch (EOFException e) {
            outcome = "eof";
            throw e;
        } catch (IOException | RuntimeException | Error e) {
            outcome = e.getClass().getName();
            throw e;
        } finally {
            event.end();
            if (event.shouldCommit()) {
                event.origin = origin.uri().toString();
                event.key = object.key();
                event.offset = position;
                event.bytes = dst.byteSize();
                event.retries = retries[0];
                event.outcome = outcome;
                event.commit();
            }
        }
    }

    /** The origin read in progress on this thread is retrying: counted into its OriginRead event, if recorded. */
    public static void retried() {
        if (RETRIES.isBound()) {
            RETRIES.get()[0]++;
        }
    }

    /** A miss joined the origin read in flight for {@code key} of the origin {@code origin}. */
    public static void coalescedMiss(String origin, PageKey key) {
        CoalescedMiss event = new CoalescedMiss();
        if (event.shouldCommit()) {
            event.origin = origin;
            event.key = key.key();
            event.offset = key.offset();
            event.bytes = key.length();
            event.commit();
        }
    }

    /** {@return whether a recording takes eviction events: a tier that must look keys up to name them asks first} */
    public static boolean evictionsRecorded() {
        return new Eviction().isEnabled();
    }

    /** Tier {@code tier} evicted the page or extent {@code key}. */
    public static void evicted(String tier, PageKey key) {
        Eviction event = new Eviction();
        if (event.shouldCommit()) {
            event.tier = tier;
            event.key = key.key();
            event.offset = key.offset();
            event.bytes = key.length();
            event.commit();
        }
    }

    /**
     * Disk tier {@code tier} reopened {@code directory}.
     *
     * @param segments        segment files found
     * @param pages           pages indexed
     * @param damagedSegments segment files dropped as damaged
     * @param damagedTails    segments whose scan ended on a damaged record
     * @param took            how long it took
     */
    public static void diskRecovered(
            String tier,
            Object directory,
            int segments,
            long pages,
            int damagedSegments,
            int damagedTails,
            Duration took) {
        DiskRecovery event = new DiskRecovery();
        if (event.shouldCommit()) {
            event.tier = tier;
            event.directory = String.valueOf(directory);
            event.segments = segments;
            event.pages = pages;
            event.damagedSegments = damagedSegments;
            event.damagedTails = damagedTails;
            event.took = took.toNanos();
            event.commit();
        }
    }

    /**
     * {@return a started {@code dev.granary.BatchWait} event, or null when none is recorded} Pass it to
     * {@link #batchWaitEnd} once the trainer has its batch (or its failure).
     */
    public static Object batchWaitBegin() {
        BatchWait event = new BatchWait();
        if (!event.isEnabled()) {
            return null;
        }
        event.begin();
        return event;
    }

    /**
     * Ends and records a {@link #batchWaitBegin()} event; does nothing for null.
     *
     * @param started the event, or null
     * @param loader  the loader, as its {@code toString()} or a name
     * @param epoch   the epoch
     * @param batch   the batch's number in the epoch
     * @param ready   batches ready when the trainer asked
     * @param samples samples in the batch (0 for a failed one)
     * @param failed  whether the batch failed
     */
    public static void batchWaitEnd(
            Object started, Object loader, long epoch, long batch, int ready, int samples, boolean failed) {
        if (started instanceof BatchWait event) {
            event.end();
            if (event.shouldCommit()) {
                event.loader = String.valueOf(loader);
                event.epoch = epoch;
                event.batch = batch;
                event.ready = ready;
                event.samples = samples;
                event.failed = failed;
                event.commit();
            }
        }
    }
}
