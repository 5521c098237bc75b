// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.TierStats;
import dev.granary.internal.ByteSizes;
import dev.granary.internal.FlightEvents;
import dev.granary.internal.TierCounters;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.RegionPolicy;
import dev.granary.spi.Tier;
import dev.granary.spi.Workload;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * The local-disk tier (L3): pages appended into memory-mapped segment files, kept across restarts and crashes, each
 * verified by its CRC32C before it is served.
 *
 * {@snippet :
 * Tier disk = DiskTier.builder()
 *         .directory(Path.of("/nvme/granary"))   // created 0700 if missing; locked against other processes
 *         .capacity(500L << 30)                   // bytes of segment files on disk: a hard bound
 *         .build();                               // recovers what an earlier run left there
 * }
 *
 * <h2>Layout and recovery</h2>
 * Pages are appended log-structured into fixed-size segment files ({@link Builder#segmentSize}, by default chosen from
 * the capacity, up to 64 MiB), each mapped with FFM (sparse but for its header area, decision 0014). Every page has a
 * record header naming it completely (origin, key, object version, extent) with the CRC32C of its bytes. Opening a
 * directory scans the record headers of every segment and rebuilds the index; pages are served again only under their
 * exact {@link PageKey}, so only for object versions the origin still reports. A page's bytes are checked against its
 * CRC the first time it is read after opening: a mismatch is a miss, counted in {@link TierStats#corruptions()}, and
 * the page is dropped. Only then: bytes changed in a segment file after a page's first read are served as they are,
 * until the tier is reopened (re-verifying every hit would cost several times the hit). The format is described in
 * {@code docs/disk-format.md}.
 *
 * <h2>Crashes</h2>
 * A record header is written after its payload and ends with its own CRC, and a scan stops at the first header that
 * is not valid; so a process killed at any moment leaves a directory that opens without error and never serves a torn
 * page. Nothing is {@code fsync}ed on the read path: after a power loss, recently written pages may be lost, and any
 * that reached the disk torn fail their CRC.
 *
 * <h2>Capacity and eviction</h2>
 * The bytes of segment files on disk never exceed the capacity: a new segment is created only after enough whole
 * segments were evicted, chosen by the {@link RegionPolicy} (default {@link SegmentLruPolicy}). An evicted segment's
 * file is deleted once no reader holds a page of it; until then it still counts, and if readers hold so much that
 * nothing can be evicted, pages are refused rather than the bound exceeded.
 *
 * <h2>Failures</h2>
 * If a segment cannot be created (a full disk: less free room than a segment, an I/O error) or a write fails (a disk
 * that filled up after the segment was created: segment files are sparse, decision 0014), the tier stops admitting
 * pages, logs once, counts it in {@link TierStats#failures()} and {@link #failure()}, and tries again after
 * {@link Builder#retryAfter}; pages it holds keep being served, and the cache reads what it misses from the next tier
 * or the origin.
 *
 * <p>A segment file truncated while the tier runs (or a device failing under the mapping) is found when a page of it
 * is first verified (verification reads the file, not the mapping), by a length check of its segment every 10 ms
 * on hits, or when the tier's own access faults; the segment is then dropped and the read is a miss. Copies the cache
 * makes from a damaged mapping fail as {@link IOException}s. A zero-copy lease, though, is a view of the mapping
 * itself: a reader touching it after its file was truncated gets an {@link InternalError} from the JVM, as with
 * Lucene's {@code MMapDirectory}. Never truncate a running tier's files ({@code docs/disk-format.md}).
 *
 * <h2>Sharing</h2>
 * By default one tier holds a directory: it is locked ({@code flock} on the directory itself; {@code granary.lock}
 * names the holder) against a second tier in this or any other process, which gets a {@link DirectoryInUseException}
 * naming the holder (a job can catch it to fall back to a scratch directory). With {@link Builder#shared}, any number
 * of processes on the host open it at once: each sees the
 * pages the others write at its next miss, the capacity bounds the whole directory, eviction is least recently used
 * across processes and never takes a segment a live process appends to, concurrent misses of one page read the origin
 * once ({@link #awaitFill}), and a process killed at any moment leaves the others running
 * ({@code docs/disk-format.md}, "Shared directories").
 *
 * <h2>Safety</h2>
 * The directory is {@code 0700} and files are {@code 0600} (or {@code 2770}/{@code 0660} for a
 * {@linkplain Builder#group group}); file names are segment numbers, never derived from object keys.
 *
 * <h2>Thread safety</h2>
 * All methods are safe from any thread. Hits take no lock; appends reserve their place under one lock and copy
 * outside it.
 */
public final class DiskTier implements Tier, Tier.Sharing, Tier.Eviction, Tier.Durability {

    private final String name;
    private final Path directory;
    private final DirectoryLock lock;
    /** The pages on disk, in primitive arrays ({@link DiskIndex}); page objects exist only while leased. */
    private final DiskIndex index = new DiskIndex();

    private final TierCounters counters = new TierCounters();
    /** The other processes sharing the directory ({@link Builder#shared}), or {@link Peers#NONE}. */
    private final Peers peers;
    /** The segments, and everything that writes into them or evicts them. */
    private final SegmentAppender appender;
    /** What a leased page passes before it is served. */
    private final PageChecks checks;

    private final Recovery recovery;
    /**
     * Scratch mode ({@link Builder#deleteOnClose}); and whether this tier made the directory (then it may remove it).
     */
    private final boolean deleteOnClose;

    private final boolean createdDirectory;

    private DiskTier(Builder b, long segmentSize) throws IOException {
        this.name = b.name;
        this.directory = b.directory.toAbsolutePath().normalize();
        this.deleteOnClose = b.deleteOnClose;
        DiskDirectory.Access access = new DiskDirectory.Access(b.group);
        this.createdDirectory = !Files.exists(directory, LinkOption.NOFOLLOW_LINKS);
        DiskDirectory.prepare(directory, access);
        this.lock = DirectoryLock.acquire(directory, b.shared, access);
        try {
            this.peers = Peers.open(b.shared, directory, access, index, counters, b.fillWait.toNanos());
        } catch (IOException | RuntimeException | Error e) {
            lock.close();
            throw e;
        }
        Path segments = directory.resolve(DiskDirectory.SEGMENTS);
        this.appender = new SegmentAppender(
                this,
                name,
                segments,
                access,
                new SegmentAppender.Settings(
                        b.capacity,
                        segmentSize,
                        b.policy,
                        b.files,
                        b.retryAfter.toNanos(),
                        b.randomAccess,
                        b.directWrites ? b.directMin : 0,
                        b.writebackEvery),
                index,
                counters,
                peers);
        peers.attach(appender);
        this.checks = new PageChecks(
                name, index, appender, peers, counters, b.lengthCheck.toNanos(), b.verify == Verify.EVERY_READ);
        try {
            peers.lock(); // opening (format upgrade, recovery, deleting leftovers) changes the directory
            try {
                DiskDirectory.checkFormat(directory, name, access, b.inspecting ? 0 : b.capacity);
                this.recovery = recover(segments);
            } finally {
                peers.unlock();
            }
            FlightEvents.diskRecovered(
                    name,
                    directory,
                    recovery.segments(),
                    recovery.pages(),
                    recovery.damagedSegments(),
                    recovery.damagedTails(),
                    recovery.took());
        } catch (IOException | RuntimeException | Error e) {
            appender.closeAfterFailedOpen();
            peers.close();
            lock.close();
            throw e;
        }
    }

    /** {@return a builder; {@link Builder#directory} and {@link Builder#capacity} are required} */
    public static Builder builder() {
        return new Builder();
    }

    /** Scans the segments ({@link SegmentRecovery}), indexes the pages found, and resumes appends to the newest. */
    private Recovery recover(Path segmentsDirectory) throws IOException {
        long start = System.nanoTime();
        long[] pages = {0};
        SegmentRecovery.Result found = new SegmentRecovery(
                        segmentsDirectory,
                        name,
                        appender::freed,
                        appender::mapped,
                        appender::advise,
                        counters::corrupted,
                        peers::appendedByAnother)
                .scan(recovered -> {
                    Segment s = recovered.segment();
                    appender.add(s); // at once: if the scan fails further on, closing after the failed open releases it
                    s.resize(recovered.records().size);
                    pages[0] += index.addRecovered(s, recovered.records(), recovered.expectedMore());
                });
        appender.opened(found.nextId());
        return new Recovery(
                found.files(),
                pages[0],
                found.damagedSegments(),
                found.damagedTails(),
                Duration.ofNanos(System.nanoTime() - start),
                found.dropped());
    }

    // ------------------------------------------------------------------------------------------------ reads

    @Override
    public String name() {
        return name;
    }

    @Override
    public Page get(PageKey key) {
        DiskPage page = lease(key);
        if (page == null) {
            counters.miss();
            return null;
        }
        if (!checks.ready(page)) {
            page.release();
            counters.miss();
            return null;
        }
        counters.hit(page.length());
        long stamp = appender.workload().clock();
        page.segment.touched(appender.clock());
        peers.read(page.segment);
        page.segment.stamp(stamp);
        page.stamp(stamp);
        return page;
    }

    @Override
    public Page peek(PageKey key) {
        DiskPage page = lease(key);
        if (page == null) {
            return null;
        }
        if (!checks.ready(page)) {
            page.release();
            return null;
        }
        return page;
    }

    /** Leases a page from the index; in shared mode, first catches up with what other processes changed. */
    private DiskPage lease(PageKey key) {
        peers.catchUp();
        DiskPage page = index.lease(this, key);
        if (page == null && peers.caughtUpOnMiss()) {
            page = index.lease(this, key);
        }
        return page;
    }

    /** A page in the index now, checked before it is served; retained, or null. */
    private Page indexed(PageKey key) {
        DiskPage page = index.lease(this, key);
        if (page != null && !checks.ready(page)) {
            page.release();
            return null;
        }
        return page;
    }

    /** Called when touching a page's mapping faulted where {@link MemoryTier} copies it up ({@link PageChecks}). */
    void faulted(DiskPage page, Throwable e) {
        checks.faulted(page, e);
    }

    /** {@return whether other processes see this tier's pages: shared mode} */
    public boolean shared() {
        return peers.shared();
    }

    /** {@return this tier in shared mode ({@link Builder#shared}), where fills are coordinated across processes} */
    @Override
    public java.util.Optional<Tier.Sharing> sharing() {
        return shared() ? java.util.Optional.of(this) : java.util.Optional.empty();
    }

    /**
     * {@inheritDoc}
     *
     * <p>In shared mode: claims the page for this process (a byte-range lock the kernel drops if the process dies)
     * and returns {@code null}; or, if another process claims it, waits — parking, at most until the deadline or
     * {@link Builder#fillWait} — for that process's page to appear in the directory, and returns it. If the other
     * process gives up or dies, its claim goes and this one fills the page. After the wait times out, returns
     * {@code null} without a claim: the caller fills the page as well.
     */
    @Override
    public Page awaitFill(PageKey key, long deadlineNanos) {
        return peers.awaitFill(key, deadlineNanos, this::indexed);
    }

    /** Ends the claim {@link #awaitFill} took for {@code key}, if it took one. */
    @Override
    public void fillDone(PageKey key) {
        peers.fillDone(key);
    }

    /** {@return how many fills took a page another process filled, and how many waits for one timed out} */
    long[] sharingCounts() {
        return peers.sharingCounts();
    }

    @Override
    public boolean remove(PageKey key) {
        return index.remove(key);
    }

    /** {@return this tier: it evicts pages (whole segments of them), and follows a loader's workload} */
    @Override
    public java.util.Optional<Tier.Eviction> eviction() {
        return java.util.Optional.of(this);
    }

    @Override
    public void evictionListener(java.util.function.Consumer<Page> listener) {
        appender.evictionListener(listener);
    }

    // ------------------------------------------------------------------------------------------------ writes

    @Override
    public boolean put(Page page) {
        if (!page.isSealed()) {
            throw new IllegalArgumentException(
                    "page " + page.key() + " is not sealed (expected: a filled, sealed" + " page)");
        }
        if (appender.closed()) {
            return false;
        }
        if (page instanceof DiskPage own && own.tier == this) {
            // One of ours, perhaps moved out (exclusive tiering) and offered back: index it again if its segment
            // is still live; the caller's reference keeps the mapping meanwhile.
            return index.republish(own.segment, own.record, page.key(), appender.isClosed());
        }
        return appender.append(page);
    }

    /**
     * While a loader drives, a new segment is opened only in place of a dead one (see {@link Workload}); the segment
     * policy decides again once no loader drives. Segments carry the stamp of their latest write or read.
     */
    @Override
    public void workload(Workload workload) {
        appender.workload(workload);
    }

    // ------------------------------------------------------------------------------------------------ the rest

    /**
     * {@return whether the pages stay in the directory for the next process: {@code true} unless in scratch mode
     * ({@link Builder#deleteOnClose}), whose directory goes at close}
     */
    @Override
    public boolean durable() {
        return !deleteOnClose;
    }

    /** {@return this tier: it receives pages carried at close while {@linkplain #durable() durable}} */
    @Override
    public java.util.Optional<Tier.Durability> durability() {
        return java.util.Optional.of(this);
    }

    @Override
    public void invalidate(String origin, String key) {
        index.removeObject(origin, key);
    }

    /**
     * {@inheritDoc}
     *
     * <p>The disk tier's copy packs records into segments by the tier's own arithmetic (record headers, payload
     * alignment, whole segments against the capacity) and evicts whole dead segments as the tier does under a loader;
     * the region policy's {@code admit} is asked. A tier that stopped admitting after a failure of its medium is
     * simulated as refusing every page.
     */
    @Override
    public java.util.Optional<dev.granary.spi.TierSimulation> simulation() {
        return java.util.Optional.of(appender.simulation());
    }

    @Override
    public TierStats stats() {
        return counters.snapshot(name, appender.bytesOnDisk(), appender.capacity());
    }

    /** {@return why the tier stopped admitting pages, if it did and has not recovered} */
    public java.util.Optional<String> failure() {
        return java.util.Optional.ofNullable(appender.failure());
    }

    /** {@return what opening the directory found} */
    public Recovery recovery() {
        return recovery;
    }

    /** {@return the number of pages in the index}; for tests and benchmarks */
    int pageCount() {
        return index.size();
    }

    /** {@return the index}; for tests */
    DiskIndex index() {
        return index;
    }

    /** {@return the directory the tier keeps its files in} */
    public Path directory() {
        return directory;
    }

    /** {@return whether the tier is closed and every segment is unmapped}; for leak checks in tests */
    boolean isReleased() {
        return appender.isReleased();
    }

    /** The keys in the index, for tests that check every page against its source. */
    List<PageKey> keys() {
        return appender.keys();
    }

    /** Where a page's bytes lie in its segment file, for tests that damage them. */
    record Location(Path file, long headerOffset, long payloadOffset, int length) {}

    Location locate(PageKey key) {
        DiskIndex.Found found = index.find(key);
        if (found == null) {
            return null;
        }
        Segment s = found.segment();
        long payload = s.payload(found.record());
        long[] header = {-1};
        SegmentFormat.scan(
                s.map,
                s.id,
                r -> {
                    if (r.payloadOffset() == payload) {
                        header[0] = r.headerOffset();
                    }
                },
                position -> {});
        return new Location(s.file, header[0], payload, key.length());
    }

    /** {@return how many pages were written with {@code O_DIRECT} so far} For tests and benchmarks. */
    long directWrites() {
        return appender.directWrites();
    }

    /** {@return how many ranges of written pages were handed to writeback so far} For tests and benchmarks. */
    long writebacks() {
        return appender.writebacks();
    }

    /**
     * Closes the tier: pages leave the index and the directory is unlocked; the segment files stay for the next
     * open (unless {@link Builder#deleteOnClose}), and each is unmapped once no reader holds a page of it. Idempotent.
     */
    @Override
    public void close() {
        appender.close(() -> {
            // Scratch mode: Granary's files go while the directory is still locked, the directory itself after.
            boolean emptied = deleteOnClose
                    && ScratchDirectory.deleteContents(directory, name).isEmpty();
            lock.close();
            if (emptied && createdDirectory) {
                ScratchDirectory.deleteDirectory(directory, name);
            }
        });
    }

    @Override
    public String toString() {
        return "DiskTier[" + name + ", " + directory + ", used=" + appender.bytesOnDisk() + "/" + appender.capacity()
                + ", pages=" + index.size() + "]";
    }

    /**
     * What opening a directory found.
     *
     * @param segments        segment files found
     * @param pages           pages recovered into the index
     * @param damagedSegments segment files deleted because their header was damaged
     * @param damagedTails    segments whose record scan ended on a damaged or torn record (the pages after it are
     *                        dropped; a process killed mid-write leaves one)
     * @param took            how long the scan took
     * @param dropped         what damage made the scan drop: each segment file deleted for a damaged header, and each
     *                        segment whose scan ended on a record that is not valid
     */
    public record Recovery(
            int segments, long pages, int damagedSegments, int damagedTails, Duration took, List<Dropped> dropped) {

        /** Copies the list. */
        public Recovery {
            dropped = List.copyOf(dropped);
        }

        /** {@return the page records damage made the scan drop, summed over {@link #dropped()}} */
        public long droppedPages() {
            return dropped.stream().mapToLong(Dropped::pages).sum();
        }
    }

    /**
     * Page records a recovery scan dropped because of damage. Either the segment file's header was damaged (the file
     * is deleted, with every record in it), or its record scan ended on a record that is not valid: a torn write of a
     * process killed mid-put leaves one with nothing after it, while damage to a record header in the middle (a stray
     * write, bit rot) drops the valid records after it too, since the log's order is no longer proven past it. Either
     * way the pages are read again from the origin when asked for, never served unchecked.
     *
     * @param segment      the segment file
     * @param damage       what the scan found, with the offset
     * @param wholeSegment whether the file was deleted for a damaged header
     * @param pages        valid-looking page records dropped (for a tail: those found after the damage)
     * @param bytes        their pages' bytes
     */
    public record Dropped(Path segment, String damage, boolean wholeSegment, long pages, long bytes) {}

    /**
     * How a new segment file gets its length and disk blocks (default: sparse but for its first header chunk,
     * {@link NativeFiles#allocateSparse}); a seam for tests that simulate a full or failing disk.
     */
    @FunctionalInterface
    interface SegmentFiles {
        void allocate(Path file, long size) throws IOException;
    }

    /**
     * When a disk-tier page's bytes are checked against the CRC32C its record carries ({@link Builder#verify}).
     * {@code docs/disk-format.md}, "What a checksum covers, and when", says what each leaves open.
     */
    public enum Verify {
        /**
         * On the page's first read after the tier opened, then never again while it runs: bytes changed in the
         * segment file after that read (a stray writer, a tool, bit rot in the page cache) are served as they are.
         */
        ONCE,
        /**
         * On every read that leases the page (a hit served zero-copy, a page copied up into a memory tier), by reading
         * the file ({@code pread}), not the mapping. A page that no longer matches is dropped and read again from
         * below. Bytes changed after the check, while a reader holds the lease, are not seen (the zero-copy window).
         */
        EVERY_READ
    }

    /** Configures a {@link DiskTier}. Setters validate at once. Not thread-safe. */
    public static final class Builder {

        private static final long MIN_SEGMENT = 16 << 10;
        private static final long MAX_SEGMENT = 1L << 30;
        private Path directory;
        private long capacity = -1;
        /** -1 until set: then chosen from the capacity at {@link #build}. */
        private long segmentSize = -1;

        private RegionPolicy policy = new SegmentLruPolicy();
        private String name = "disk";
        private Duration retryAfter = Duration.ofSeconds(30);
        private boolean randomAccess = true;
        private boolean directWrites;
        private int directMin = DIRECT_MIN;
        private long writebackEvery = WRITEBACK_EVERY;
        private SegmentFiles files = NativeFiles::allocateSparse;
        /** How often a segment's file length is re-checked on the hit path (see {@code ready}). */
        static final Duration LENGTH_CHECK = Duration.ofMillis(10);

        private Duration lengthCheck = LENGTH_CHECK;
        private boolean deleteOnClose;
        private boolean shared;
        private String group;
        private Duration fillWait = Duration.ofSeconds(10);
        private Verify verify = Verify.ONCE;

        private Builder() {}

        /**
         * Shared mode: any number of processes on this host (and tiers in one process) open the directory at once, and
         * each sees the pages the others write. Every one of them must open it with {@code shared(true)}: an unshared
         * tier holds its directory alone, and is refused while shared ones hold it (and the other way round).
         *
         * <p>What sharing gives ({@code docs/disk-format.md}, "Shared directories"): a page another process wrote is
         * found at this tier's next miss on it after its record is complete; the capacity bounds the directory's
         * files, whoever wrote them, and eviction takes the segment read least recently by any process — never one a
         * live process is appending to, and a process still reading an evicted segment keeps valid bytes (the file is
         * unlinked, not reused); when several processes miss one page at once, one reads it from the origin and the
         * others wait for it ({@link #fillWait}). A process killed at any moment leaves the others running and a
         * directory the next one opens. Each process appends to segments of its own, and under a loader the
         * directory is evicted least-recently-used, not by the loader's epochs. Not with {@link #deleteOnClose}.
         * Default {@code false}: one process, one directory — a second one gets an error naming the holder.
         *
         * @param shared whether to share the directory with other processes
         * @return this builder
         */
        public Builder shared(boolean shared) {
            this.shared = shared;
            return this;
        }

        /**
         * Lets the members of a group use the directory, for processes of different users sharing it: the directory
         * is given to the group and made {@code 2770} (set-group-ID, so files made in it belong to the group too),
         * its files {@code 0660}, whatever the umask. Every process sharing the directory should set the same group.
         * Default: none — the directory is {@code 0700} and its files {@code 0600}, private to their owner.
         *
         * @param group the name of a group on this host that the process belongs to
         * @return this builder
         * @throws IllegalArgumentException if null or blank (checked against the host's groups at {@link #build})
         */
        public Builder group(String group) {
            if (group == null || group.isBlank()) {
                throw new IllegalArgumentException("disk tier group: " + (group == null ? "null" : "'" + group + "'")
                        + " (expected: the name of a group on this host, such as \"ml\")");
            }
            this.group = group;
            return this;
        }

        /**
         * Shared mode: how long a fill waits for a page another process is reading from the origin before reading it
         * itself; it also stops waiting at the cache's read deadline, and at once when the other process dies or
         * gives up. Default 10 seconds.
         *
         * @param wait zero or more
         * @return this builder
         * @throws IllegalArgumentException if null or negative
         */
        public Builder fillWait(Duration wait) {
            if (wait == null || wait.isNegative()) {
                throw new IllegalArgumentException("fill wait: " + wait + " (expected: a duration >= 0)");
            }
            this.fillWait = wait;
            return this;
        }

        /**
         * Scratch mode: when the tier closes (with its cache), delete its files, and its directory if this tier created
         * it — the operator's "clear the cache when the job completes". Only Granary's own files are deleted: a file
         * someone else put in the directory is kept, with the directory (a warning names it); a directory that existed
         * before the tier opened it (a mount point, one the operator made) is emptied of Granary's files but kept.
         * A process killed before close leaves the directory as any other run does; the next tier opened with
         * {@code deleteOnClose} on it removes it at its own close. Default {@code false}: pages persist across runs.
         *
         * @param delete whether to delete on close
         * @return this builder
         */
        public Builder deleteOnClose(boolean delete) {
            this.deleteOnClose = delete;
            return this;
        }

        /**
         * Sets the directory the tier keeps its files in: created ({@code 0700}) if missing; if it exists it must be
         * empty or a directory a {@code DiskTier} wrote. Required.
         *
         * @param directory a local directory, ideally on NVMe
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder directory(Path directory) {
            if (directory == null) {
                throw new IllegalArgumentException(
                        "disk tier directory: null (expected: a path such as" + " Path.of(\"/nvme/granary\"))");
            }
            this.directory = directory;
            return this;
        }

        /**
         * Sets the bound on the bytes of segment files on disk. Required; at least two segments.
         *
         * @param bytes the capacity, at least 32 KiB (two segments of the smallest size)
         * @return this builder
         * @throws IllegalArgumentException if below 32 KiB
         */
        public Builder capacity(long bytes) {
            if (bytes < 2 * MIN_SEGMENT) {
                throw new IllegalArgumentException("disk tier capacity: " + bytes + " bytes (expected: at least "
                        + ByteSizes.format(2 * MIN_SEGMENT) + ", two segments of the smallest size "
                        + ByteSizes.format(MIN_SEGMENT) + ")");
            }
            this.capacity = bytes;
            return this;
        }

        /**
         * Sets the size of segment files: the unit of eviction, and the largest page the tier holds (less its header).
         * Default: chosen from the capacity ({@link #defaultSegmentSize}), 64 MiB for a capacity of 512 MiB or more.
         *
         * @param bytes a multiple of 4096, from 16 KiB to 1 GiB
         * @return this builder
         * @throws IllegalArgumentException if out of range or not a multiple of 4096
         */
        public Builder segmentSize(long bytes) {
            if (bytes < MIN_SEGMENT || bytes > MAX_SEGMENT || bytes % 4096 != 0) {
                throw new IllegalArgumentException("segment size: " + bytes + " bytes (expected: a multiple of 4 KiB,"
                        + " " + ByteSizes.range(MIN_SEGMENT, MAX_SEGMENT) + ")");
            }
            this.segmentSize = bytes;
            return this;
        }

        /**
         * Sets the policy that chooses which segment to evict. Default {@link SegmentLruPolicy}.
         *
         * @param policy the policy, used by this tier only
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder policy(RegionPolicy policy) {
            if (policy == null) {
                throw new IllegalArgumentException(
                        "region policy: null (expected: a policy such as new" + " SegmentLruPolicy())");
            }
            this.policy = policy;
            return this;
        }

        /**
         * Sets the name shown in stats and logs. Default {@code "disk"}.
         *
         * @param name a non-blank name
         * @return this builder
         * @throws IllegalArgumentException if null or blank
         */
        public Builder name(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException(
                        "tier name: " + (name == null ? "null" : "'" + name + "'") + " (expected: a non-blank name)");
            }
            this.name = name;
            return this;
        }

        /**
         * Sets how long the tier stops admitting pages after its medium failed (a full disk, an I/O error) before it
         * tries again. Default 30 seconds.
         *
         * @param pause zero or more
         * @return this builder
         * @throws IllegalArgumentException if null or negative
         */
        public Builder retryAfter(Duration pause) {
            if (pause == null || pause.isNegative()) {
                throw new IllegalArgumentException("retry pause: " + pause + " (expected: a duration >= 0)");
            }
            this.retryAfter = pause;
            return this;
        }

        /**
         * Tells the kernel that pages are read at random ({@code madvise(MADV_RANDOM)}), so a cold read faults in the
         * page it needs rather than a read-ahead window around it. Default true: samples are read in shuffled order.
         *
         * @param random whether to advise random access
         * @return this builder
         */
        public Builder randomAccess(boolean random) {
            this.randomAccess = random;
            return this;
        }

        /**
         * Sets when a page's bytes are checked against their CRC32C: {@link Verify#ONCE} (the default), on the first
         * read after the tier opened, or {@link Verify#EVERY_READ}, on every read, which also catches bytes changed in
         * a segment file while the tier runs. What every read costs, measured: {@code docs/benchmarks.md}, "Disk tier".
         *
         * @param verify when to check
         * @return this builder
         * @throws IllegalArgumentException if null
         */
        public Builder verify(Verify verify) {
            if (verify == null) {
                throw new IllegalArgumentException(
                        "disk tier verify: null (expected: Verify.ONCE or Verify.EVERY_READ)");
            }
            this.verify = verify;
            return this;
        }

        /**
         * Writes large pages to the device directly ({@code O_DIRECT}) instead of copying them into the page cache
         * first (decision 0015): a page of at least 64 KiB held in page-aligned native memory (as the memory tier's
         * are), whose place in its segment is page-aligned (as a page of 4 KiB or more is). Smaller pages, heap
         * memory and file systems without direct I/O (the kernel refuses the open or the write) are written through
         * the page cache as before; so is everything with {@link #randomAccess randomAccess(false)}.
         *
         * <p>What it gives: in a cold epoch with many fills at once it halves the disk tier's CPU (the copy into the
         * page cache was most of it; measured 0.79 against 0.40 CPU-s per 250 MiB), and it leaves the page cache to
         * other data, since the page is in the memory tier already. What it costs: each write returns when the
         * device has the bytes, not the page cache, and writes into one segment file wait for each other, so the
         * tier's write rate follows the device's latency (one writer of 128 KiB pages here: 0.39 of a buffered
         * append's durable rate). Turn it on where the node's CPU is the limit and the disk is local NVMe; leave it off
         * on network block storage, where a write can take a millisecond. Default false.
         *
         * @param direct whether to write large pages with {@code O_DIRECT}
         * @return this builder
         */
        public Builder directWrites(boolean direct) {
            this.directWrites = direct;
            return this;
        }

        /** With {@link #directWrites} on, pages of at least this many bytes are written direct. */
        static final int DIRECT_MIN = 64 << 10;

        /**
         * How much of a segment the tier writes before it asks the kernel to start writing those pages to the device
         * ({@code sync_file_range(2)}, which does not wait for them; decision 0016). Without it the pages the tier
         * writes stay dirty in the page cache until the kernel's flusher takes them: 30 seconds later, or once dirty
         * pages pass a tenth of the memory (gigabytes on a training node) and then all at once, competing with the
         * job's own writes, such as checkpoints, which the kernel throttles meanwhile; in a container they are charged
         * to its memory limit until written. With it, a filling segment holds about two intervals of dirty pages, the
         * device writes while the tier goes on filling, and what the tier wrote becomes clean page cache the kernel
         * can drop without writing. What it costs: the filling thread that crosses an interval submits that I/O (a
         * flusher thread's work otherwise; measured +0.04 to +0.18 CPU-s per GiB written, the most with 4 KiB pages)
         * and can wait while the device's queue is full. It makes nothing durable: the tier never needs that (a crash
         * loses at most pages not yet written, found by their checksums). Measured with one writer, the tier's durable
         * rate against a plain append of the same pages, off and on: 0.79 and 0.88-0.99 with 4 KiB pages, 0.85 and
         * 1.00-1.11 with 128 KiB, 0.90 and 1.12-1.15 with 1 MiB. Pages written with {@link #directWrites} are not in
         * the page cache
         * and need none of this.
         *
         * @param bytes {@code 0} to leave writeback to the kernel, else at least 64 KiB; default 8 MiB
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes} is negative or between 1 byte and 64 KiB
         */
        public Builder writebackEvery(long bytes) {
            if (bytes != 0 && bytes < MIN_WRITEBACK) {
                throw new IllegalArgumentException("disk tier writebackEvery: " + bytes + " bytes (expected: 0 to"
                        + " leave writeback to the kernel, or at least " + ByteSizes.format(MIN_WRITEBACK) + ")");
            }
            this.writebackEvery = bytes;
            return this;
        }

        /** The default of {@link #writebackEvery}. */
        static final long WRITEBACK_EVERY = 8L << 20;

        private static final long MIN_WRITEBACK = 64 << 10;

        /** For tests: the smallest page written direct (default {@link #DIRECT_MIN}), so small pages can take it. */
        Builder directWriteMin(int bytes) {
            this.directMin = bytes;
            return this;
        }

        /**
         * The segment size used when none is set: the largest power of two from 16 KiB to 64 MiB of which the capacity
         * holds at least eight, else 16 KiB (a capacity from 32 to 128 KiB). Eight or more segments keep eviction,
         * which
         * drops a whole segment, from dropping more than an eighth of the tier at once; 64 MiB keeps the number of
         * files and mappings low for large tiers (8,000 for 500 GiB). A page larger than a segment is not cached on
         * disk (logged once), so a small tier with large pages should set {@link #segmentSize} itself.
         *
         * @param capacity at least 32 KiB
         */
        static long defaultSegmentSize(long capacity) {
            long size = MAX_DEFAULT_SEGMENT;
            while (size > MIN_SEGMENT && size * 8 > capacity) {
                size >>= 1;
            }
            return size;
        }

        private static final long MAX_DEFAULT_SEGMENT = 64L << 20;

        /** Set by {@link DiskTierInspection}: the tier opens the directory to look at it, and records no capacity. */
        boolean inspecting;

        Builder inspecting() {
            this.inspecting = true;
            return this;
        }

        /** For tests: how often segment lengths are re-checked, so the checks can be taken out of the way. */
        Builder lengthCheck(Duration interval) {
            this.lengthCheck = interval;
            return this;
        }

        /** For tests: how segment files get their blocks, so a full or failing disk can be simulated. */
        Builder files(SegmentFiles files) {
            this.files = files;
            return this;
        }

        /**
         * Opens the directory: locks it, recovers the pages an earlier run left there, and builds the tier.
         *
         * @return a new tier
         * @throws DirectoryInUseException  if another tier, in this process or another, holds the directory (the
         *                                  message names the holder)
         * @throws IllegalStateException    if no directory or capacity was set, or the directory was written by a
         *                                  newer Granary
         * @throws IllegalArgumentException if the capacity is below two segments of the size set, or the directory
         *                                  is a file or holds files that are not Granary's
         * @throws UncheckedIOException     if the directory cannot be read or written
         */
        public DiskTier build() {
            if (directory == null) {
                throw new IllegalStateException(
                        "disk tier directory not set (expected: directory(path) before" + " build())");
            }
            if (capacity < 0) {
                throw new IllegalStateException(
                        "disk tier capacity not set (expected: capacity(bytes) before" + " build())");
            }
            if (shared && deleteOnClose) {
                throw new IllegalStateException("disk tier " + directory + ": shared(true) with deleteOnClose(true)"
                        + " (expected: one of them; a shared directory outlives any one process using it)");
            }
            long size = segmentSize < 0 ? defaultSegmentSize(capacity) : segmentSize;
            if (segmentSize >= 0 && capacity < 2 * segmentSize) {
                throw new IllegalArgumentException("disk tier capacity: " + capacity + " bytes (expected: at least two"
                        + " segments, " + ByteSizes.format(2 * segmentSize) + " with segmentSize "
                        + ByteSizes.format(segmentSize) + ")");
            }
            try {
                return new DiskTier(this, size);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot open disk tier directory " + directory + ": " + e, e);
            }
        }
    }
}
