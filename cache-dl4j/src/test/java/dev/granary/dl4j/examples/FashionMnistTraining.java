// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j.examples;

import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.dl4j.GranaryDataSetIterator;
import dev.granary.dl4j.SampleEncoder;
import dev.granary.loader.LoaderState;
import dev.granary.loader.WebDataset;
import dev.granary.origin.gcs.GcsOrigin;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.origin.s3.S3Origin;
import dev.granary.spi.Origin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.layers.DenseLayer;
import org.deeplearning4j.nn.conf.layers.OutputLayer;
import org.deeplearning4j.nn.multilayer.MultiLayerNetwork;
import org.deeplearning4j.nn.weights.WeightInit;
import org.nd4j.linalg.activations.Activation;
import org.nd4j.linalg.dataset.api.preprocessor.ImagePreProcessingScaler;
import org.nd4j.linalg.learning.config.Adam;
import org.nd4j.linalg.lossfunctions.LossFunctions;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;

/**
 * The complete example of docs/guide-dl4j.md: trains an MLP on Fashion-MNIST stored as WebDataset shards
 * ({@code train-00000.tar …}, {@code t10k-00000.tar …}; fields {@code raw} and {@code cls}) in S3, GCS or a
 * directory, through Granary, one rank of several, checkpointing the model and the loader's position after every
 * epoch and resuming from them. {@code GuideExampleTest} runs it over a tiny dataset; {@code GuideSnippetsTest} keeps
 * the guide's code identical to this file.
 */
public final class FashionMnistTraining {

    private FashionMnistTraining() {}

    /** One sample: field "raw" holds the 28 × 28 grey pixels, field "cls" the class as ASCII digits. */
    public static final SampleEncoder ENCODER = (sample, features, labels) -> {
        ByteBuffer raw = sample.fields().get("raw");
        for (int i = 0; i < features.length; i++) {
            features[i] = raw.get(i) & 0xFF; // 0..255: the pre-processor scales to [0, 1]
        }
        String cls =
                StandardCharsets.US_ASCII.decode(sample.fields().get("cls")).toString();
        labels[Integer.parseInt(cls.trim())] = 1f; // one-hot
    };

    /**
     * {@code java --enable-native-access=ALL-UNNAMED -cp … FashionMnistTraining s3://bucket/fashion-mnist [rank
     * worldSize]}.
     *
     * @param args the data's location ({@code s3://}, {@code gs://} or {@code file://}), then optionally this rank
     *             and the world size
     * @throws IOException if the data cannot be read or the checkpoint written
     */
    public static void main(String[] args) throws IOException {
        URI data = URI.create(args[0]);
        int rank = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        int worldSize = args.length > 2 ? Integer.parseInt(args[2]) : 1;
        try (TieredCache cache = TieredCache.builder(origin(data))
                .tier(MemoryTier.builder().capacity(512L << 20).build()) // off-heap, this run
                .tier(DiskTier.builder()
                        .directory(Path.of("/var/tmp/granary")) // local disk, kept across runs
                        .capacity(20L << 30)
                        .build())
                .build()) {
            double accuracy = train(cache, rank, worldSize, 2, Path.of("checkpoint-rank-" + rank));
            System.out.printf("rank %d of %d: test accuracy %.4f%n", rank, worldSize, accuracy);
        }
    }

    /** Where the shards are: S3 (or an S3-compatible store), GCS, or a directory (local disk, NFS, Lustre, FUSE). */
    static Origin origin(URI data) {
        String prefix = data.getPath() == null ? "" : data.getPath().replaceFirst("^/", "");
        return switch (data.getScheme()) {
            case "s3" ->
                S3Origin.builder().bucket(data.getHost()).prefix(prefix).build(); // SDK's default credentials
            case "gs" ->
                GcsOrigin.builder().bucket(data.getHost()).prefix(prefix).build(); // Application Default
            case "file" -> PosixOrigin.of(Path.of(data));
            default -> throw new IllegalArgumentException("data: " + data + " (expected: s3://, gs:// or file://)");
        };
    }

