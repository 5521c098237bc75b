// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectInfo;
import dev.granary.OriginStats;
import dev.granary.TieredCache;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.FaultProxy;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.testkit.LeakCheck;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The loop of API.md ("Loading batches") against a real S3 server (S3Proxy, shared by the test JVM): a dataset of
 * objects under a prefix and a WebDataset of tar shards, read through S3Origin and a memory tier over two shuffled
 * epochs; what the listing costs; a missing key; and 503 bursts from a fault proxy that the origin retries through.
 */
@Timeout(60)
class LoaderOverS3Test {

    private static final String BUCKET = "loader-" + Long.toHexString(System.nanoTime()) + "-"
            + ProcessHandle.current().pid();
    private static final int OBJECTS = 23;
    private static final List<String> SHARDS = List.of("shards/000000.tar", "shards/000001.tar");

    /** Every object under train/, by key (so in UTF-8 order, the order of Dataset.ofObjects). */
    private static final TreeMap<String, byte[]> objects = new TreeMap<>();
    /** Every WebDataset sample, in shard and tar order: key → fields. */
    private static final LinkedHashMap<String, Map<String, byte[]>> samples = new LinkedHashMap<>();

    private static S3ProxyServer server;
    private static S3Client client;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @BeforeAll
    static void upload() throws IOException {
        server = S3ProxyServer.shared();
        client = server.client();
        client.createBucket(b -> b.bucket(BUCKET));
        SplittableRandom random = new SplittableRandom(17);
        for (int i = 0; i < OBJECTS; i++) {
            // Mixed case and widths: the listing's order is byte order, not numeric order.
            String key = i % 5 == 0 ? String.format("train/A%d.bin", i) : String.format("train/s%03d.bin", i);
            byte[] bytes = bytes(random, 1 + random.nextInt(6000));
            put(key, bytes);
            objects.put(key, bytes);
        }
        put("training.txt", "not under train/".getBytes(UTF_8));
        put("val/0.bin", bytes(random, 10));
        int n = 0;
        for (String shard : SHARDS) {
            TarWriter tar = new TarWriter();
            tar.addDirectory("img/");
            for (int j = 0; j < 6; j++, n++) {
                String key = String.format("img/%06d", n);
                Map<String, byte[]> fields = new LinkedHashMap<>();
                fields.put("jpg", bytes(random, random.nextInt(5000)));
                fields.put("cls", Integer.toString(n % 10).getBytes(UTF_8));
                for (Map.Entry<String, byte[]> f : fields.entrySet()) {
                    tar.add(key + "." + f.getKey(), f.getValue());
                }
                samples.put(key, fields);
            }
            put(shard, tar.finish());
        }
    }

    @AfterAll
    static void closeClient() {
        if (client != null) {
            client.close();
        }
    }

    private static byte[] bytes(SplittableRandom random, int size) {
        byte[] b = new byte[size];
        random.nextBytes(b);
        return b;
    }

    private static void put(String key, byte[] bytes) {
        client.putObject(b -> b.bucket(BUCKET).key(key), RequestBody.fromBytes(bytes));
    }

    private TieredCache cache(URI endpoint) {
        S3Origin origin = S3Origin.builder()
                .bucket(BUCKET)
                .endpoint(endpoint)
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .retryBackoff(Duration.ofMillis(2))
                .build();
        return LoaderFixture.cache(leaks, origin, 32L << 20);
    }

    /** A decoder's copy of a sample: key, index, fields. */
    record Item(String key, int index, Map<String, byte[]> fields) {}

    private static Item copy(Sample sample) {
        Map<String, byte[]> fields = new LinkedHashMap<>();
        for (Map.Entry<String, ByteBuffer> f : sample.fields().entrySet()) {
            ByteBuffer b = f.getValue().duplicate();
            byte[] out = new byte[b.remaining()];
            b.get(out);
            fields.put(f.getKey(), out);
        }
        return new Item(sample.key(), sample.index(), fields);
    }

    /**
     * Runs two shuffled epochs and checks every item against {@code expected(item)}, each sample once per epoch;
     * returns the origin's counters accumulated by each epoch.
     */
    private static List<OriginStats> twoEpochs(Dataset dataset, Function<Item, Map<String, byte[]>> expected) {
        List<OriginStats> perEpoch = new ArrayList<>();
        try (DataLoader<Item> loader = DataLoader.builder(dataset, LoaderOverS3Test::copy)
                .batchSize(5)
                .shuffle(42)
                .workers(2)
                .prefetch(2)
                .build()) {
            List<List<Integer>> orders = new ArrayList<>();
            for (int epoch = 0; epoch < 2; epoch++) {
                OriginStats before = dataset.cache().stats().origin();
                List<Integer> order = new ArrayList<>();
                try (Epoch<Item> batches = loader.epoch(epoch)) {
                    for (Batch<Item> batch : batches) {
                        for (Item item : batch.items()) {
                            assertEquals(dataset.key(item.index()), item.key());
                            Map<String, byte[]> want = expected.apply(item);
                            assertEquals(
                                    List.copyOf(want.keySet()),
                                    List.copyOf(item.fields().keySet()),
                                    item.key());
                            for (Map.Entry<String, byte[]> f : want.entrySet()) {
                                assertArrayEquals(
                                        f.getValue(),
                                        item.fields().get(f.getKey()),
                                        "epoch " + epoch + ": " + item.key() + "." + f.getKey());
                            }
                            order.add(item.index());
                        }
                    }
                }
                assertEquals(dataset.size(), order.size(), "epoch " + epoch + " size");
                assertEquals(dataset.size(), new HashSet<>(order).size(), "every sample once in epoch " + epoch);
                orders.add(order);
                perEpoch.add(minus(dataset.cache().stats().origin(), before));
            }
            assertTrue(!orders.get(0).equals(orders.get(1)), "each epoch has its own permutation");
            assertEquals(2L * dataset.size(), loader.stats().samples());
        }
        return perEpoch;
    }

