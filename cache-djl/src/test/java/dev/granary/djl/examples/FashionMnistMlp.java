// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl.examples;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.Batch;
import ai.djl.training.evaluator.Accuracy;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.djl.GranaryDataset;
import dev.granary.loader.LoaderState;
import dev.granary.loader.Sample;
import dev.granary.loader.Shuffle;
import dev.granary.loader.WebDataset;
import dev.granary.origin.gcs.GcsOrigin;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.origin.s3.S3Origin;
import dev.granary.spi.Origin;
import dev.granary.tier.MemoryTier;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * Trains an MLP on Fashion-MNIST WebDataset shards ({@code train-00000.tar …}, {@code t10k-00000.tar …}; each sample
 * has a {@code raw} field of 784 grey bytes and a {@code cls} field, the label in ASCII) read through Granary from S3,
 * GCS or a directory, with this process's shard of every epoch, and resumes from its checkpoint.
 *
 * <pre>
 * RANK=0 WORLD_SIZE=1 java --enable-native-access=ALL-UNNAMED -Dai.djl.offline=true \
 *     -cp app.jar dev.granary.djl.examples.FashionMnistMlp s3://my-datasets/fashion-mnist/ checkpoints/
 * </pre>
 */
public final class FashionMnistMlp {

    /** A decoded sample: 784 grey pixels and the class, 0–9. */
    record Image(byte[] pixels, int label) {}

    public static void main(String[] args) throws Exception {
        String location = args.length > 0 ? args[0] : "s3://my-datasets/fashion-mnist/";
        Path checkpoints = Path.of(args.length > 1 ? args[1] : "checkpoints");
        int rank = Integer.parseInt(System.getenv().getOrDefault("RANK", "0")); // as torchrun sets them
        int worldSize = Integer.parseInt(System.getenv().getOrDefault("WORLD_SIZE", "1"));
        double accuracy = train(origin(location), rank, worldSize, 2, checkpoints);
        System.out.printf("rank %d of %d: test accuracy %.3f%n", rank, worldSize, accuracy);
    }

    /** {@code s3://bucket/prefix}, {@code gs://bucket/prefix}, or a directory (local, NFS, Lustre, a FUSE mount). */
    static Origin origin(String location) {
        if (location.startsWith("s3://") || location.startsWith("gs://")) {
            String path = location.substring(5);
            int slash = path.indexOf('/');
            String bucket = slash < 0 ? path : path.substring(0, slash);
            String prefix = slash < 0 ? "" : path.substring(slash + 1);
            return location.startsWith("s3://")
                    ? S3Origin.builder().bucket(bucket).prefix(prefix).build() // credentials: the AWS default chain
                    : GcsOrigin.builder().bucket(bucket).prefix(prefix).build(); // credentials: ADC
        }
        return PosixOrigin.of(Path.of(location));
    }

    /** Trains until {@code epochs} epochs are done (fewer after a resume), checkpointing after each; tests it. */
    static double train(Origin origin, int rank, int worldSize, int epochs, Path checkpoints) throws Exception {
        try (TieredCache cache = TieredCache.builder(origin)
                        .tier(MemoryTier.builder().capacity(1L << 30).build()) // all of it: epoch 2 on from memory
                        .build();
                GranaryDataset train = dataset(cache, "train-", rank, worldSize, true);
                GranaryDataset test = dataset(cache, "t10k-", 0, 1, false);
                Model model = Model.newInstance("fashion-mlp")) {
            model.setBlock(new SequentialBlock()
                    .add(Linear.builder().setUnits(256).build())
                    .add(Activation::relu)
                    .add(Linear.builder().setUnits(10).build()));
            Path loaderState = checkpoints.resolve("loader-state.txt");
            if (Files.exists(loaderState)) { // resume: the weights and the data position
                model.load(checkpoints, "fashion-mlp");
                train.resume(LoaderState.decode(Files.readString(loaderState)));
            }
            DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                    .optOptimizer(Optimizer.adam().build())
                    .optDevices(Engine.getInstance().getDevices()) // every GPU here (or the CPU)
                    .addEvaluator(new Accuracy());
            try (Trainer trainer = model.newTrainer(config)) {
                trainer.initialize(new Shape(1, 784));
                for (long epoch = train.state().epoch(); epoch < epochs; epoch++) {
                    EasyTrain.fit(trainer, 1, train, null); // one Granary epoch: the next getData
                    Files.createDirectories(checkpoints);
                    model.setProperty("Epoch", String.valueOf(epoch + 1)); // fashion-mlp-0001.params, …
                    model.save(checkpoints, "fashion-mlp");
                    Files.writeString(loaderState, train.state().encode());
                }
                return accuracy(trainer, test);
            }
        }
    }

    /** The shards whose keys start with {@code prefix}, as a DJL dataset of 784 floats and a label per sample. */
    static GranaryDataset dataset(TieredCache cache, String prefix, int rank, int worldSize, boolean shuffle)
            throws Exception {
        List<String> shards;
        try (Stream<ObjectInfo> listed = cache.list(prefix)) {
            shards = listed.map(ObjectInfo::key)
                    .filter(key -> key.endsWith(".tar"))
                    .toList();
        }
        return GranaryDataset.builder(WebDataset.of(cache, shards), FashionMnistMlp::decode)
                .loader(options -> options // the DataLoader's options, all of them
                        .batchSize(64)
                        .shuffle(shuffle ? Shuffle.samples(42L) : Shuffle.none())
                        .shard(rank, worldSize) // this rank's disjoint part of every epoch
                        .workers(4)
                        .prefetch(8))
                .data(new Shape(784), DataType.FLOAT32, FashionMnistMlp::pixels)
                .label(new Shape(), DataType.FLOAT32, FashionMnistMlp::label)
                .build();
    }

    /** Runs on the loader's workers; the sample's buffers are valid only during the call, so it copies the pixels. */
    static Image decode(Sample sample) {
        ByteBuffer raw = sample.fields().get("raw");
        byte[] pixels = new byte[raw.remaining()];
        raw.get(pixels);
        String cls = StandardCharsets.US_ASCII
                .decode(sample.fields().get("cls"))
                .toString()
                .trim();
        return new Image(pixels, Integer.parseInt(cls));
    }

    /** Writes one image's row of the batch's data array, straight into the off-heap staging buffer. */
    static void pixels(Image image, MemorySegment slot) {
        byte[] pixels = image.pixels();
        for (int i = 0; i < pixels.length; i++) {
            slot.setAtIndex(ValueLayout.JAVA_FLOAT, i, (pixels[i] & 0xff) / 255f);
        }
    }

    static void label(Image image, MemorySegment slot) {
        slot.set(ValueLayout.JAVA_FLOAT, 0, image.label());
    }

    /** The share of the test set the model classifies right, iterating it with {@code trainer.iterateDataset}. */
    static double accuracy(Trainer trainer, GranaryDataset test) throws Exception {
        long correct = 0;
        long total = 0;
        for (Batch batch : trainer.iterateDataset(test)) {
            try (batch) {
                NDArray predicted =
                        trainer.evaluate(batch.getData()).singletonOrThrow().argMax(1);
                NDArray labels = batch.getLabels().singletonOrThrow().toType(DataType.INT64, false);
                correct += predicted.eq(labels).countNonzero().getLong();
                total += batch.getSize();
            }
        }
        return (double) correct / total;
    }
}
