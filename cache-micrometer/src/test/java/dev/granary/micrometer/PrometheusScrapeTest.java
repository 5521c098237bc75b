// SPDX-License-Identifier: Apache-2.0
package dev.granary.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.granary.CacheStats;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.LoaderStats;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Prometheus scrape: a cache over real files and a loader reading it, their binders on a
 * {@link PrometheusMeterRegistry}, the registry's page served over HTTP by the JDK's {@link HttpServer}, and the
 * figures read back through an HTTP client, while an epoch runs and after it — compared with what the cache and the
 * loader report themselves.
 */
@Timeout(120)
class PrometheusScrapeTest {

    private static final int OBJECTS = 64;
    private static final int SIZE = 3000;
    private static final int BATCH = 8;
    private static final long MEMORY = 8L << 20;

    @TempDir
    Path dir;

    private PrometheusMeterRegistry registry;
    private HttpServer server;
    private final HttpClient client = HttpClient.newHttpClient();

    @BeforeEach
    void serve() throws IOException {
        Path train = Files.createDirectories(dir.resolve("train"));
        for (int i = 0; i < OBJECTS; i++) {
            byte[] bytes = new byte[SIZE];
            Arrays.fill(bytes, (byte) i);
            Files.write(train.resolve(String.format("%03d.bin", i)), bytes);
        }
        registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        server = HttpServer.create(new InetSocketAddress(InetAddress.ofLiteral("127.0.0.1"), 0), 0);
        server.createContext("/metrics", exchange -> {
            byte[] page = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, page.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(page);
            }
        });
        server.start();
    }

    @AfterEach
    void stop() {
        server.stop(0);
        registry.close();
    }

    @Test
    void scrapeShowsTheCacheAndTheLoaderWhileAnEpochRunsAndAfter() throws Exception {
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(dir.resolve("train")))
                        .tier(MemoryTier.builder()
                                .name("memory")
                                .capacity(MEMORY)
                                .slabSize(1 << 20)
                                .build())
                        .build();
                DataLoader<Integer> loader = DataLoader.<Integer>builder(
                                Dataset.ofObjects(cache, ""), s -> s.bytes().get(0) & 0xff)
                        .batchSize(BATCH)
                        .workers(2)
                        .prefetch(2)
                        .build()) {
            new TieredCacheMetrics(cache, "train", Tags.of("job", "test")).bindTo(registry);
            new DataLoaderMetrics(loader, "train", Tags.of("job", "test")).bindTo(registry);

            // While the epoch runs: half of it taken.
            try (Epoch<Integer> epoch = loader.epoch(0)) {
                Iterator<Batch<Integer>> batches = epoch.iterator();
                for (int b = 0; b < OBJECTS / BATCH / 2; b++) {
                    batches.next();
                }
                Map<String, Double> mid = scrape();
                assertEquals(
                        OBJECTS / 2.0,
                        mid.get("granary_loader_samples_total{job=\"test\",loader=\"train\"}"),
                        "samples handed out so far");
                assertEquals(
                        OBJECTS / BATCH / 2.0,
                        mid.get("granary_loader_data_wait_seconds_count{job=\"test\",loader=\"train\"}"),
                        "one data-wait per batch taken");
                assertEquals(0.0, mid.get("granary_loader_epoch{job=\"test\",loader=\"train\"}"));
                while (batches.hasNext()) {
                    batches.next();
                }
            }
            Map<String, Double> after = scrape();
            CacheStats stats = cache.stats();
            LoaderStats ls = loader.stats();
            String c = "{cache=\"train\",job=\"test\",tier=\"memory\"}";
            String o = "{cache=\"train\",job=\"test\"}";
            String l = "{job=\"test\",loader=\"train\"}";
            assertEquals(OBJECTS, after.get("granary_loader_samples_total" + l));
            assertEquals(OBJECTS / BATCH, after.get("granary_loader_batches_total" + l));
            assertEquals(OBJECTS * SIZE, after.get("granary_loader_bytes_total" + l));
            assertEquals(0.0, after.get("granary_loader_samples_skipped_total" + l));
            assertEquals(0.0, after.get("granary_loader_samples_failed_total" + l));
            assertEquals(1.0, after.get("granary_loader_epoch" + l), "the position moved to the next epoch");
            assertEquals(ls.dataWaitNanos() / 1e9, after.get("granary_loader_data_wait_seconds_sum" + l), 1e-6);
            double ratio = after.get("granary_loader_data_wait_ratio" + l);
            assertTrue(ratio >= 0 && ratio <= 1, "ratio " + ratio);
            assertEquals(0.0, after.get("granary_loader_starved" + l));

            // Epoch 0 was cold: every object one miss and one origin read, the loader's own and the cache's.
            assertEquals(OBJECTS, after.get("granary_cache_misses_total" + c));
            assertEquals((double) stats.tiers().getFirst().misses(), after.get("granary_cache_misses_total" + c));
            assertEquals(OBJECTS, after.get("granary_origin_requests_total" + o));
            assertEquals(OBJECTS * SIZE, after.get("granary_origin_bytes_total" + o));
            assertEquals(OBJECTS, after.get("granary_loader_misses_total" + l));
            assertEquals(OBJECTS, after.get("granary_loader_origin_requests_total" + l));
            assertEquals(OBJECTS * SIZE, after.get("granary_loader_origin_bytes_total" + l));
            assertEquals(MEMORY, after.get("granary_cache_capacity_bytes" + c));
            assertEquals((double) stats.tiers().getFirst().usedBytes(), after.get("granary_cache_used_bytes" + c));
            assertTrue(after.get("granary_cache_used_bytes" + c) >= OBJECTS * SIZE, "pages held");
            assertEquals(0.0, after.get("granary_cache_leases_open" + o));
            assertEquals(0.0, after.get("granary_cache_leases_leaked_total" + o));
            assertEquals(0.0, after.get("granary_origin_errors_total" + o));
            assertEquals(0.0, after.get("granary_origin_inflight" + o));
            assertEquals(0.0, after.get("granary_cache_evictions_total" + c));

            // Epoch 1 is warm: hits only, no new origin request.
            try (Epoch<Integer> epoch = loader.epoch(1)) {
                epoch.forEach(b -> {});
            }
            Map<String, Double> warm = scrape();
            assertEquals(OBJECTS, warm.get("granary_cache_hits_total" + c));
            assertEquals(OBJECTS, warm.get("granary_loader_hits_total{job=\"test\",loader=\"train\",tier=\"memory\"}"));
            assertEquals(OBJECTS, warm.get("granary_origin_requests_total" + o));
            assertEquals(OBJECTS * SIZE, warm.get("granary_cache_hit_bytes_total" + c));
            assertEquals(2.0 * OBJECTS, warm.get("granary_loader_samples_total" + l));
        }
    }

    @Test
    void badArgumentsAreRefusedWithTheirValue() throws Exception {
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(dir))
                .tier(MemoryTier.builder().capacity(1 << 20).build())
                .build()) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> new TieredCacheMetrics(cache, " ", Tags.empty()));
            assertTrue(e.getMessage().startsWith("name: ' '"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> new TieredCacheMetrics(null, "x", Tags.empty()));
            assertThrows(IllegalArgumentException.class, () -> new DataLoaderMetrics(null, "x", Tags.empty()));
        }
    }

    /** GETs the scrape page over HTTP and parses its samples: the series (name and labels) to its value. */
    private Map<String, Double> scrape() throws IOException, InterruptedException {
        HttpResponse<String> response = client.send(
                HttpRequest.newBuilder(URI.create(
                                "http://127.0.0.1:" + server.getAddress().getPort() + "/metrics"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, response.statusCode());
        assertTrue(response.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"));
        Map<String, Double> samples = new HashMap<>();
        Pattern line = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\\{[^}]*})?) (\\S+)$");
        for (String s : response.body().split("\n")) {
            if (s.startsWith("#") || s.isBlank()) {
                continue;
            }
            Matcher m = line.matcher(s);
            assertTrue(m.matches(), "a sample line: " + s);
            samples.put(m.group(1), Double.parseDouble(m.group(2)));
        }
        return samples;
    }
}