    private static OriginStats minus(OriginStats a, OriginStats b) {
        return new OriginStats(
                a.reads() - b.reads(),
                a.bytes() - b.bytes(),
                a.metadataRequests() - b.metadataRequests(),
                a.errors() - b.errors(),
                a.retries() - b.retries());
    }

    private static Map<String, byte[]> objectFields(Item item) {
        return Map.of("bin", objects.get(item.key()));
    }

    @Test
    void objectsUnderAPrefixTwoShuffledEpochsForOneListing() throws IOException {
        try (TieredCache cache = cache(server.endpoint())) {
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            assertEquals(
                    List.copyOf(objects.keySet()),
                    IntStream.range(0, dataset.size()).mapToObj(dataset::key).toList(),
                    "every object under train/ and nothing else, in byte order");
            for (int i = 0; i < dataset.size(); i++) {
                assertEquals(objects.get(dataset.key(i)).length, dataset.byteSize(i), "size from the listing");
            }
            // The counter counts origin calls for metadata: one list() (S3Origin pages lazily; 23 keys is one page)
            // and no HEAD per object, now or while reading within the metadata TTL.
            assertEquals(1, cache.stats().origin().metadataRequests());

            List<OriginStats> epochs = twoEpochs(dataset, LoaderOverS3Test::objectFields);
            long total = objects.values().stream().mapToLong(b -> b.length).sum();
            assertEquals(
                    new OriginStats(OBJECTS, total, 0, 0, 0),
                    epochs.get(0),
                    "epoch 0: one GET per object (each smaller than a page), no HEAD");
            assertEquals(new OriginStats(0, 0, 0, 0, 0), epochs.get(1), "epoch 1: all from the memory tier");
            assertEquals(1, cache.stats().origin().metadataRequests());
        }
    }

    @Test
    void webDatasetShardsTwoShuffledEpochs() throws IOException {
        try (TieredCache cache = cache(server.endpoint())) {
            WebDataset dataset = WebDataset.of(cache, SHARDS);
            OriginStats indexing = cache.stats().origin();
            assertEquals(
                    List.copyOf(samples.keySet()),
                    IntStream.range(0, dataset.size()).mapToObj(dataset::key).toList());
            // One listing of the shards' common prefix (no HEAD per shard); no index files, so each shard (under
            // 8 MiB) is scanned from one ranged GET of its only part.
            assertEquals(1, indexing.metadataRequests());
            assertEquals(2, indexing.reads(), "one part per shard: " + indexing);
            assertEquals(0, indexing.errors());

            List<OriginStats> epochs = twoEpochs(dataset, item -> samples.get(item.key()));
            long total = 0;
            for (int s = 0; s < dataset.shardCount(); s++) {
                total += dataset.shardInfo(s).size();
            }
            // Each shard is smaller than a part, so the loader streams the very part extents the scan read and left
            // in the cache: the first epoch asks the origin for nothing.
            assertTrue(total > 0);
            assertEquals(new OriginStats(0, 0, 0, 0, 0), epochs.get(0), "epoch 0: the scan's parts, cached");
            assertEquals(new OriginStats(0, 0, 0, 0, 0), epochs.get(1), "epoch 1: all from the memory tier");
        }
    }

