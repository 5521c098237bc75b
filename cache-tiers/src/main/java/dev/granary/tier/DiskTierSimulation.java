// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.PageKey;
import dev.granary.spi.RegionPolicy;
import dev.granary.spi.TierSimulation;
import dev.granary.spi.Workload;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@link DiskTier#simulation()}: the disk tier's driven admission on a copy of its segments, without files.
 *
 * <p>Capacity is counted as the tier counts it: whole segments on disk; inside a segment, record headers grow from the
 * front and payloads from the back, aligned, by the tier's own arithmetic ({@link SegmentFormat.Names#headerLength()},
 * {@link Segment#payloadOffset}, {@link Segment#fits}), so a segment here fills with exactly the pages it fills with
 * there. The rule on top — append to the active segment; when it is full, open a new one if the capacity allows, else
 * (driven) in place of the oldest wholly dead segment, else of a mostly dead one found at the last workload change,
 * else refuse; stamp pages and segments on write and read — restates {@code SegmentAppender.makeRoom}'s driven
 * branch, its {@code publish} and {@code workload}, and {@code DiskTier.get}, over entries without bytes (a
 * {@code Segment} is a mapped file).
 * The region policy is asked {@link RegionPolicy#admit} as the tier asks it. {@code PlanVersusRunTest} holds the two
 * against each other.
 *
 * <p>Not thread-safe, as {@link TierSimulation} allows.
 */
final class DiskTierSimulation implements TierSimulation {

    /** A segment without a file. */
    static final class Seg {
        final long size;
        long headerEnd;
        long payloadStart;
        long stamp;
        final Set<Entry> pages = new LinkedHashSet<>();

        Seg(long size, long headerEnd, long payloadStart, long stamp) {
            this.size = size;
            this.headerEnd = headerEnd;
            this.payloadStart = payloadStart;
            this.stamp = stamp;
        }

        long reserve(int headerLength, int payloadLength) {
            long payload = Segment.payloadOffset(headerEnd, payloadStart, headerLength, payloadLength);
            if (payload >= 0) {
                headerEnd += headerLength;
                payloadStart = payload;
            }
            return payload;
        }

        void stamp(long clock) {
            if (stamp < clock) {
                stamp = clock;
            }
        }

        /** {@code Segment.mostlyDead}. */
        boolean mostlyDead(Workload workload) {
            long live = 0;
            long total = 0;
            for (Entry page : pages) {
                total += page.key.length();
                if (!workload.isDead(page.stamp)) {
                    live += page.key.length();
                }
            }
            return live * 2 < total;
        }
    }

    /** A page without bytes. */
    static final class Entry {
        final PageKey key;
        final Seg segment;
        long stamp;

        Entry(PageKey key, Seg segment, long stamp) {
            this.key = key;
            this.segment = segment;
            this.stamp = stamp;
        }
    }

    private final long capacity;
    private final long segmentSize;
    private final RegionPolicy policy;
    private final boolean admitting;
    private final Map<PageKey, Entry> index = new HashMap<>();
    private final List<Seg> segments = new ArrayList<>();
    private long bytesOnDisk;
    private Seg active;
    private Workload workload;
    private List<Seg> sparse = List.of();

    DiskTierSimulation(
            long capacity,
            long segmentSize,
            RegionPolicy policy,
            boolean admitting,
            long bytesOnDisk,
            Workload workload) {
        this.capacity = capacity;
        this.segmentSize = segmentSize;
        this.policy = policy;
        this.admitting = admitting;
        this.bytesOnDisk = bytesOnDisk;
        this.workload = workload;
    }

    /** Copies one live segment, oldest first; {@code active} if appends go to it. */
    Seg addSegment(long size, long headerEnd, long payloadStart, long stamp, boolean isActive) {
        Seg seg = new Seg(size, headerEnd, payloadStart, stamp);
        segments.add(seg);
        if (isActive) {
            active = seg;
        }
        return seg;
    }

    /** Copies one page of a segment copied before. */
    void addPage(PageKey key, Seg segment, long stamp) {
        Entry entry = new Entry(key, segment, stamp);
        if (index.putIfAbsent(key, entry) == null) {
            segment.pages.add(entry);
        }
    }

    @Override
    public boolean get(PageKey key) {
        Entry entry = index.get(key);
        if (entry == null) {
            return false;
        }
        long stamp = workload.clock();
        entry.segment.stamp(stamp);
        entry.stamp = stamp;
        return true;
    }

    @Override
    public boolean put(PageKey key) {
        if (index.containsKey(key)) {
            return true;
        }
        int length = key.length();
        int headerLength = SegmentFormat.Names.of(key).headerLength();
        if (headerLength > SegmentFormat.MAX_RECORD_HEADER || !Segment.fits(segmentSize, headerLength, length)) {
            return false;
        }
        if (!policy.admit(key, length)) {
            return false;
        }
        Seg segment = reserve(headerLength, length);
        if (segment == null) {
            return false;
        }
        Entry entry = new Entry(key, segment, workload.clock());
        index.put(key, entry);
        segment.pages.add(entry);
        segment.stamp(entry.stamp);
        return true;
    }

    private Seg reserve(int headerLength, int length) {
        if (!admitting) {
            return null;
        }
        if (active != null && active.reserve(headerLength, length) >= 0) {
            return active;
        }
        active = null;
        Workload w = workload;
        while (bytesOnDisk + segmentSize > capacity) {
            if (segments.isEmpty() || !w.driven()) {
                return null; // undriven, the region policy would choose a victim: not modelled (see the SPI)
            }
            Seg victim = null;
            for (Seg candidate : segments) {
                if (w.isDead(candidate.stamp)) {
                    victim = candidate;
                    break;
                }
            }
            if (victim == null) {
                for (Seg candidate : sparse) {
                    if (segments.contains(candidate)) {
                        victim = candidate;
                        break;
                    }
                }
            }
            if (victim == null) {
                return null;
            }
            evict(victim);
        }
        Seg fresh = new Seg(segmentSize, SegmentFormat.SEGMENT_HEADER, segmentSize, 0);
        bytesOnDisk += segmentSize;
        fresh.stamp(w.clock());
        segments.add(fresh);
        active = fresh;
        fresh.reserve(headerLength, length);
        return fresh;
    }

    private void evict(Seg segment) {
        segments.remove(segment);
        if (segment == active) {
            active = null;
        }
        for (Entry page : segment.pages) {
            index.remove(page.key, page);
        }
        segment.pages.clear();
        bytesOnDisk -= segment.size;
    }

    @Override
    public void workload(Workload workload) {
        this.workload = workload;
        List<Seg> found = new ArrayList<>();
        if (workload.driven()) {
            for (Seg segment : segments) {
                if (segment != active && !workload.isDead(segment.stamp) && segment.mostlyDead(workload)) {
                    found.add(segment);
                }
            }
        }
        this.sparse = List.copyOf(found);
    }

    @Override
    public String toString() {
        return "DiskTierSimulation[segments=" + segments.size() + ", pages=" + index.size() + ", bytes=" + bytesOnDisk
                + "/" + capacity + ", " + workload + "]";
    }
}
