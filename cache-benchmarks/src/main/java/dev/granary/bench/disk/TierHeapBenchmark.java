// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import dev.granary.spi.EvictionPolicy;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import dev.granary.tier.internal.TierInternals;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The Java heap a tier keeps per cached page, measured from outside: fill a fresh tier with N pages and compare the
 * heap in use after a full GC before and after (the tier itself built and empty before; every key the benchmark
 * made dropped before the second GC, so what remains is what the tier holds). No JOL and no estimate: used heap after
 * {@code System.gc()} (a full, compacting collection with G1) is the live set to within a few KiB, which at
 * 100 000 pages is well under a byte per page.
 *
 * <h2>What is counted</h2>
 * Everything the tier retains: its index, its policy's state, the page objects it keeps and the key strings. Key
 * strings belong to objects, not pages: a page's key is (origin, object key, version, offset, length) and the first
 * three are shared by every page of one object. So the figure depends on how many pages an object has; the run
 * reports it for {@code pagesPerObject} = 1 (every page its own object, as 150 KB JPEGs in 1 MiB pages) and 64 (a
 * 64 MiB shard in 1 MiB pages); the pages of one object share its strings, as the cache's keys do. Object keys look
 * like
 * {@code train/000123.jpg}, versions like {@code 4096-1700000004551-1000123} (size-mtime-inode), one origin.
 *
 * <h2>Tiers</h2>
 * {@code memory}: a {@link MemoryTier} with its default policy (W-TinyLFU), and again with a policy that keeps no
 * state ({@code memory-nopolicy}), so the index and the policy can be told apart; pages of 512 bytes (the allocator's
 * block), capacity for every page. {@code disk}: a {@link DiskTier} in 64 MiB segments, pages of 256 bytes, capacity
 * for every page; measured after the fill and again after a reopen (the recovered index).
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@tier-heap
 * </pre>
 * Options in {@code -Dtierheap.args="..."}: {@code --pages=100000,1000000} {@code --perObject=1,64}
 * {@code --tiers=memory,memory-nopolicy,disk}. Files go to {@code granary.bench.dir} (deleted afterwards).
 */
public final class TierHeapBenchmark {

    private TierHeapBenchmark() {}

    /**
     * Runs the measurements.
     *
     * @param args {@code --pages=}, {@code --perObject=}, {@code --tiers=} (comma-separated lists)
     * @throws IOException if the disk tier's directory cannot be written
     */
    public static void main(String[] args) throws IOException {
        String pages = "100000,1000000";
        String perObject = "1,64";
        String tiers = "memory,memory-nopolicy,disk";
        for (String arg : args) {
            if (arg.startsWith("--pages=")) {
                pages = arg.substring(8);
            } else if (arg.startsWith("--perObject=")) {
                perObject = arg.substring(12);
            } else if (arg.startsWith("--tiers=")) {
                tiers = arg.substring(8);
            } else if (!arg.isBlank()) {
                throw new IllegalArgumentException("option: " + arg + " (expected: --pages=, --perObject=, --tiers=)");
            }
        }
        Path base = DiskBenchData.baseDirectory("/var/tmp/granary-bench");
        System.out.printf(
                "tier-heap: JVM %s, GC %s, max heap %d MiB%n",
                Runtime.version(),
                ManagementFactory.getGarbageCollectorMXBeans().getFirst().getName(),
                Runtime.getRuntime().maxMemory() >> 20);
        System.out.println("tier             pages  pages/object   B/page (after fill)   B/page (after reopen)");
        for (String tier : tiers.split(",")) {
            for (String n : pages.split(",")) {
                for (String p : perObject.split(",")) {
                    measure(tier.strip(), Integer.parseInt(n.strip()), Integer.parseInt(p.strip()), base);
                }
            }
        }
    }

