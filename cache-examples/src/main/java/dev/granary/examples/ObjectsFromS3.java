// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.loader.Sample;
import dev.granary.origin.s3.S3Origin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

public class ObjectsFromS3 {

    public record Example(String key, byte[] bytes) {}

    public static void main(String[] args) throws IOException {
        // s3://train-data/imagenet/train/... on AWS; pass an endpoint for MinIO, Ceph RGW or another S3-compatible
        // store
        URI endpoint = args.length > 0 ? URI.create(args[0]) : null;
        train(endpoint, "train-data", "imagenet/", Path.of("granary-cache"), 2, batch -> {
            /* your training step */
        });
    }

    public static List<LoaderStats> train(
            URI endpoint, String bucket, String prefix, Path cacheDir, int epochs, Consumer<List<Example>> step)
            throws IOException {
        S3Origin.Builder origin = S3Origin.builder()
                .bucket(bucket)
                .prefix(prefix) // keys below are relative to it
                .region("us-east-1") // default: the AWS SDK's region chain
                .maxConcurrency(64); // ranged GETs in flight
        if (endpoint != null) {
            origin.endpoint(endpoint).pathStyle(true);
        }
        // Credentials: the AWS SDK's default chain (environment, ~/.aws, instance role), or .credentials(provider).
        List<LoaderStats> figures = new ArrayList<>();
        try (TieredCache cache = TieredCache.builder(origin.build())
                        .tier(MemoryTier.builder().capacity(256L << 20).build())
                        .tier(DiskTier.builder()
                                .directory(cacheDir)
                                .capacity(1L << 30)
                                .build())
                        .build();
                DataLoader<Example> loader = DataLoader.builder(
                                Dataset.ofObjects(cache, "train/"), ObjectsFromS3::decode)
                        .batchSize(32)
                        .shuffle(42L)
                        .workers(4)
                        .prefetch(4)
                        .build()) {
            for (int epoch = 0; epoch < epochs; epoch++) {
                try (Epoch<Example> batches = loader.epoch(epoch)) {
                    for (Batch<Example> batch : batches) {
                        step.accept(batch.items());
                    }
                    LoaderStats s = batches.stats();
                    System.out.printf(
                            "epoch %d: %d samples, %d GETs, %d bytes from S3%n",
                            epoch, s.samples(), s.originReads(), s.originBytes());
                    figures.add(s);
                }
            }
        }
        return figures;
    }

    static Example decode(Sample sample) {
        ByteBuffer bytes = sample.bytes();
        byte[] copy = new byte[bytes.remaining()];
        bytes.get(copy);
        return new Example(sample.key(), copy);
    }
}
