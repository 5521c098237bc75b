// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.sun.management.GarbageCollectionNotificationInfo;
import dev.granary.LeakDetection;
import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.loader.Dataset;
import dev.granary.loader.TarWriter;
import dev.granary.loader.WebDataset;
import dev.granary.spi.Origin;
import dev.granary.tier.MemoryTier;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.lang.ref.Reference;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import javax.management.openmbean.CompositeData;

/**
 * How much Java heap a {@link Dataset} keeps per sample, and how much its construction needs at its peak: the figures
 * behind "memory that scales with the dataset" (issue 12) in docs/benchmarks.md.
 *
 * <h2>What is measured</h2>
 * For each sample count N and trial: a fresh cache over a generated origin; a full GC and the used heap
 * ({@code base}); the dataset is built ({@link Dataset#ofObjects} listing the origin, {@link Dataset#ofKeys} from a
 * list of keys the caller then drops, or {@link WebDataset#of} indexing tar shards); a full GC with the dataset still
 * reachable and the used heap again ({@code after}). <b>Retained</b> = {@code (after - base) / N}: everything the
 * dataset keeps, plus whatever the cache kept because of the listing (its metadata), which a user pays just the same.
 * <b>Peak</b> = the largest heap in use right after any collection during the build, less {@code base}, per sample: a
 * bound on what the build held live at once (collections are not forced during the build, so it includes garbage an
 * old-generation collection would have found; a bigger heap collects less often and may report less). Every dataset
 * is checked against the origin (size, first, middle and last key) so that a compact dataset cannot win by being
 * wrong.
 *
 * <h2>Origins ({@code --origin})</h2>
 * <ul>
 *   <li>{@code synthetic}: {@link SyntheticOrigin}: keys {@code obj/0000042}, one version {@code "v1"} for all.</li>
 *   <li>{@code s3}: ImageNet-like keys {@code train/n00000042/n00000042_00054321.JPEG} (1 300 per class), sizes spread
 *       over 40–200 KB, S3 ETags (a quoted 32-digit hex MD5).</li>
 *   <li>{@code gcs}: the same keys; versions are GCS generations (16-digit numbers).</li>
 *   <li>{@code posix}: the same keys; versions are {@code PosixOrigin}'s size-mtime-inode in hex.</li>
 *   <li>{@code web} (with {@code --dataset=web}): tar shards {@code shards/000042.tar} of 1 000 samples, each a
 *       {@code jpg} of 64 bytes and a {@code cls}; generated on demand.</li>
 * </ul>
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@heap \
 *     -Dheap.args="--dataset=objects --origin=s3 --samples=100000,1000000,5000000 --trials=3"
 * </pre>
 * The JVM runs with {@code -Xmx8g} (so that today's and tomorrow's datasets both fit); pass {@code --dataset=keys} or
 * {@code --dataset=web} for the other kinds.
 */
public final class DatasetHeapBenchmark {

    private DatasetHeapBenchmark() {}

