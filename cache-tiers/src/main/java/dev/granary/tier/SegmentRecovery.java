// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The scan that reopens a disk tier's segments: maps every segment file, oldest first, checks its header, and reads
 * its record headers back ({@code docs/disk-format.md}, "Recovery"). Damaged segments are deleted, leftovers of an
 * interrupted creation removed; what it finds is handed back for the tier to index. Used once, by the thread opening
 * the tier, under its directory lock.
 */
final class SegmentRecovery {

    private static final System.Logger LOG = System.getLogger(DiskTier.class.getName());

    /**
     * A segment that checked out, with the records its scan accepted, in file order.
     *
     * @param expectedMore an estimate of the records still to come in the segments not yet scanned (this segment's
     *                     count for each of them), so the index can grow once instead of by halves; 0 for the last
     */
    record Recovered(Segment segment, SegmentFormat.Records records, long expectedMore) {}

    /**
     * What the scan found.
     *
     * @param segments        the segments to index, oldest first
     * @param files           segment files found
     * @param nextId          above every segment number found
     * @param damagedSegments segment files deleted because their header was damaged
     * @param dropped         what damage made the scan drop, per segment
     */
    record Result(
            List<Recovered> segments, int files, long nextId, int damagedSegments, List<DiskTier.Dropped> dropped) {

        /** {@return the segments whose scan ended on a record that is not valid} */
        int damagedTails() {
            return (int) dropped.stream().filter(d -> !d.wholeSegment()).count();
        }
    }

    /** Called as a segment is mapped, before it can be freed: the tier counts mappings and bytes on disk. */
    interface Mapped {
        void mapped(Segment segment);
    }

    private final Path segmentsDirectory;
    private final String tierName;
    private final Consumer<Segment> onFree;
    private final Mapped onMapped;
    private final Consumer<Segment> advise;
    private final Runnable corrupted;
    private final Predicate<Segment> appending;

    /**
     * @param onFree    the tier's callback when a segment's last reference goes
     * @param onMapped  the tier's accounting of a newly mapped segment
     * @param advise    applies the tier's access advice to a mapping, before the scan touches it
     * @param corrupted counts one damaged segment or tail
     */
    SegmentRecovery(
            Path segmentsDirectory,
            String tierName,
            Consumer<Segment> onFree,
            Mapped onMapped,
            Consumer<Segment> advise,
            Runnable corrupted) {
        this(segmentsDirectory, tierName, onFree, onMapped, advise, corrupted, segment -> false);
    }

    /**
     * @param appending whether another live process may still be appending to a segment (shared directories): a scan
     *                  of it that ends on a record not yet complete is not damage
     */
    SegmentRecovery(
            Path segmentsDirectory,
            String tierName,
            Consumer<Segment> onFree,
            Mapped onMapped,
            Consumer<Segment> advise,
            Runnable corrupted,
            Predicate<Segment> appending) {
        this.appending = appending;
        this.segmentsDirectory = segmentsDirectory;
        this.tierName = tierName;
        this.onFree = onFree;
        this.onMapped = onMapped;
        this.advise = advise;
        this.corrupted = corrupted;
    }

