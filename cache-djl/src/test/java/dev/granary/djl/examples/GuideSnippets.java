// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl.examples;

import ai.djl.Model;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.Batch;
import dev.granary.djl.GranaryDataset;
import dev.granary.loader.LoaderStats;
import dev.granary.origin.gcs.GcsOrigin;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.origin.s3.S3Origin;
import dev.granary.spi.Origin;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;

/**
 * The short snippets of docs/guide-djl.md, compiled; {@code GuideTest} checks that the guide shows them as they are
 * here, between the {@code // snippet:} and {@code // end} lines.
 */
final class GuideSnippets {

    private GuideSnippets() {}

    static List<Origin> origins(String accessKey, String secretKey) {
        // snippet: origins
        Origin s3 = S3Origin.builder()
                .bucket("my-datasets")
                .prefix("fashion-mnist/")
                .build(); // cache-origin-s3
        Origin minio = S3Origin.builder()
                .bucket("datasets")
                .endpoint(URI.create("http://minio:9000"))
                .pathStyle(true)
                .credentials(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey, secretKey)))
                .build();
        Origin gcs = GcsOrigin.builder()
                .bucket("my-datasets")
                .prefix("fashion-mnist/")
                .build(); // cache-origin-gcs
        Origin posix = PosixOrigin.of(Path.of("/mnt/lustre/fashion-mnist")); // cache-core
        // end
        return List.of(s3, minio, gcs, posix);
    }

    static LoaderStats oneEpoch(Trainer trainer, GranaryDataset train) throws Exception {
        // snippet: stats
        LoaderStats before = train.stats();
        EasyTrain.fit(trainer, 1, train, null);
        LoaderStats epoch = train.stats().minus(before);
        System.out.printf(
                "hit ratio %.3f, origin reads %d, trainer waited %.1f s for data%n",
                epoch.hitRatio(), epoch.originReads(), epoch.dataWaitNanos() / 1e9);
        // end
        return epoch;
    }

    static void epochWithCheckpoints(Trainer trainer, Model model, GranaryDataset train, Path checkpoints)
            throws Exception {
        // snippet: checkpoints
        long steps = 0;
        for (Batch batch : trainer.iterateDataset(train)) { // what EasyTrain.fit does for one epoch
            EasyTrain.trainBatch(trainer, batch);
            trainer.step();
            batch.close();
            if (++steps % 500 == 0) { // the weights and the position, together
                model.save(checkpoints, "fashion-mlp");
                Files.writeString(
                        checkpoints.resolve("loader-state.txt"), train.state().encode());
            }
        }
        trainer.notifyListeners(listener -> listener.onEpoch(trainer));
        // end
    }
}