    /**
     * Runs the measurement and prints one line per sample count.
     *
     * @param args {@code --dataset=objects|keys|web --origin=synthetic|s3|gcs|posix --samples=N[,N…] --trials=T}
     * @throws Exception if the origin or the dataset fails
     */
    public static void main(String[] args) throws Exception {
        Map<String, String> o = new LinkedHashMap<>(
                Map.of("dataset", "objects", "origin", "s3", "samples", "100000,1000000,5000000", "trials", "3"));
        for (String arg : args) {
            int eq = arg.indexOf('=');
            String name = arg.startsWith("--") && eq > 2 ? arg.substring(2, eq) : null;
            if (name == null || !o.containsKey(name)) {
                throw new IllegalArgumentException(
                        "argument: '" + arg + "' (expected: --name=value with a name in " + o.keySet() + ")");
            }
            o.put(name, arg.substring(eq + 1));
        }
        String kind = o.get("dataset");
        String style = kind.equals("web") ? "web" : o.get("origin");
        int trials = Integer.parseInt(o.get("trials"));
        System.out.printf(
                "dataset=%s origin=%s max heap %d MiB, %s%n",
                kind, style, Runtime.getRuntime().maxMemory() >> 20, Runtime.version());
        System.out.println("samples     retained B/sample (trials)          median   peak B/sample (median)   build s");
        for (String n : o.get("samples").split(",")) {
            int samples = Integer.parseInt(n.strip().replace("_", ""));
            double[] retained = new double[trials];
            double[] peak = new double[trials];
            double[] seconds = new double[trials];
            for (int t = 0; t < trials; t++) {
                double[] r = measure(kind, style, samples);
                retained[t] = r[0];
                peak[t] = r[1];
                seconds[t] = r[2];
            }
            StringBuilder all = new StringBuilder();
            for (double r : retained) {
                all.append(String.format("%.1f ", r));
            }
            System.out.printf(
                    "%9d   %-32s %8.1f   %14.1f          %6.2f%n",
                    samples, all.toString().strip(), median(retained), median(peak), median(seconds));
        }
    }

    /** One trial: {retained bytes per sample, peak bytes per sample, build seconds}. */
    @SuppressWarnings("UnusedAssignment") // given = null: the caller's keys become garbage before the measurement
    private static double[] measure(String kind, String style, int samples) throws Exception {
        Origin origin = switch (style) {
            case "synthetic" -> SyntheticOrigin.of(samples, 64);
            case "s3", "gcs", "posix" -> new ListedOrigin(samples, style);
            case "web" -> new TarShardOrigin(samples);
            default ->
                throw new IllegalArgumentException("--origin: '" + style + "' (expected: synthetic, s3, gcs or posix)");
        };
        try (TieredCache cache = TieredCache.builder(origin)
                .tier(MemoryTier.builder().capacity(256L << 20).build())
                .leakDetection(LeakDetection.DISABLED)
                .build()) {
            long base = usedAfterGc();
            // The caller's keys count in the peak, not in what the dataset retains: the caller drops them.
            List<String> given = kind.equals("keys") ? ((ListedOrigin) origin).keyList() : null;
            PeakWatch watch = PeakWatch.start();
            long start = System.nanoTime();
            Dataset dataset = switch (kind) {
                case "objects" -> Dataset.ofObjects(cache, "");
                case "keys" -> Dataset.ofKeys(cache, given);
                case "web" -> WebDataset.of(cache, ((TarShardOrigin) origin).shardKeys());
                default ->
                    throw new IllegalArgumentException("--dataset: '" + kind + "' (expected: objects, keys or web)");
            };
            double seconds = (System.nanoTime() - start) / 1e9;
            long peak = watch.stop();
            given = null;
            if (origin instanceof TarShardOrigin tars) {
                tars.forget(); // the generated shards are the origin's, not the dataset's
            }
            try {
                long after = usedAfterGc();
                check(dataset, origin, samples);
                return new double[] {
                    (after - base) / (double) samples, Math.max(0, peak - base) / (double) samples, seconds
                };
            } finally {
                Reference.reachabilityFence(dataset);
            }
        }
    }

    private static void check(Dataset dataset, Origin origin, int samples) {
        if (dataset.size() != samples) {
            throw new AssertionError("dataset of " + dataset.size() + " samples (expected: " + samples + ")");
        }
        for (int i : new int[] {0, samples / 2, samples - 1}) {
            String expected = switch (origin) {
                case SyntheticOrigin s -> s.key(i);
                case ListedOrigin l -> l.key(i);
                case TarShardOrigin w -> w.sampleKey(i);
                default -> throw new AssertionError(origin);
            };
            if (!dataset.key(i).equals(expected)) {
                throw new AssertionError("key " + i + ": '" + dataset.key(i) + "' (expected: '" + expected + "')");
            }
            if (origin instanceof ListedOrigin l && dataset.byteSize(i) != -1 && dataset.byteSize(i) != l.size(i)) {
                throw new AssertionError("size of " + i + ": " + dataset.byteSize(i) + " (expected " + l.size(i) + ")");
            }
        }
    }

