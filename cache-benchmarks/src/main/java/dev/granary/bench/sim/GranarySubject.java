// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import dev.granary.EpochDriver;
import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * Granary itself: a real {@link TieredCache} over a real {@link MemoryTier} and a real {@link DiskTier} (in a
 * temporary directory, deleted on {@link #close()}), over an in-process {@link ItemOrigin}, driven like the loader
 * drives it — one {@link EpochDriver} from {@code cache.loaderSupport().driver()}, {@code startEpoch()} before each
 * epoch's reads and {@code endEpoch()} after — and read like {@code ObjectDataset} reads a per-object dataset, with
 * {@code cache.read(key)}. An access is a hit when the read made no origin data read. Every read's bytes are checked.
 *
 * <h2>Sizes</h2>
 * Items are {@link #ITEM_BYTES} bytes (1 KiB: the memory tier's minimum capacity is 64 KiB, and at {@code C/N = 0.1}
 * of 2 000 items the memory third is 66 items). The memory tier gets {@code M = C/3} items' bytes, the disk tier
 * {@code D = C − M} items' bytes with {@link #SEGMENT_BYTES} segments (the smallest the tier allows, so the rounding
 * to whole segments is fine). The real tiers hold fewer than {@code C} items: the disk tier spends a record header per
 * page and a segment header per segment, and uses only whole segments. So this subject's ceiling is its
 * <em>measured</em> capacity in items ({@link #ceilingItems()}): a fresh pair of tiers with the same settings is
 * filled, inside the first epoch of a driver of its own (which protects every page, so the tiers only take pages
 * into free room), with items that never occur in the trace, until they refuse {@link #REFUSALS_TO_STOP} in a row;
 * the ceiling is how many they kept (each kept one is read again and must not reach the origin).
 *
 * <h2>Pre-filled</h2>
 * With {@code prefillForeign}, that fill is done on this subject's own tiers, by a driver that is then closed (as
 * after another job or dataset): the tiers start full of foreign items (ids {@code >= N}). The loader's first epoch
 * protects them; from its second on they are dead and replaced.
 *
 * <p>Not thread-safe: one simulation thread. {@link #close()} closes the cache and deletes its directory; it is
 * idempotent.
 */
final class GranarySubject implements Subject {

    static final String NAME = "Granary (real tiers)";
    static final String NAME_PREFILLED = "Granary (real tiers), pre-filled with foreign pages";
    static final int ITEM_BYTES = 1024;
    static final long SEGMENT_BYTES = 16 << 10;
    static final int REFUSALS_TO_STOP = 16;
    private static final long MIN_MEMORY = 64 << 10;

    private final String name;
    private final Tiers tiers;
    private final EpochDriver driver;
    private final int foreignFirst;
    private final int foreignCount;
    private final int ceiling;
    private final byte[] expected = new byte[ITEM_BYTES];
    private boolean closed;

    private GranarySubject(String name, Tiers tiers, int foreignFirst, int foreignCount, int ceiling) {
        this.name = name;
        this.tiers = tiers;
        this.foreignFirst = foreignFirst;
        this.foreignCount = foreignCount;
        this.ceiling = ceiling;
        this.driver = tiers.cache.loaderSupport().driver();
    }

    /**
     * Memory {@code C/3} items, disk {@code C − C/3} items (in bytes of {@link #ITEM_BYTES}); optionally both full
     * of foreign items.
     *
     * @throws IllegalArgumentException if the memory third is under the memory tier's 64 KiB minimum
     * @throws IOException              if the temporary directory or the disk tier cannot be made
     */
    static GranarySubject splitThirds(int capacity, int[][] trace, boolean prefillForeign) throws IOException {
        Config.checkCapacity(capacity);
        int items = Trace.idSpace(trace);
        long memory = (long) (capacity / 3) * ITEM_BYTES;
        long disk = (long) (capacity - capacity / 3) * ITEM_BYTES;
        Config.require(
                memory >= MIN_MEMORY,
                "Granary memory tier: " + capacity / 3 + " items of " + ITEM_BYTES
                        + " bytes = " + memory + " bytes (expected: >= " + MIN_MEMORY
                        + ", the MemoryTier minimum; raise"
                        + " --granary-items or the fraction)");
        Config.require(
                disk >= 2 * SEGMENT_BYTES,
                "Granary disk tier: " + (capacity - capacity / 3) + " items of " + ITEM_BYTES + " bytes = " + disk
                        + " bytes (expected: >= two segments of " + SEGMENT_BYTES + ")");
        // Foreign ids follow the trace's; at most every byte of both tiers is one of them.
        int foreignCount = (int) ((memory + disk) / ITEM_BYTES) + REFUSALS_TO_STOP;
        Tiers tiers = new Tiers(items + foreignCount, memory, disk);
        try {
            if (prefillForeign) {
                int kept = tiers.fill(items, foreignCount);
                return new GranarySubject(NAME_PREFILLED, tiers, items, foreignCount, kept);
            }
            int ceiling;
            try (Tiers probe = new Tiers(items + foreignCount, memory, disk)) {
                ceiling = probe.fill(items, foreignCount);
            }
            return new GranarySubject(NAME, tiers, items, 0, ceiling);
        } catch (IOException | RuntimeException | Error e) {
            tiers.close();
            throw e;
        }
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void startEpoch(int epoch) {
        driver.startEpoch();
    }

    @Override
    public void endEpoch(int epoch) {
        driver.endEpoch();
        long counted = tiers.origin.reads();
        long stats = tiers.cache.stats().origin().reads();
        if (counted != stats) {
            throw new IllegalStateException("origin reads after epoch " + epoch + ": " + counted + " counted by the"
                    + " origin, " + stats + " in cache.stats() (expected: equal)");
        }
    }

    @Override
    public boolean access(int item) throws IOException {
        return tiers.read(item, expected);
    }

    @Override
    public int ceilingItems() {
        return ceiling;
    }

    /** {@return how many foreign items are in either tier now; looks without touching (no stamp, no promotion)} */
    @Override
    public long foreignResident() {
        long n = 0;
        for (int id = foreignFirst; id < foreignFirst + foreignCount; id++) {
            if (tiers.resident(id)) {
                n++;
            }
        }
        return n;
    }

    /** {@return the cache under simulation, for its stats} */
    TieredCache cache() {
        return tiers.cache;
    }

    @Override
    public void close() throws IOException {
        if (!closed) {
            closed = true;
            driver.close();
            tiers.close();
        }
    }

    /** A cache over a memory and a disk tier in a temporary directory of its own. */
    private static final class Tiers implements AutoCloseable {
        final ItemOrigin origin;
        final MemoryTier memory;
        final DiskTier disk;
        final TieredCache cache;
        final Path directory;
        final String[] keys;

        Tiers(int objects, long memoryBytes, long diskBytes) throws IOException {
            origin = new ItemOrigin(objects, ITEM_BYTES);
            keys = new String[objects];
            for (int id = 0; id < objects; id++) {
                keys[id] = ItemOrigin.key(id);
            }
            directory = Files.createTempDirectory("granary-sim-");
            MemoryTier m = null;
            DiskTier d = null;
            try {
                m = MemoryTier.builder().capacity(memoryBytes).build();
                d = DiskTier.builder()
                        .directory(directory.resolve("disk"))
                        .capacity(diskBytes)
                        .segmentSize(SEGMENT_BYTES)
                        .build();
                // The version never changes: trust it for the whole run, so no read waits on a metadata request.
                cache = TieredCache.builder(origin)
                        .tier(m)
                        .tier(d)
                        .metadataTtl(Duration.ofDays(1))
                        .metadataCapacity(Math.max(1, objects))
                        .build();
            } catch (RuntimeException | Error e) {
                if (d != null) {
                    d.close();
                }
                if (m != null) {
                    m.close();
                }
                delete(directory);
                throw e;
            }
            memory = m;
            disk = d;
        }

        /** Reads item {@code id} and checks its bytes. {@return whether the origin was not read} */
        boolean read(int id, byte[] expected) throws IOException {
            long before = origin.reads();
            try (Lease lease = cache.read(keys[id])) {
                ByteBuffer bytes = lease.bytes();
                for (int i = 0; i < ITEM_BYTES; i++) {
                    expected[i] = ItemOrigin.expected(id, i);
                }
                if (bytes.remaining() != ITEM_BYTES
                        || MemorySegment.ofBuffer(bytes).mismatch(MemorySegment.ofArray(expected)) != -1) {
                    throw new IllegalStateException("item " + id + ": wrong bytes from the cache (expected: "
                            + ITEM_BYTES + " bytes derived from the id)");
                }
            }
            return origin.reads() == before;
        }

        /**
         * Inside the first epoch of a driver of its own (so nothing is dead and the tiers take pages only into free
         * room), reads items {@code first, first + 1, …} until {@link #REFUSALS_TO_STOP} in a row are not kept;
         * closes the driver. {@return how many were kept}
         */
        int fill(int first, int count) throws IOException {
            byte[] expected = new byte[ITEM_BYTES];
            int kept = 0;
            int refusedInARow = 0;
            try (EpochDriver filler = cache.loaderSupport().driver()) {
                filler.startEpoch();
                for (int id = first; id < first + count && refusedInARow < REFUSALS_TO_STOP; id++) {
                    if (read(id, expected)) {
                        throw new IllegalStateException("item " + id + " hit before it was ever read");
                    }
                    if (read(id, expected)) {
                        kept++;
                        refusedInARow = 0;
                    } else {
                        refusedInARow++;
                    }
                }
                filler.endEpoch();
                if (refusedInARow < REFUSALS_TO_STOP) {
                    throw new IllegalStateException("fill: " + count + " items all kept (expected: the tiers to"
                            + " refuse some; is the capacity larger than configured?)");
                }
            }
            return kept;
        }

        /** {@return whether either tier holds item {@code id}; a peek, which neither stamps nor promotes} */
        boolean resident(int id) {
            PageKey key = new PageKey(origin.uri().toString(), keys[id], ItemOrigin.VERSION, 0, ITEM_BYTES);
            for (Tier tier : new Tier[] {memory, disk}) {
                Page page = tier.peek(key);
                if (page != null) {
                    page.release();
                    return true;
                }
            }
            return false;
        }

        @Override
        public void close() throws IOException {
            try {
                cache.close();
            } finally {
                delete(directory);
            }
        }

        private static void delete(Path directory) throws IOException {
            if (!Files.exists(directory)) {
                return;
            }
            try (Stream<Path> paths = Files.walk(directory)) {
                for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            } catch (UncheckedIOException e) {
                throw e.getCause();
            }
        }
    }
}
