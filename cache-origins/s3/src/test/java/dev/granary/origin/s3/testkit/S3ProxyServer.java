// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.s3.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * A real S3-compatible server for tests and benchmarks: S3Proxy 4.1.0 (filesystem backend) in a child JVM on
 * 127.0.0.1 and an ephemeral port. The jar is fetched from Maven Central by the build ({@code maven-dependency-plugin}
 * in {@code cache-origins/s3/pom.xml}) and found through the system property {@code granary.s3proxy.jar}.
 *
 * <p>The data lives in a directory of the caller's, so {@link #kill()} and {@link #restart()} keep the objects (a
 * server that crashed and came back). Credentials are fixed: {@link #IDENTITY} / {@link #CREDENTIAL}.
 */
public final class S3ProxyServer implements AutoCloseable {

    public static final String IDENTITY = "granary-test";
    public static final String CREDENTIAL = "granary-test-secret";
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final Path jar;
    private final Path dataDir;
    private final Path logFile;
    private volatile Process process;
    private volatile int port;

    private static S3ProxyServer shared;

    /**
     * {@return one server for the whole JVM (a test run), started on first use and killed when the JVM exits};
     * tests that kill or restart a server start their own
     */
    public static synchronized S3ProxyServer shared() throws IOException {
        if (shared == null) {
            Path dir = Files.createTempDirectory("granary-s3proxy-");
            S3ProxyServer server = start(dir.resolve("data"));
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    server.kill();
                    deleteTree(dir);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (IOException e) {
                    System.err.println("cannot delete " + dir + ": " + e);
                }
            }));
            shared = server;
        }
        return shared;
    }

    private S3ProxyServer(Path jar, Path dataDir) {
        this.jar = jar;
        this.dataDir = dataDir;
        this.logFile = dataDir.resolveSibling(dataDir.getFileName() + "-s3proxy.log");
    }

    /** Starts a server over {@code dataDir} (created if missing). */
    public static S3ProxyServer start(Path dataDir) throws IOException {
        String property = System.getProperty("granary.s3proxy.jar");
        if (property == null) {
            throw new IllegalStateException("system property granary.s3proxy.jar is not set: run the tests through"
                    + " Maven (the build fetches S3Proxy), or point it at s3proxy-4.1.0-jar-with-dependencies.jar");
        }
        Path jar = Path.of(property);
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("S3Proxy jar " + jar + " does not exist: run './mvnw verify' (the build"
                    + " copies it there from Maven Central)");
        }
        Files.createDirectories(dataDir);
        S3ProxyServer server = new S3ProxyServer(jar, dataDir);
        server.launch();
        return server;
    }

    /** {@return the server's endpoint, {@code http://127.0.0.1:PORT}} */
    public URI endpoint() {
        return URI.create("http://127.0.0.1:" + port);
    }

    public int port() {
        return port;
    }

    /** {@return a client for seeding and checking data: path style, static credentials, no retries of its own} */
    public S3Client client() {
        return client(endpoint());
    }

    /** {@return a test client over another endpoint (a proxy in front of this server)} */
    public static S3Client client(URI endpoint) {
        return S3Client.builder()
                .endpointOverride(endpoint)
                .forcePathStyle(true)
                .region(Region.US_EAST_1)
                .credentialsProvider(credentials())
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .build();
    }

    public static StaticCredentialsProvider credentials() {
        return StaticCredentialsProvider.create(AwsBasicCredentials.create(IDENTITY, CREDENTIAL));
    }

    /** Kills the server process at once (SIGKILL): connections in flight break, new ones are refused. */
    public void kill() throws InterruptedException {
        Process p = process;
        if (p != null) {
            p.destroyForcibly();
            p.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /** Starts the server again over the same data, on a new port (see {@link #port()}). */
    public void restart() throws IOException, InterruptedException {
        kill();
        launch();
    }

    private void launch() throws IOException {
        IOException last = null;
        for (int tries = 0; tries < 3; tries++) {
            int candidate;
            try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                candidate = probe.getLocalPort();
            }
            Path properties = dataDir.resolveSibling(dataDir.getFileName() + "-s3proxy.properties");
            Files.writeString(
                    properties,
                    String.join(
                            "\n",
                            "s3proxy.endpoint=http://127.0.0.1:" + candidate,
                            "s3proxy.authorization=aws-v2-or-v4",
                            "s3proxy.identity=" + IDENTITY,
                            "s3proxy.credential=" + CREDENTIAL,
                            "jclouds.provider=filesystem-nio2",
                            "jclouds.filesystem.basedir=" + dataDir.toAbsolutePath(),
                            ""));
            String java = ProcessHandle.current().info().command().orElse("java");
            Process p = new ProcessBuilder(List.of(
                            java,
                            "-Xmx256m",
                            "-XX:+UseSerialGC",
                            "-XX:TieredStopAtLevel=1",
                            "-jar",
                            jar.toString(),
                            "--properties",
                            properties.toString()))
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                    .start();
            try {
                awaitListening(p, candidate);
                process = p;
                port = candidate;
                return;
            } catch (IOException e) {
                p.destroyForcibly();
                last = e;
            }
        }
        throw last;
    }

    /** Waits, bounded, until the server accepts connections on its port or its process dies. */
    private void awaitListening(Process p, int candidate) throws IOException {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                throw new IOException("S3Proxy exited with " + p.exitValue() + " before listening on " + candidate
                        + "; its output: " + tail());
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(InetAddress.ofLiteral("127.0.0.1"), candidate), 200);
                return;
            } catch (IOException notYet) {
                try {
                    p.waitFor(50, TimeUnit.MILLISECONDS); // poll: returns early if the process dies
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted while starting S3Proxy", e);
                }
            }
        }
        throw new IOException(
                "S3Proxy did not listen on " + candidate + " within " + START_TIMEOUT + "; its output: " + tail());
    }

    private String tail() {
        try {
            String log = Files.readString(logFile);
            return log.length() > 2000 ? log.substring(log.length() - 2000) : log;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Deletes a directory tree, e.g. a server's data after {@link #close()}. */
    public static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (var paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }

    @Override
    public void close() throws InterruptedException {
        kill();
    }
}
