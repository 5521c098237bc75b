// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.PrestageResult;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.spi.Origin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Issue 13's promise, end to end: a dataset pre-staged into a disk tier gives the next job a first epoch with zero
 * origin data reads, whatever unit the loader reads it in. A WebDataset (shards written by {@link ShardWriter} with
 * their {@code .gidx} indexes, one index larger than a page) and plain objects larger than a page are staged through
 * {@link TieredCache#prestage} — over a POSIX directory and over a real S3 server (S3Proxy) — into a disk tier; the
 * cache is closed, and a child JVM opens a new cache on the same directory and runs, each checking every sample's
 * bytes against what was written: the shards' indexing (index files read whole), the dry run, a streamed epoch (shard
 * parts of 1 MiB, 64 pages each), a per-sample epoch (extents inside and across pages), and an epoch over the objects
 * (one extent each, up to six pages). The child reports the origin's data reads after each; all must be zero. With
 * pages of at least a part's minimum (1 MiB), a streamed epoch reads the pages themselves as its parts.
 */
@Timeout(300)
class StagedFirstEpochTest {

    static final int PAGE = 16 << 10;
    static final int PART = ShardParts.MIN_PART_SIZE;
    static final int SAMPLES = 240;
    static final int TINY = 1500;
    static final int OBJECTS = 12;

    @TempDir
    Path root;

    // ---------------------------------------------------------------------------- the dataset, a function of i

    static String sampleKey(int i) {
        return i < SAMPLES ? String.format("train/%06d", i) : String.format("tiny/%06d", i - SAMPLES);
    }

    /** The image of sample {@code i}: inside a page, or across several. */
    static byte[] jpg(int i) {
        SplittableRandom random = new SplittableRandom(1_000 + i);
        int size = i >= SAMPLES
                ? 1 + random.nextInt(40)
                : i % 3 == 0 ? 200 + random.nextInt(6_000) : 10_000 + random.nextInt(60_000);
        byte[] bytes = new byte[size];
        random.nextBytes(bytes);
        return bytes;
    }

    static byte[] cls(int i) {
        return Integer.toString(i % 1000).getBytes(US_ASCII);
    }

    static String objectKey(int i) {
        return String.format("objects/%03d.bin", i);
    }

    /** Object {@code i}: from a few bytes to six pages. */
    static byte[] object(int i) {
        SplittableRandom random = new SplittableRandom(7_000 + i);
        byte[] bytes = new byte[i % 4 == 0 ? 1 + random.nextInt(PAGE) : (i % 6) * PAGE + random.nextInt(PAGE)];
        random.nextBytes(bytes);
        return bytes;
    }

    /** Writes the shards (with indexes) and the objects under {@code data}; returns the shard keys. */
    static List<String> write(Path data) throws IOException {
        List<String> shards = new ArrayList<>();
        try (ShardWriter w = ShardWriter.builder(data.resolve("shards"))
                .pattern("train-%04d.tar")
                .maxCount(60)
                .build()) {
            for (int i = 0; i < SAMPLES; i++) {
                w.write(sampleKey(i), fields(i));
            }
            w.close();
            w.shards().forEach(s -> shards.add("shards/" + s));
        }
        try (ShardWriter w = ShardWriter.builder(data.resolve("shards"))
                .pattern("tiny-%04d.tar")
                .maxCount(TINY)
                .build()) {
            for (int i = SAMPLES; i < SAMPLES + TINY; i++) {
                w.write(sampleKey(i), fields(i));
            }
            w.close();
            w.shards().forEach(s -> shards.add("shards/" + s));
        }
        Files.createDirectories(data.resolve("objects"));
        for (int i = 0; i < OBJECTS; i++) {
            Files.write(data.resolve(objectKey(i)), object(i));
        }
        return shards;
    }

    private static Map<String, byte[]> fields(int i) {
        Map<String, byte[]> fields = new LinkedHashMap<>();
        fields.put("jpg", jpg(i));
        fields.put("cls", cls(i));
        return fields;
    }

    /** The cache of both the prestage and the job: memory over a disk tier. */
    static TieredCache cache(Origin origin, Path disk) {
        return TieredCache.builder(origin)
                .tier(MemoryTier.builder().capacity(16L << 20).slabSize(1 << 20).build())
                .tier(DiskTier.builder()
                        .directory(disk)
                        .capacity(64L << 20)
                        .segmentSize(4L << 20)
                        .build())
                .pageSize(PAGE)
                .build();
    }

    static S3Origin s3(URI endpoint, String bucket) {
        return S3Origin.builder()
                .bucket(bucket)
                .endpoint(endpoint)
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .retryBackoff(Duration.ofMillis(2))
                .maxConcurrency(8)
                .build();
    }

    // ---------------------------------------------------------------------------------------------- the tests