    /** An S3-compatible store (MinIO, Ceph, an Alluxio or JuiceFS S3 gateway): its endpoint, path-style URLs. */
    public static Origin s3Compatible(URI endpoint, String bucket, String prefix, AwsCredentialsProvider credentials) {
        return S3Origin.builder()
                .endpoint(endpoint)
                .pathStyle(true)
                .credentials(credentials)
                .bucket(bucket)
                .prefix(prefix)
                .build();
    }

    /**
     * Trains (or resumes training) for {@code epochs} epochs and returns the test accuracy.
     *
     * @param cache      the cache over the shards
     * @param rank       this process's rank
     * @param worldSize  the number of processes training together
     * @param epochs     the epochs to reach
     * @param checkpoint the directory of this rank's checkpoint
     * @return the accuracy on the whole test split
     * @throws IOException if the shards cannot be listed or the checkpoint read or written
     */
    public static double train(TieredCache cache, int rank, int worldSize, int epochs, Path checkpoint)
            throws IOException {
        Path modelFile = checkpoint.resolve("model.zip");
        Path stateFile = checkpoint.resolve("loader-state.txt");
        GranaryDataSetIterator.Builder trainBuilder = GranaryDataSetIterator.builder(
                        WebDataset.of(cache, shards(cache, "train-")), ENCODER)
                .features(784)
                .labels(10)
                .loader(options -> options // the DataLoader's options, all of them
                        .batchSize(64)
                        .shuffle(42L) // epoch e visits a permutation of (42, e), the same on every machine
                        .shard(rank, worldSize) // this rank's disjoint part of every epoch
                        .workers(4)
                        .prefetch(4))
                .preProcessor(new ImagePreProcessingScaler(0, 1));
        MultiLayerNetwork net;
        if (Files.exists(stateFile)) { // resume: the model, and exactly the batches it has not seen
            net = MultiLayerNetwork.load(modelFile.toFile(), true);
            trainBuilder.resume(LoaderState.decode(Files.readString(stateFile)));
        } else {
            net = new MultiLayerNetwork(mlp());
            net.init();
        }
        try (GranaryDataSetIterator train = trainBuilder.build()) {
            for (long epoch = train.epoch(); epoch < epochs; epoch++) {
                net.fit(train); // the rest of this epoch; fit resets an exhausted iterator first
                Files.createDirectories(checkpoint);
                net.save(modelFile.toFile(), true);
                Files.writeString(stateFile, train.state().encode());
            }
        }
        try (GranaryDataSetIterator test = GranaryDataSetIterator.builder(
                        WebDataset.of(cache, shards(cache, "t10k-")), ENCODER)
                .features(784)
                .labels(10)
                .loader(options -> options.batchSize(256)) // no shuffle, no shard: every rank evaluates it all
                .preProcessor(new ImagePreProcessingScaler(0, 1))
                .build()) {
            return net.evaluate(test).accuracy();
        }
    }

    /** The shard keys under a prefix, sorted: every rank must see the same list. */
    public static List<String> shards(TieredCache cache, String prefix) throws IOException {
        try (Stream<ObjectInfo> objects = cache.list(prefix)) {
            return objects.map(ObjectInfo::key)
                    .filter(key -> key.endsWith(".tar"))
                    .sorted()
                    .toList();
        }
    }

    /** 784 → 256 (ReLU) → 10 (softmax), Adam. */
    public static MultiLayerConfiguration mlp() {
        return new NeuralNetConfiguration.Builder()
                .seed(42)
                .updater(new Adam(1e-3))
                .weightInit(WeightInit.XAVIER)
                .list()
                .layer(new DenseLayer.Builder()
                        .nIn(784)
                        .nOut(256)
                        .activation(Activation.RELU)
                        .build())
                .layer(new OutputLayer.Builder(LossFunctions.LossFunction.MCXENT)
                        .nIn(256)
                        .nOut(10)
                        .activation(Activation.SOFTMAX)
                        .build())
                .build();
    }
}
