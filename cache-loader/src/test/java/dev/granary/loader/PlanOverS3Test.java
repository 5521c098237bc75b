// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.LeakDetection;
import dev.granary.TieredCache;
import dev.granary.origin.s3.S3Origin;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * {@link DataLoader#plan} against measured runs over a real S3 server (S3Proxy, shared by the test JVM), memory and
 * disk tiers, data twice the cache: objects listed under a prefix (ETags as versions), and WebDataset shards whose
 * indexing left header extents in the cache before the plan was made. Same 5 % bound as {@link PlanVersusRunTest}.
 */
@Timeout(420)
class PlanOverS3Test {

    private static final String BUCKET = "plan-" + Long.toHexString(System.nanoTime()) + "-"
            + ProcessHandle.current().pid();

    /**
     * Three quarters of the disk of {@link PlanVersusRunTest}, so the upload and the epochs over S3 stay short while
     * the
     * loader's read-ahead window stays a small part of the tiers (with 8 MiB of disk, objects of up to 150 KB read
     * out of order at the fill boundary erred by 5.4 %).
     */
    private static final long DISK = 24L << 20;

    @TempDir
    Path dir;

    @RegisterExtension
    final LeakCheck leaks = new LeakCheck();

    @Test
    void objectsAndShardsOverS3() throws IOException {
        S3ProxyServer server = S3ProxyServer.shared();
        Path files = dir.resolve("files");
        long bytes = 2 * (PlanVersusRunTest.MEMORY + DISK);
        PlanVersusRunTest.writeObjects(files, bytes, 31);
        List<String> shards = PlanVersusRunTest.writeShards(files, bytes, 32);
        try (S3Client client = server.client()) {
            client.createBucket(b -> b.bucket(BUCKET));
            List<Path> all;
            try (Stream<Path> walk = Files.walk(files)) {
                all = walk.filter(Files::isRegularFile).toList();
            }
            // Eight uploads at a time: one at a time, ~1 000 objects took most of the timeout on a loaded machine.
            try (ExecutorService uploads = Executors.newFixedThreadPool(8)) {
                List<Future<?>> done = new ArrayList<>();
                for (Path file : all) {
                    String key = files.relativize(file).toString();
                    done.add(uploads.submit(
                            () -> client.putObject(b -> b.bucket(BUCKET).key(key), RequestBody.fromFile(file))));
                }
                for (Future<?> upload : done) {
                    upload.get();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while uploading the test objects");
            } catch (ExecutionException e) {
                throw new IOException("an upload failed", e.getCause());
            }
        }
        try (TieredCache cache = cache(server, dir.resolve("disk-objects"))) {
            PlanVersusRunTest.check(
                    "objects over S3, memory + disk, data 2x cache", Dataset.ofObjects(cache, "train/"), 3);
        }
        try (TieredCache cache = cache(server, dir.resolve("disk-shards"))) {
            PlanVersusRunTest.check(
                    "webdataset over S3, memory + disk, data 2x cache", WebDataset.of(cache, shards), 3);
        }
    }

    private TieredCache cache(S3ProxyServer server, Path disk) {
        S3Origin origin = S3Origin.builder()
                .bucket(BUCKET)
                .endpoint(server.endpoint())
                .pathStyle(true)
                .credentials(S3ProxyServer.credentials())
                .retryBackoff(Duration.ofMillis(2))
                .build();
        MemoryTier memory = MemoryTier.builder()
                .capacity(PlanVersusRunTest.MEMORY)
                .slabSize(1 << 20)
                .build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        return leaks.watch(TieredCache.builder(origin)
                .tier(memory)
                .tier(DiskTier.builder()
                        .directory(disk)
                        .capacity(DISK)
                        .segmentSize(PlanVersusRunTest.SEGMENT)
                        .build())
                .pageSize(64 << 10)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }
}
