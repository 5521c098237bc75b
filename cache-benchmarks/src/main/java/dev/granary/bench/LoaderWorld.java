// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import dev.granary.TieredCache;
import dev.granary.loader.Sample;
import dev.granary.loader.TarWriter;
import dev.granary.loader.WebDataset;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.FaultProxy;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.zip.CRC32C;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A real S3 server with a training dataset in it, behind injected latency: what the demo and the loader benchmark
 * read. S3Proxy 4.1.0 (filesystem backend, a child JVM on 127.0.0.1) serves bucket {@value #BUCKET}; a
 * {@link FaultProxy} in front of it adds a fixed delay to every request and caps each connection's bandwidth, as an
 * object store's time to first byte and per-stream throughput do.
 *
 * <p>The data, deterministic from the seed: WebDataset shards {@code shards/000000.tar} … whose samples have a
 * {@code jpg} field (random bytes, sizes spread ±50 % around the mean) and a {@code cls} field (the CRC32C of the jpg
 * bytes, as text, so a decoder can check every byte it gets); and small files {@code files/000000.bin} … whose first 4
 * bytes are the CRC32C of the rest.
 */
final class LoaderWorld implements AutoCloseable {

    static final String BUCKET = "granary-demo";

    final S3ProxyServer server;
    final FaultProxy proxy;
    final List<String> shards = new ArrayList<>();
    final List<String> files = new ArrayList<>();
    long shardBytes;
    long sampleBytes;
    long fileBytes;
    int samples;

    private LoaderWorld(S3ProxyServer server, FaultProxy proxy) {
        this.server = server;
        this.proxy = proxy;
    }

    /**
     * Starts the server and the proxy over {@code dir} and uploads the data (straight to the server, not through the
     * proxy).
     */
    static LoaderWorld start(
            Path dir, int shardCount, int samplesPerShard, int sampleSize, int fileCount, int fileSize, long seed)
            throws IOException, InterruptedException {
        return start(dir, shardCount, samplesPerShard, sampleSize, fileCount, fileSize, seed, false);
    }

    /** As above; with {@code uniformSizes} every sample and file has exactly its mean size. */
    static LoaderWorld start(
            Path dir,
            int shardCount,
            int samplesPerShard,
            int sampleSize,
            int fileCount,
            int fileSize,
            long seed,
            boolean uniformSizes)
            throws IOException, InterruptedException {
        S3ProxyServer server = S3ProxyServer.start(dir.resolve("s3"));
        FaultProxy proxy = null;
        try {
            proxy = FaultProxy.start(server.port());
            LoaderWorld world = new LoaderWorld(server, proxy);
            world.upload(shardCount, samplesPerShard, sampleSize, fileCount, fileSize, seed, uniformSizes);
            return world;
        } catch (IOException | RuntimeException e) {
            if (proxy != null) {
                proxy.close();
            }
            server.close();
            throw e;
        }
    }

    /** Sets the injected delay per request and the bandwidth cap per connection. */
    LoaderWorld network(Duration latency, long bytesPerSecond) {
        proxy.latency(latency).bandwidth(bytesPerSecond);
        return this;
    }

    /** {@return a new S3 origin over the proxy} */
    S3Origin origin(int concurrency) {
        return S3Origin.builder()
                .bucket(BUCKET)
                .endpoint(proxy.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .maxConcurrency(concurrency)
                .build();
    }

    /**
     * Writes every shard's index file ({@code <shard>.gidx}, by {@code WebDataset.writeIndex}) straight to the server,
     * not through the proxy: setup, not measured.
     */
    void writeIndexes() throws IOException {
        S3Origin direct = S3Origin.builder()
                .bucket(BUCKET)
                .endpoint(server.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .build();
        try (TieredCache cache = TieredCache.builder(direct)
                .tier(MemoryTier.builder()
                        .capacity(64L << 20)
                        .slabSize(16L << 20)
                        .build())
                .build()) {
            for (String shard : shards) {
                WebDataset.writeIndex(cache, shard);
            }
        }
    }

    /** {@return a plain SDK client over the proxy, for the peers the benchmark compares with} */
    S3Client plainClient() {
        return S3ProxyServer.client(proxy.endpoint());
    }

    private void upload(
            int shardCount,
            int samplesPerShard,
            int sampleSize,
            int fileCount,
            int fileSize,
            long seed,
            boolean uniform) {
        SplittableRandom random = new SplittableRandom(seed);
        List<String> keys = new ArrayList<>();
        List<byte[]> bodies = new ArrayList<>();
        for (int s = 0; s < shardCount; s++) {
            TarWriter tar = new TarWriter();
            for (int i = 0; i < samplesPerShard; i++) {
                int size = uniform ? sampleSize : Math.max(1, sampleSize / 2 + random.nextInt(Math.max(1, sampleSize)));
                byte[] jpg = new byte[size];
                random.nextBytes(jpg);
                String key = String.format("s%06d/%08d", s, s * samplesPerShard + i);
                tar.add(key + ".jpg", jpg);
                tar.add(key + ".cls", Long.toString(crc(ByteBuffer.wrap(jpg))).getBytes(StandardCharsets.US_ASCII));
                sampleBytes += size;
                samples++;
            }
            byte[] shard = tar.finish();
            String key = String.format("shards/%06d.tar", s);
            shards.add(key);
            keys.add(key);
            bodies.add(shard);
            shardBytes += shard.length;
        }
        for (int f = 0; f < fileCount; f++) {
            int size = uniform ? fileSize : Math.max(5, fileSize / 2 + random.nextInt(Math.max(1, fileSize)));
            byte[] body = new byte[size];
            random.nextBytes(body);
            ByteBuffer.wrap(body).putInt(0, (int) crc(ByteBuffer.wrap(body, 4, size - 4)));
            String key = String.format("files/%06d.bin", f);
            files.add(key);
            keys.add(key);
            bodies.add(body);
            fileBytes += size;
        }
        try (S3Client client = server.client();
                ExecutorService pool = Executors.newFixedThreadPool(8)) {
            client.createBucket(b -> b.bucket(BUCKET));
            List<CompletableFuture<Void>> puts = new ArrayList<>();
            for (int i = 0; i < keys.size(); i++) {
                int index = i;
                puts.add(CompletableFuture.runAsync(
                        () -> client.putObject(
                                b -> b.bucket(BUCKET).key(keys.get(index)), RequestBody.fromBytes(bodies.get(index))),
                        pool));
            }
            CompletableFuture.allOf(puts.toArray(CompletableFuture[]::new)).join();
        }
    }

    static long crc(ByteBuffer bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes.duplicate());
        return crc.getValue();
    }

    /** Checks a WebDataset sample: the CRC32C of its jpg against its cls field. */
    static boolean verifyShardSample(Sample sample) {
        ByteBuffer jpg = sample.fields().get("jpg");
        ByteBuffer cls = sample.fields().get("cls");
        if (jpg == null || cls == null) {
            return false;
        }
        byte[] text = new byte[cls.remaining()];
        cls.duplicate().get(text);
        return Long.parseLong(new String(text, StandardCharsets.US_ASCII)) == crc(jpg);
    }

    /** Checks a small file: its first 4 bytes against the CRC32C of the rest. */
    static boolean verifyFile(ByteBuffer bytes) {
        if (bytes.remaining() < 4) {
            return false;
        }
        int stored = bytes.getInt(bytes.position());
        return stored == (int) crc(bytes.duplicate().position(bytes.position() + 4));
    }

    @Override
    public void close() throws IOException {
        try {
            proxy.close();
        } finally {
            try {
                server.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
