// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.TierStats;
import dev.granary.internal.TierCounters;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What a {@link DiskTier} checks before it serves a leased page ({@code docs/disk-format.md}, "Recovery" and "A
 * segment file truncated, or its device failing, while the tier runs"): the page's bytes against its CRC32C the first
 * time it is read after the tier opened (or on every read, {@link DiskTier.Verify#EVERY_READ}), its segment's file
 * length at most every {@link DiskTier.Builder#LENGTH_CHECK},
 * and a timed touch that brings a cold page in with one read. A page that fails is dropped from the index, a segment
 * whose file was truncated is dropped whole, and a fault of the medium under the mapping is a miss, never an error.
 * Thread-safe: lock-free, but for dropping a segment (the appender's allocation lock).
 */
final class PageChecks {

    /** Touching a page takes longer than this only if the kernel had to read it from the device. */
    private static final long COLD_NANOS = 20_000;

    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    /** The byte the last probe read: written so that the read is not dropped as unused. Racy by design. */
    @SuppressWarnings("unused")
    private static byte touched;

    private static final System.Logger LOG = System.getLogger(DiskTier.class.getName());

    private final String tierName;
    private final DiskIndex index;
    private final SegmentAppender appender;
    private final Peers peers;
    private final TierCounters counters;
    private final long lengthCheckNanos;
    /** {@link DiskTier.Verify#EVERY_READ}: every read is checked, not only the first after open. */
    private final boolean everyRead;

    private final AtomicBoolean corruptionLogged = new AtomicBoolean();

    PageChecks(
            String tierName,
            DiskIndex index,
            SegmentAppender appender,
            Peers peers,
            TierCounters counters,
            long lengthCheckNanos,
            boolean everyRead) {
        this.tierName = tierName;
        this.index = index;
        this.appender = appender;
        this.peers = peers;
        this.counters = counters;
        this.lengthCheckNanos = lengthCheckNanos;
        this.everyRead = everyRead;
    }

    /**
     * Checks a retained page before it is served. A page not read since the tier opened is verified against its CRC
     * by reading the file ({@link Segment#crc}), never the mapping: if the file was truncated under the tier, a mapped
     * page past its end is a {@code SIGBUS} the JVM cannot survive inside the CRC intrinsic, while a read just comes up
     * short. A verified page is probed, and its segment's file length re-checked at most every
     * {@link DiskTier.Builder#LENGTH_CHECK} (10 ms), so a segment file truncated while the tier runs is found and
     * dropped instead of faulting under readers. A fault of the medium under the mapping (an {@link InternalError} from
     * the JVM) makes the page a miss, never an error.
     *
     * @return whether the page may be served; if not, it was dropped from the index (the caller still releases it)
     */
    boolean ready(DiskPage page) {
        try {
            if (!page.verified()) {
                return verify(page);
            }
            if (everyRead) {
                // Read through the file, as the first check: a short read (a truncated file) drops the segment.
                return verify(page);
            }
            long now = System.nanoTime();
            if (!page.segment.intact(now, lengthCheckNanos)) {
                discard(
                        page.segment,
                        "its file is shorter than the " + page.segment.size + " bytes mapped (it was" + " truncated)");
                return false;
            }
            if (page.length() > 4096) {
                probe(page);
            }
            return true;
        } catch (InternalError e) {
            faulted(page, e);
            return false;
        }
    }

    /**
     * Called when touching a page's mapping faulted (here, or where {@link MemoryTier} copies it up): drops the whole
     * segment if its file was truncated, else the page, and counts it.
     */
    void faulted(DiskPage page, Throwable e) {
        if (!page.segment.intactNow()) {
            discard(
                    page.segment,
                    "its file is shorter than the " + page.segment.size + " bytes mapped (it was" + " truncated)");
            return;
        }
        appender.failed("cannot read page " + page.key() + " from " + page.segment.file, e);
        drop(page);
    }

    /**
     * Makes a cold page larger than one OS page come in with one large read rather than one 4 KiB read per fault.
     * Under {@code MADV_RANDOM} (which keeps 4 KiB samples from dragging in read-ahead) a fault reads only its own
     * 4 KiB, so a reader walking a cold 1 MiB page would wait for 256 reads one after another. Whether the page is
     * cold is asked of the kernel ({@code mincore}, one OS page, no fault); only then is it asked
     * ({@code MADV_WILLNEED}) to read the rest in one go. Until 2026-11-27 this timed a touch of the page's first byte
     * instead, which never fired: that byte's OS page is resident through its record header, and the JIT does not
     * keep {@code System.nanoTime()} ordered with a memory read (decision 0026).
     */
    private static void probe(DiskPage page) {
        // Not the payload's first OS page: it also holds the record header (read at open, by recovery) and the end of
        // the record before, so it is resident when the rest of the page is not. The first OS page wholly inside the
        // payload is shared with nothing; the page is over 4 KiB, so it exists.
        long probeAt = (page.payloadOffset + 4096) & -4096L;
        // Timed touch. The JIT drops a read whose value is unused (even a volatile one) and lets a read float above
        // System.nanoTime(): the value is stored where the JIT cannot prove nobody reads it, the full fence pins the
        // read after the first clock read, and the volatile read keeps the second one after it.
        long start = System.nanoTime();
        VarHandle.fullFence();
        touched = (byte) BYTE.getVolatile(page.segment.map, probeAt);
        if (System.nanoTime() - start > COLD_NANOS) {
            willNeed(page);
        }
    }

    /**
     * Reads a cold page in as one request and maps it in one call: {@code WILLNEED} starts one large read of the
     * whole range, {@code POPULATE_READ} waits for it and maps every page, so the reader takes no fault per 4 KiB.
     * Both are system calls: past the end of a truncated file they fail ({@code EFAULT}) rather than fault.
     */
    private static void willNeed(DiskPage page) {
        MemorySegment range = span(page);
        NativeFiles.willNeed(range);
        NativeFiles.populate(range);
    }

    /**
     * The OS pages under a page's payload. {@code madvise} refuses ({@code EINVAL}) a range that does not start on an
     * OS page boundary, and a payload follows its record header: the start is rounded down, the end up.
     */
    private static MemorySegment span(DiskPage page) {
        long from = page.payloadOffset & -4096L;
        long to = Math.min((page.payloadOffset + page.length() + 4095) & -4096L, page.segment.map.byteSize());
        return page.segment.map.asSlice(from, to - from);
    }

    /**
     * Checks a page's bytes against the CRC its record carries, reading them from the file; drops the page from the
     * index if they differ, and its whole segment if the file ends before the page does.
     */
    private boolean verify(DiskPage page) {
        int actual;
        try {
            actual = page.segment.crc(page.payloadOffset, page.length());
        } catch (EOFException e) {
            discard(page.segment, e.getMessage());
            return false;
        } catch (IOException e) {
            appender.failed("cannot read page " + page.key() + " from " + page.segment.file, e);
            drop(page);
            return false;
        }
        if (actual == page.crc) {
            if (page.verified()) {
                return true; // every read checked: the page was mapped in at its first check
            }
            page.markVerified();
            if (page.length() > 4096) {
                // The read left the page in the page cache: map it in one call, so the reader takes no fault per 4 KiB.
                NativeFiles.populate(span(page));
            }
            return true;
        }
        counters.corrupted();
        if (corruptionLogged.compareAndSet(false, true)) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + tierName + "': page " + page.key() + " in "
                            + page.segment.file
                            + " does not match its checksum; dropped and read again from below (further"
                            + " damage is counted in stats().corruptions() without a log line)");
        }
        drop(page);
        return false;
    }

    /**
     * Drops a whole segment whose file was damaged under the tier (truncated): its pages leave the index, its file is
     * deleted, and it is counted once in {@link TierStats#corruptions()}. Pages readers hold stay mapped.
     */
    private void discard(Segment segment, String why) {
        if (appender.drop(segment, true)) {
            counters.corrupted();
            LOG.log(
                    System.Logger.Level.WARNING,
                    "disk tier '" + tierName + "': dropping segment " + segment.file + ": " + why
                            + "; its pages are read again from below");
            peers.dropped();
        }
    }

    private void drop(DiskPage page) {
        index.remove(page.segment, page.record);
    }
}
