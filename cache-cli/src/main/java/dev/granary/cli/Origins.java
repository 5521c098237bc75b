// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.origin.gcs.GcsOrigin;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.origin.s3.S3Origin;
import dev.granary.spi.Origin;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Option;

/**
 * The options every command that reads an origin shares, and the origin a URI names: {@code file:///data/train},
 * {@code s3://bucket/prefix} (with {@code --endpoint}, {@code --path-style}, {@code --region}), {@code
 * gs://bucket/prefix}
 * (with {@code --endpoint} for an emulator, {@code --project}). Credentials come from each SDK's default chain
 * (AWS: environment, system properties, profile, instance role; GCS: Application Default Credentials).
 */
final class Origins {

    @Option(
            names = "--endpoint",
            paramLabel = "<url>",
            description =
                    "S3: an S3-compatible endpoint (MinIO, S3Proxy, an Alluxio or JuiceFS gateway); GCS: another host.")
    URI endpoint;

    @Option(
            names = "--path-style",
            description = "S3: path-style requests (http://host/bucket/key), as most S3-compatible servers want.")
    boolean pathStyle;

    @Option(
            names = "--region",
            paramLabel = "<region>",
            description = "S3: the bucket's region (default: the SDK's chain, us-east-1 with --endpoint).")
    String region;

    @Option(names = "--project", paramLabel = "<id>", description = "GCS: the project id.")
    String project;

    @Option(
            names = "--concurrency",
            paramLabel = "<n>",
            description = "Origin requests in flight (default: the origin's, 64 for files and S3, GCS's own).")
    Integer concurrency;

    /**
     * Opens the origin a URI names.
     *
     * @throws IllegalArgumentException naming the URI and the forms accepted
     */
    Origin open(String uri) {
        URI parsed;
        try {
            parsed = new URI(uri);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException(
                    "origin: '" + uri + "' (expected: file:///dir, s3://bucket/prefix or" + " gs://bucket/prefix)");
        }
        String scheme = parsed.getScheme() == null ? "" : parsed.getScheme();
        switch (scheme) {
            case "file" -> {
                Path root = Path.of(parsed);
                if (!Files.isDirectory(root)) {
                    throw new IllegalArgumentException(
                            "origin directory: " + root + " (expected: an existing" + " directory)");
                }
                return concurrency == null ? PosixOrigin.of(root) : PosixOrigin.of(root, concurrency);
            }
            case "s3" -> {
                S3Origin.Builder b =
                        S3Origin.builder().bucket(bucket(parsed, uri)).prefix(prefix(parsed));
                if (endpoint != null) {
                    b.endpoint(endpoint).region(region == null ? "us-east-1" : region);
                } else if (region != null) {
                    b.region(region);
                }
                b.pathStyle(pathStyle);
                if (concurrency != null) {
                    b.maxConcurrency(concurrency);
                }
                return b.build();
            }
            case "gs" -> {
                GcsOrigin.Builder b =
                        GcsOrigin.builder().bucket(bucket(parsed, uri)).prefix(prefix(parsed));
                if (endpoint != null) {
                    b.host(endpoint.toString());
                }
                if (project != null) {
                    b.projectId(project);
                }
                if (concurrency != null) {
                    b.maxConcurrency(concurrency);
                }
                return b.build();
            }
            default ->
                throw new IllegalArgumentException(
                        "origin: '" + uri + "' (expected: file:///dir," + " s3://bucket/prefix or gs://bucket/prefix)");
        }
    }

    private static String bucket(URI parsed, String uri) {
        if (parsed.getHost() == null || parsed.getHost().isEmpty()) {
            throw new IllegalArgumentException(
                    "origin: '" + uri + "' has no bucket (expected: " + parsed.getScheme() + "://bucket/prefix)");
        }
        return parsed.getHost();
    }

    /** The path as a key prefix: no leading slash, a trailing one unless empty. */
    private static String prefix(URI parsed) {
        String path = parsed.getPath() == null ? "" : parsed.getPath();
        while (path.startsWith("/")) {
            path = path.substring(1);
        }
        return path.isEmpty() || path.endsWith("/") ? path : path + "/";
    }
}