    /**
     * {@link WebDataset#writeIndex} over S3 (a PutObject beside each shard, recording its ETag), then indexing from
     * the index files: one listing and one GET per shard. A shard re-uploaded with other bytes of the same size gets
     * another ETag, so its index is unconfirmed and the changed sample fails, naming the shard and sample.
     */
    @Test
    void writeIndexOverS3ThenIndexingCostsOneGetPerShard() throws IOException {
        List<String> shards = List.of("indexed/000000.tar", "indexed/000001.tar");
        byte[][] bytes = new byte[2][];
        for (int s = 0; s < 2; s++) {
            String from = SHARDS.get(s);
            bytes[s] = client.getObjectAsBytes(b -> b.bucket(BUCKET).key(from)).asByteArray();
            put(shards.get(s), bytes[s]);
        }
        try (TieredCache cache = cache(server.endpoint())) {
            for (String shard : shards) {
                ObjectInfo index = WebDataset.writeIndex(cache, shard);
                assertEquals(shard + ".gidx", index.key());
                assertEquals(
                        index.size(),
                        client.headObject(b -> b.bucket(BUCKET).key(shard + ".gidx"))
                                .contentLength());
            }
        }
        try (TieredCache cache = cache(server.endpoint())) {
            WebDataset dataset = WebDataset.of(cache, shards);
            OriginStats indexing = cache.stats().origin();
            assertEquals(1, indexing.metadataRequests(), "one listing, no HEAD");
            assertEquals(2, indexing.reads(), "one GET per shard: its index file");
            assertTrue(dataset.indexedFromFile(0) && dataset.indexedFromFile(1));
            assertTrue(!dataset.verifies(0) && !dataset.verifies(1), "the ETags match: trusted");
            assertEquals(
                    List.copyOf(samples.keySet()),
                    IntStream.range(0, dataset.size()).mapToObj(dataset::key).toList());
            twoEpochs(dataset, item -> samples.get(item.key()));
        }
        // Another upload of the same size with one byte changed inside sample 2's extent.
        try (TieredCache cache = cache(server.endpoint())) {
            WebDataset before = WebDataset.of(cache, shards);
            byte[] changed = bytes[0].clone();
            changed[(int) before.sampleStart(2)] ^= 1;
            put(shards.get(0), changed);
        }
        try (TieredCache cache = cache(server.endpoint())) {
            WebDataset dataset = WebDataset.of(cache, shards);
            assertTrue(dataset.verifies(0) && !dataset.verifies(1), "shard 0 has another ETag now");
            CorruptShardException e = assertThrows(CorruptShardException.class, () -> dataset.read(2));
            assertEquals(shards.get(0), e.shard());
            assertTrue(e.getMessage().contains("sample '" + dataset.key(2) + "'"), e.getMessage());
            Sample fine = dataset.read(1);
            fine.release();
        }
    }

    @Test
    void aMissingKeyFailsItsBatchWithNoSuchObject() throws IOException {
        List<String> keys = new ArrayList<>(objects.keySet()).subList(0, 6);
        List<String> withMissing = new ArrayList<>(keys);
        withMissing.add(4, "train/missing.bin");
        try (TieredCache cache = cache(server.endpoint());
                DataLoader<Item> loader = DataLoader.builder(Dataset.ofKeys(cache, withMissing), LoaderOverS3Test::copy)
                        .batchSize(3)
                        .workers(2)
                        .build();
                Epoch<Item> epoch = loader.epoch(0)) {
            var it = epoch.iterator();
            List<Item> first = it.next().items();
            assertEquals(keys.subList(0, 3), first.stream().map(Item::key).toList());
            SampleException failed = assertThrows(SampleException.class, it::next);
            assertEquals("train/missing.bin", failed.key());
            assertEquals(4, failed.index());
            assertEquals(1, failed.batch());
            assertTrue(failed.getMessage().contains("'train/missing.bin'"), failed.getMessage());
            NoSuchObjectException cause = assertInstanceOf(NoSuchObjectException.class, failed.getCause());
            assertEquals("train/missing.bin", cause.key());
            List<Item> last = it.next().items();
            assertEquals(keys.subList(5, 6), last.stream().map(Item::key).toList(), "the epoch goes on");
            assertArrayEquals(objects.get(keys.get(5)), last.getFirst().fields().get("bin"));
            assertTrue(!it.hasNext());
            assertEquals(1, loader.stats().failed());
        }
    }

    @Test
    void bursts503AreRetriedAndEveryByteArrives() throws IOException {
        try (FaultProxy proxy = FaultProxy.start(server.port());
                TieredCache cache = cache(proxy.endpoint())) {
            proxy.failNext(2);
            Dataset dataset = Dataset.ofObjects(cache, "train/");
            assertEquals(2, proxy.injectedFailures(), "the listing's first attempts got 503s");
            assertEquals(OBJECTS, dataset.size());
            OriginStats listed = cache.stats().origin();
            assertEquals(2, listed.retries());
            assertEquals(0, listed.errors(), "retried, not failed");

            proxy.failNext(2);
            List<OriginStats> epochs = twoEpochs(dataset, LoaderOverS3Test::objectFields);
            assertEquals(4, proxy.injectedFailures());
            assertEquals(2, epochs.get(0).retries(), "two GETs retried once each, or one twice");
            assertEquals(0, epochs.get(0).errors());
            assertEquals(OBJECTS, epochs.get(0).reads());

            // The shards: 503s on the listing and part reads of indexing; the epochs then stream the parts the scan
            // left in the cache and ask the origin for nothing.
            proxy.failNext(2);
            WebDataset shards = WebDataset.of(cache, SHARDS);
            assertEquals(samples.size(), shards.size());
            assertEquals(6, proxy.injectedFailures());
            List<OriginStats> shardEpochs = twoEpochs(shards, item -> samples.get(item.key()));
            assertEquals(0, shardEpochs.get(0).reads() + shardEpochs.get(1).reads());
            assertEquals(6, cache.stats().origin().retries());
            assertEquals(0, cache.stats().origin().errors());
        }
    }
}