    @Test
    void aStagedPosixDatasetGivesTheNextJobAZeroOriginFirstEpoch() throws Exception {
        Path data = root.resolve("data");
        Path disk = root.resolve("nvme");
        List<String> shards = write(data);
        stage(PosixOrigin.of(data), disk, data);
        check(Job.run(shards, disk, "posix", data.toString()));
    }

    @Test
    void aStagedS3DatasetGivesTheNextJobAZeroOriginFirstEpoch() throws Exception {
        Path data = root.resolve("data");
        Path disk = root.resolve("nvme");
        List<String> shards = write(data);
        S3ProxyServer server = S3ProxyServer.shared();
        String bucket = "staged-" + Long.toHexString(System.nanoTime()) + "-"
                + ProcessHandle.current().pid();
        try (S3Client client = server.client();
                Stream<Path> files = Files.walk(data)) {
            client.createBucket(b -> b.bucket(bucket));
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                String key = data.relativize(file).toString().replace('\\', '/');
                client.putObject(b -> b.bucket(bucket).key(key), RequestBody.fromFile(file));
            }
        }
        stage(s3(server.endpoint(), bucket), disk, data);
        check(Job.run(shards, disk, "s3", server.endpoint().toString(), bucket));
    }

    @Test
    void withPagesOfAtLeastAPartsMinimumTheStreamReadsThePagesThemselves() throws Exception {
        Path data = root.resolve("data");
        Path disk = root.resolve("nvme");
        List<String> shards = write(data);
        int page = ShardParts.MIN_PART_SIZE;
        Supplier<TieredCache> cache = () -> TieredCache.builder(PosixOrigin.of(data))
                .tier(MemoryTier.builder().capacity(16L << 20).slabSize(4 << 20).build())
                .tier(DiskTier.builder()
                        .directory(disk)
                        .capacity(64L << 20)
                        .segmentSize(4L << 20)
                        .build())
                .pageSize(page)
                .build();
        long pages = 0;
        try (TieredCache staging = cache.get()) {
            assertTrue(staging.prestage("shards/", p -> {}).complete());
            for (String shard : shards) {
                pages += (staging.stat(shard).size() + page - 1) / page;
            }
        }
        try (TieredCache job = cache.get()) {
            WebDataset dataset = WebDataset.of(job, shards);
            try (DataLoader<Integer> loader = DataLoader.builder(dataset, Job::sample)
                    .batchSize(16)
                    .shuffle(Shuffle.shardBlocks(7, 2))
                    .workers(2)
                    .build()) { // parts of 8 MiB configured
                EpochPlan plan = loader.plan(0, 1).epochs().getFirst();
                assertEquals(pages, plan.reads(), "the epoch reads the staged 1 MiB pages as its parts: " + plan);
                assertEquals(0, plan.originReads(), plan.toString());
                long reads = job.stats().origin().reads();
                long diskMisses = job.stats().tiers().get(1).misses();
                long diskHits = job.stats().tiers().get(1).hits();
                assertEquals(SAMPLES + TINY, Job.drain(loader));
                assertEquals(reads, job.stats().origin().reads(), "no origin data read");
                assertEquals(
                        diskMisses,
                        job.stats().tiers().get(1).misses(),
                        "every part found as it is: no part" + " missed and assembled from pages");
                assertEquals(diskHits + pages, job.stats().tiers().get(1).hits(), "one hit per page");
            }
        }
    }

    /** Stages both prefixes, and checks the dataset is what the test means: an index file larger than a page. */
    private static void stage(Origin origin, Path disk, Path data) throws IOException {
        long indexes = 0;
        long largeIndexes = 0;
        try (Stream<Path> files = Files.list(data.resolve("shards"))) {
            for (Path f : files.filter(f -> f.toString().endsWith(ShardIndexFile.SUFFIX))
                    .toList()) {
                indexes++;
                largeIndexes += Files.size(f) > PAGE ? 1 : 0;
            }
        }
        assertEquals(5, indexes, "four shards of samples and one of tiny ones, each with its index");
        assertEquals(1, largeIndexes, "the tiny shard's index spans pages");
        try (TieredCache cache = cache(origin, disk)) {
            for (String prefix : List.of("shards/", "objects/")) {
                PrestageResult r = cache.prestage(prefix, p -> {});
                assertTrue(r.complete(), r.toString());
                assertTrue(r.bytesFetched() > 0, r.toString());
            }
            assertEquals(0, cache.stats().tiers().get(0).usedBytes(), "staged below memory");
        }
    }

    private static void check(Map<String, Long> figures) {
        assertEquals(SAMPLES + TINY, figures.get("samples.streamed"), figures.toString());
        assertEquals(SAMPLES + TINY, figures.get("samples.perSample"), figures.toString());
        assertEquals(OBJECTS, figures.get("objects"), figures.toString());
        assertTrue(
                figures.get("parts") < figures.get("samples.streamed") / 10,
                "the streamed epoch reads parts: " + figures);
        assertEquals(0, figures.get("origin.indexing"), "indexing read the staged index files: " + figures);
        assertEquals(0, figures.get("plan.streamed"), "the dry run predicts no origin read: " + figures);
        assertEquals(0, figures.get("plan.perSample"), figures.toString());
        assertEquals(0, figures.get("origin.streamed"), "streamed first epoch: " + figures);
        assertEquals(0, figures.get("origin.perSample"), "per-sample first epoch: " + figures);
        assertEquals(0, figures.get("origin.objects"), "objects up to six pages: " + figures);
        assertTrue(figures.get("hits.disk") > 0, figures.toString());
    }

    /** The training job: a new JVM on the staged directory; prints its figures as {@code name=value} lines. */
    static final class Job {

        static Map<String, Long> run(List<String> shards, Path disk, String... origin) throws Exception {
            List<String> command = new ArrayList<>(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-Xmx256m",
                    "--enable-native-access=ALL-UNNAMED",
                    "-cp",
                    System.getProperty("java.class.path"),
                    Job.class.getName(),
                    String.join(",", shards),
                    disk.toString()));
            command.addAll(List.of(origin));
            Process child =
                    new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(child.waitFor(200, TimeUnit.SECONDS), out);
            assertEquals(0, child.exitValue(), out);
            Map<String, Long> figures = new TreeMap<>();
            for (String line : out.split("\n")) {
                if (line.startsWith("figure ")) {
                    String[] kv = line.substring("figure ".length()).strip().split("=");
                    figures.put(kv[0], Long.parseLong(kv[1]));
                }
            }
            assertEquals(11, figures.size(), out);
            return figures;
        }

        public static void main(String[] args) throws Exception {
            List<String> shards = List.of(args[0].split(","));
            Path disk = Path.of(args[1]);
            Origin origin =
                    args[2].equals("posix") ? PosixOrigin.of(Path.of(args[3])) : s3(URI.create(args[3]), args[4]);
            try (TieredCache cache = cache(origin, disk)) {
                WebDataset dataset = WebDataset.of(cache, shards);
                figure("origin.indexing", cache.stats().origin().reads());

                long before = cache.stats().origin().reads();
                try (DataLoader<Integer> loader = DataLoader.builder(dataset, Job::sample)
                        .batchSize(16)
                        .shuffle(Shuffle.shardBlocks(7, 2))
                        .shardPartSize(PART)
                        .workers(2)
                        .build()) {
                    EpochPlan plan = loader.plan(0, 1).epochs().getFirst();
                    figure("plan.streamed", plan.originReads());
                    figure("parts", plan.reads());
                    figure("samples.streamed", drain(loader));
                }
                figure("origin.streamed", cache.stats().origin().reads() - before);

                before = cache.stats().origin().reads();
                try (DataLoader<Integer> loader = DataLoader.builder(dataset, Job::sample)
                        .batchSize(16)
                        .shuffle(Shuffle.samples(3))
                        .streamShards(false)
                        .workers(2)
                        .build()) {
                    figure(
                            "plan.perSample",
                            loader.plan(0, 1).epochs().getFirst().originReads());
                    figure("samples.perSample", drain(loader));
                }
                figure("origin.perSample", cache.stats().origin().reads() - before);

                before = cache.stats().origin().reads();
                try (DataLoader<Integer> loader = DataLoader.builder(Dataset.ofObjects(cache, "objects/"), Job::object)
                        .batchSize(4)
                        .shuffle(5)
                        .workers(2)
                        .build()) {
                    figure("objects", drain(loader));
                }
                figure("origin.objects", cache.stats().origin().reads() - before);
                figure("hits.disk", cache.stats().tiers().get(1).hits());
            }
        }

        private static void figure(String name, long value) {
            System.out.println("figure " + name + "=" + value);
        }

        private static long drain(DataLoader<Integer> loader) {
            long n = 0;
            try (Epoch<Integer> epoch = loader.epoch(0)) {
                for (Batch<Integer> batch : epoch) {
                    n += batch.items().size();
                }
            }
            return n;
        }

        /** Checks a sample's fields against what was written for its key. */
        private static Integer sample(Sample sample) {
            String key = sample.key();
            int i = key.startsWith("tiny/")
                    ? SAMPLES + Integer.parseInt(key.substring(5))
                    : Integer.parseInt(key.substring(6));
            assertArrayEquals(jpg(i), bytes(sample.fields().get("jpg")), key);
            assertArrayEquals(cls(i), bytes(sample.fields().get("cls")), key);
            return i;
        }

        private static Integer object(Sample sample) {
            int i = Integer.parseInt(sample.key().substring("objects/".length(), "objects/".length() + 3));
            assertArrayEquals(StagedFirstEpochTest.object(i), bytes(sample.bytes()), sample.key());
            return i;
        }

        private static byte[] bytes(ByteBuffer buffer) {
            byte[] b = new byte[buffer.remaining()];
            buffer.duplicate().get(b);
            return b;
        }
    }
}