    /** Used heap after full collections, once it stops shrinking. */
    static long usedAfterGc() {
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 6; i++) {
            System.gc();
            long now = heapUsed();
            if (now >= used - (64 << 10) && i >= 2) {
                return Math.min(now, used);
            }
            used = Math.min(used, now);
        }
        return used;
    }

    private static long heapUsed() {
        long used = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                used += pool.getUsage().getUsed();
            }
        }
        return used;
    }

    private static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** The largest heap in use right after a collection, from the collectors' notifications. */
    private static final class PeakWatch implements NotificationListener {
        private final AtomicLong peak = new AtomicLong();
        private final List<NotificationEmitter> emitters = new ArrayList<>();

        static PeakWatch start() {
            PeakWatch watch = new PeakWatch();
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                if (gc instanceof NotificationEmitter emitter) {
                    emitter.addNotificationListener(watch, null, null);
                    watch.emitters.add(emitter);
                }
            }
            return watch;
        }

        @Override
        public void handleNotification(Notification n, Object handback) {
            if (!n.getType().equals(GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) {
                return;
            }
            var info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
            long used = 0;
            for (MemoryUsage u : info.getGcInfo().getMemoryUsageAfterGc().values()) {
                used += u.getUsed();
            }
            // Non-heap pools (metaspace, code cache) are in the map too; they hardly move during a build.
            long nonHeap =
                    ManagementFactory.getMemoryMXBean().getNonHeapMemoryUsage().getUsed();
            peak.accumulateAndGet(used - nonHeap, Math::max);
        }

        long stop() throws Exception {
            for (NotificationEmitter e : emitters) {
                e.removeNotificationListener(this);
            }
            return Math.max(peak.get(), heapUsed());
        }
    }

    /**
     * A listing of generated objects with realistic keys and versions: ImageNet-like keys, sizes of 40–200 KB and the
     * version format of S3, GCS or POSIX. Reads return generated bytes of the listed size.
     */
    static final class ListedOrigin implements Origin {
        private static final int PER_CLASS = 1300;
        private final int count;
        private final String style;
        private final URI uri;

        ListedOrigin(int count, String style) {
            this.count = count;
            this.style = style;
            this.uri = URI.create("listed://" + style + "-" + count + "/");
        }

        String key(int i) {
            int c = i / PER_CLASS;
            return String.format("train/n%08d/n%08d_%08d.JPEG", c, c, i);
        }

        long size(int i) {
            return 40_000L + Math.floorMod(SyntheticOrigin.word(i, 1), 160_000);
        }

        String version(int i) {
            long a = SyntheticOrigin.word(i, 2);
            long b = SyntheticOrigin.word(i, 3);
            return switch (style) {
                case "s3" -> "\"" + hex16(a) + hex16(b) + "\"";
                case "gcs" -> Long.toString(1_732_400_000_000_000L + Math.floorMod(a, 10_000_000_000L));
                default ->
                    Long.toHexString(size(i)) + "-"
                            + Long.toHexString(1_732_400_000_000_000_000L + Math.floorMod(a, 1_000_000_000_000L)) + "-"
                            + Long.toHexString(1000 + i);
            };
        }

        List<String> keyList() {
            return IntStream.range(0, count).mapToObj(this::key).toList();
        }

        private static String hex16(long v) {
            String s = Long.toHexString(v);
            return "0".repeat(16 - s.length()) + s;
        }

        private int index(String key) throws NoSuchObjectException {
            int us = key.lastIndexOf('_');
            try {
                int i = Integer.parseInt(key.substring(us + 1, key.length() - ".JPEG".length()));
                if (i >= 0 && i < count && key.equals(key(i))) {
                    return i;
                }
            } catch (RuntimeException e) {
                // not one of ours
            }
            throw new NoSuchObjectException(uri, key);
        }

        @Override
        public URI uri() {
            return uri;
        }

        @Override
        public ObjectInfo stat(String key) throws IOException {
            int i = index(key);
            return new ObjectInfo(key, size(i), version(i));
        }

        @Override
        public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
            int i = index(object.key());
            if (!object.version().equals(version(i))) {
                throw new ObjectChangedException(uri, object.key(), object.version(), version(i));
            }
            if (position < 0 || position + dst.byteSize() > size(i)) {
                throw new EOFException("range past the end of '" + object.key() + "'");
            }
            SyntheticOrigin.fill(i, position, dst);
        }

        @Override
        public Stream<ObjectInfo> list(String prefix) {
            return IntStream.range(0, count)
                    .mapToObj(i -> new ObjectInfo(key(i), size(i), version(i)))
                    .filter(info -> info.key().startsWith(prefix));
        }

        @Override
        public void close() {}
    }

    /** Tar shards of 1 000 samples each ({@code jpg} of 64 bytes, {@code cls}), generated when first read. */
    static final class TarShardOrigin implements Origin {
        static final int PER_SHARD = 1000;
        private final int samples;
        private final int shards;
        private final URI uri;
        private final Map<Integer, byte[]> recent = new ConcurrentHashMap<>();

        TarShardOrigin(int samples) {
            this.samples = samples;
            this.shards = (samples + PER_SHARD - 1) / PER_SHARD;
            this.uri = URI.create("tars://" + samples + "/");
        }

        List<String> shardKeys() {
            return IntStream.range(0, shards)
                    .mapToObj(s -> String.format("shards/%06d.tar", s))
                    .toList();
        }

        String sampleKey(int i) {
            return String.format("s%09d", i);
        }

        private byte[] shard(int s) {
            byte[] bytes = recent.get(s);
            if (bytes != null) {
                return bytes;
            }
            TarWriter tar = new TarWriter();
            for (int i = s * PER_SHARD; i < Math.min(samples, (s + 1) * PER_SHARD); i++) {
                byte[] jpg = new byte[64];
                MemorySegment.ofArray(jpg).fill((byte) i);
                tar.add(sampleKey(i) + ".jpg", jpg);
                tar.add(sampleKey(i) + ".cls", Integer.toString(i % 1000).getBytes(StandardCharsets.UTF_8));
            }
            bytes = tar.finish();
            if (recent.size() > 256) {
                recent.clear();
            }
            recent.put(s, bytes);
            return bytes;
        }

        void forget() {
            recent.clear();
        }

        private int index(String key) throws NoSuchObjectException {
            try {
                int s = Integer.parseInt(key.substring("shards/".length(), key.length() - ".tar".length()));
                if (s >= 0 && s < shards) {
                    return s;
                }
            } catch (RuntimeException e) {
                // not one of ours
            }
            throw new NoSuchObjectException(uri, key);
        }

        @Override
        public URI uri() {
            return uri;
        }

        @Override
        public ObjectInfo stat(String key) throws IOException {
            return new ObjectInfo(key, shard(index(key)).length, "v1");
        }

        @Override
        public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
            byte[] bytes = shard(index(object.key()));
            if (position < 0 || position + dst.byteSize() > bytes.length) {
                throw new EOFException("range past the end of '" + object.key() + "'");
            }
            MemorySegment.copy(MemorySegment.ofArray(bytes), position, dst, 0, dst.byteSize());
        }

        @Override
        public Stream<ObjectInfo> list(String prefix) throws IOException {
            List<ObjectInfo> out = new ArrayList<>();
            for (String key : shardKeys()) {
                if (key.startsWith(prefix)) {
                    out.add(stat(key));
                }
            }
            return out.stream();
        }

        @Override
        public int maxConcurrency() {
            return 16;
        }

        @Override
        public void close() {}
    }
}
