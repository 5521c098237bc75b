// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.granary.examples.ObjectsFromS3.Example;
import dev.granary.loader.LoaderStats;
import dev.granary.origin.s3.testkit.S3ProxyServer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The cookbook's S3 recipe against a real S3 server (S3Proxy, from the S3 origin's test kit). The recipe takes its
 * credentials from the AWS SDK's default chain, here its system properties.
 */
@Timeout(120)
class ObjectsFromS3Test {

    private static final String BUCKET = "train-data";
    private static String oldId;
    private static String oldSecret;

    @TempDir
    Path temp;

    @BeforeAll
    static void credentials() {
        oldId = System.setProperty("aws.accessKeyId", S3ProxyServer.IDENTITY);
        oldSecret = System.setProperty("aws.secretAccessKey", S3ProxyServer.CREDENTIAL);
    }

    @AfterAll
    static void restore() {
        restore("aws.accessKeyId", oldId);
        restore("aws.secretAccessKey", oldSecret);
    }

    private static void restore(String name, String value) {
        if (value == null) {
            System.clearProperty(name);
        } else {
            System.setProperty(name, value);
        }
    }

    @Test
    void everyObjectIsReadFromS3OnceAndThenFromTheCache() throws IOException {
        ExampleData data = ExampleData.write(temp.resolve("data"), 120, 64 << 10);
        S3ProxyServer server = S3ProxyServer.shared();
        try (S3Client client = server.client()) {
            client.createBucket(b -> b.bucket(BUCKET));
            for (Map.Entry<String, byte[]> object : data.objects().entrySet()) {
                client.putObject(
                        b -> b.bucket(BUCKET).key("imagenet/" + object.getKey()),
                        RequestBody.fromBytes(object.getValue()));
            }
            // Not part of the dataset: outside the prefix, and outside train/.
            client.putObject(b -> b.bucket(BUCKET).key("other/x.bin"), RequestBody.fromBytes(new byte[10]));
            client.putObject(b -> b.bucket(BUCKET).key("imagenet/val/x.bin"), RequestBody.fromBytes(new byte[10]));
        }
        List<Example> trained = new ArrayList<>();

        List<LoaderStats> epochs = ObjectsFromS3.train(
                server.endpoint(), BUCKET, "imagenet/", temp.resolve("granary-cache"), 2, trained::addAll);

        data.assertEveryObjectOnce(entries(trained.subList(0, data.count())), "epoch 0");
        data.assertEveryObjectOnce(entries(trained.subList(data.count(), trained.size())), "epoch 1");
        assertEquals(data.count(), epochs.get(0).originReads(), "epoch 0: one GET per object");
        assertEquals(data.totalBytes(), epochs.get(0).originBytes());
        assertEquals(0, epochs.get(1).originReads(), "epoch 1: no GET");
    }

    static List<Map.Entry<String, byte[]>> entries(List<Example> examples) {
        return examples.stream().map(e -> Map.entry(e.key(), e.bytes())).toList();
    }
}