    /**
     * Maps and scans every segment file, oldest first, handing each segment with its records to {@code indexer} as
     * soon as it is scanned (so only one segment's records are held at a time: the records passed are reused for
     * the next segment once {@code indexer} returns); the result lists the segments without their records.
     */
    Result scan(Consumer<Recovered> indexer) throws IOException {
        TreeMap<Long, Path> found = new TreeMap<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(segmentsDirectory)) {
            for (Path entry : entries) {
                String fileName = entry.getFileName().toString();
                long id = DiskDirectory.parseId(fileName);
                if (id >= 0) {
                    found.put(id, entry);
                } else if (DiskDirectory.isTemporarySegment(fileName)) {
                    Files.delete(entry); // a segment whose creation was interrupted
                } else {
                    throw DiskDirectory.segmentEntryRefused(segmentsDirectory, fileName);
                }
            }
        }
        int damagedSegments = 0;
        List<DiskTier.Dropped> dropped = new ArrayList<>();
        long nextId = 0;
        List<Recovered> recovered = new ArrayList<>();
        SegmentFormat.Records records = new SegmentFormat.Records(); // one segment's at a time, reused
        int left = found.size();
        for (var e : found.entrySet()) {
            left--;
            long id = e.getKey();
            Path file = e.getValue();
            nextId = Math.max(nextId, id + 1);
            long size = Files.size(file);
            Segment segment = null;
            String damage;
            if (size < SegmentFormat.SEGMENT_HEADER || size > (1L << 40)) {
                damage = "size " + size + " is not that of a segment";
            } else {
                segment = Segment.map(id, file, size, onFree, null);
                onMapped.mapped(segment);
                advise.accept(segment); // before the scan touches it: no read-ahead into payloads
                damage = SegmentFormat.checkSegmentHeader(segment.map, id, size);
            }
            if (damage != null) {
                damagedSegments++;
                corrupted.run();
                LOG.log(
                        System.Logger.Level.WARNING,
                        "disk tier '" + tierName + "': deleting damaged segment " + file + ": " + damage);
                if (segment != null) {
                    // Its records, counted before the file goes: what a verify reports as not vouched for.
                    SegmentFormat.Beyond lost = SegmentFormat.countBeyond(
                            segment.map,
                            id,
                            new SegmentFormat.ScanEnd(SegmentFormat.SEGMENT_HEADER - 8, size, 0, damage));
                    dropped.add(new DiskTier.Dropped(file, damage, true, lost.pages(), lost.bytes()));
                    segment.kill(true);
                    segment.release();
                } else {
                    dropped.add(new DiskTier.Dropped(file, damage, true, 0, 0));
                    Files.delete(file);
                }
                continue;
            }
            Segment s = segment;
            records.clear();
            SegmentFormat.ScanEnd end = SegmentFormat.scan(
                    s.map,
                    id,
                    SegmentFormat.SEGMENT_HEADER,
                    s.map.byteSize(),
                    0,
                    records,
                    position -> readAhead(s, position));
            if (end.damage() != null && !appending.test(s)) { // else a record being written by a live process
                SegmentFormat.Beyond beyond = SegmentFormat.countBeyond(s.map, id, end);
                dropped.add(new DiskTier.Dropped(file, end.damage(), false, beyond.pages(), beyond.bytes()));
                corrupted.run();
                LOG.log(
                        System.Logger.Level.WARNING,
                        "disk tier '" + tierName + "': segment " + file + " ends in a"
                                + " record that is not valid (" + end.damage() + ")"
                                + (beyond.pages() == 0
                                        ? ", a torn write with nothing after it"
                                        : "; " + beyond.pages() + " pages after it are"
                                                + " dropped and will be read again from the origin"));
            }
            // The generation is used only if appends resume here: above every generation in the file, including
            // records a crash may have left beyond the scan's end (which the scan cannot see): seconds since 2020
            // grow across restarts.
            s.cursors(end.headerEnd(), end.payloadStart(), Math.max(end.generation() + 1, (int)
                    Math.min(Integer.MAX_VALUE, (System.currentTimeMillis() - 1_577_836_800_000L) / 1000)));
            recovered.add(new Recovered(s, null, 0));
            // Indexed now: one segment's records in memory at a time.
            indexer.accept(new Recovered(s, records, (long) records.size * left));
        }
        return new Result(recovered, found.size(), nextId, damagedSegments, dropped);
    }

    /** The header scan reads on under {@code MADV_RANDOM}: ask for the next megabyte of headers in one request. */
    private static void readAhead(Segment segment, long position) {
        long from = position & -4096L;
        NativeFiles.willNeed(segment.map.asSlice(from, Math.min(1L << 20, segment.map.byteSize() - from)));
    }
}