    private static void measure(String tier, int count, int perObject, Path base) throws IOException {
        switch (tier) {
            case "memory", "memory-nopolicy" -> {
                long capacity = Math.max(64L << 20, (long) count * 512 + (64L << 20));
                MemoryTier.Builder b = MemoryTier.builder().capacity(capacity);
                if (tier.equals("memory-nopolicy")) {
                    b.policy(NoPolicy::new);
                }
                MemoryTier memory = b.build();
                long before = usedHeapAfterGc();
                fillMemory(memory, count, perObject);
                long after = usedHeapAfterGc();
                check(TierInternals.pageCount(memory), count, tier);
                print(tier, count, perObject, (double) (after - before) / count, Double.NaN);
                memory.close();
            }
            case "disk" -> {
                Path directory = base.resolve("tier-heap-" + count + "x" + perObject);
                DiskBenchData.deleteTree(directory);
                long capacity = ((long) count * (256 + 128) / (64L << 20) + 3) * (64L << 20);
                try {
                    DiskTier disk = DiskTier.builder()
                            .directory(directory)
                            .capacity(capacity)
                            .segmentSize(64L << 20)
                            .build();
                    long before = usedHeapAfterGc();
                    fillDisk(disk, count, perObject);
                    long after = usedHeapAfterGc();
                    check(TierInternals.pageCount(disk), count, tier);
                    disk.close();
                    long closed = usedHeapAfterGc();
                    DiskTier reopened = DiskTier.builder()
                            .directory(directory)
                            .capacity(capacity)
                            .segmentSize(64L << 20)
                            .build();
                    long open = usedHeapAfterGc();
                    check(TierInternals.pageCount(reopened), count, tier + " reopened");
                    print(tier, count, perObject, (double) (after - before) / count, (double) (open - closed) / count);
                    reopened.close();
                } finally {
                    DiskBenchData.deleteTree(directory);
                }
            }
            default ->
                throw new IllegalArgumentException("tier: " + tier + " (expected: memory, memory-nopolicy or disk)");
        }
    }

    private static void print(String tier, int count, int perObject, double fill, double reopen) {
        System.out.printf(
                Locale.ROOT,
                "%-15s %8d %12d %20.1f %22s%n",
                tier,
                count,
                perObject,
                fill,
                Double.isNaN(reopen) ? "-" : String.format(Locale.ROOT, "%.1f", reopen));
    }

    private static void check(long held, int count, String tier) {
        if (held != count) {
            throw new IllegalStateException(tier + " holds " + held + " pages (expected: " + count + "; it refused or"
                    + " evicted some, so the figure would be wrong)");
        }
    }

    /**
     * Keys as a reader's cache makes them: fresh strings per object (nothing shared with the benchmark afterwards),
     * the same strings for every page of one object, as {@code TieredCache} passes one object's origin, key and
     * version to each of its pages.
     */
    private static final class Keys {
        private final int perObject;
        private final int pageSize;
        private int object = -1;
        private String origin;
        private String name;
        private String version;

        Keys(int perObject, int pageSize) {
            this.perObject = perObject;
            this.pageSize = pageSize;
        }

        PageKey key(int page) {
            int o = page / perObject;
            if (o != object) {
                object = o;
                origin = new String(DiskBenchData.ORIGIN);
                name = String.format(Locale.ROOT, "train/%07d.jpg", o);
                version = (pageSize * perObject) + "-" + (1_700_000_000_000L + 4_551L * o) + "-" + (1_000_000 + o);
            }
            return new PageKey(origin, name, version, (long) (page % perObject) * pageSize, pageSize);
        }
    }

    private static void fillMemory(MemoryTier tier, int count, int perObject) {
        Keys keys = new Keys(perObject, 512);
        for (int i = 0; i < count; i++) {
            Page page = tier.allocate(keys.key(i));
            if (page == null) {
                throw new IllegalStateException("memory tier refused page " + i + ": " + tier);
            }
            page.writableSegment().set(ValueLayout.JAVA_INT, 0, i);
            page.seal();
            tier.put(page);
            page.release();
        }
    }

    private static void fillDisk(DiskTier tier, int count, int perObject) {
        byte[] bytes = new byte[256];
        Keys keys = new Keys(perObject, 256);
        for (int i = 0; i < count; i++) {
            bytes[0] = (byte) i;
            bytes[1] = (byte) (i >> 8);
            bytes[2] = (byte) (i >> 16);
            Page page = new Page(keys.key(i), MemorySegment.ofArray(bytes)) {
                @Override
                protected void deallocate() {}
            };
            page.seal();
            if (!tier.put(page)) {
                throw new IllegalStateException("disk tier refused page " + i + ": " + tier + ", " + tier.stats());
            }
        }
    }

    static long usedHeapAfterGc() {
        Runtime runtime = Runtime.getRuntime();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 4; i++) {
            System.gc();
            used = Math.min(used, runtime.totalMemory() - runtime.freeMemory());
        }
        return used;
    }

    /** A policy that keeps nothing: isolates the tier's own index from its policy's state. Never evicts. */
    private static final class NoPolicy implements EvictionPolicy {

        NoPolicy(long capacity, Evictor evictor) {}

        @Override
        public void recordAccess(PageKey key) {}

        @Override
        public void recordInsert(PageKey key, long weight) {}

        @Override
        public void recordRemoval(PageKey key) {}

        @Override
        public long evict(long bytes) {
            return 0;
        }
    }
}
