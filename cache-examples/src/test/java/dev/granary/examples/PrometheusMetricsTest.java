// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The cookbook's Prometheus recipe: the page a Prometheus server scrapes, fetched over HTTP during training. */
@Timeout(60)
class PrometheusMetricsTest {

    @TempDir
    Path temp;

    @Test
    void theScrapePageShowsTheCacheAndTheLoader() throws Exception {
        ExampleData data = ExampleData.write(temp.resolve("data"), 100, 16 << 10); // 4 batches of 32 per epoch
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        HttpServer server = PrometheusMetrics.serve(registry, 0);
        AtomicInteger batches = new AtomicInteger();
        AtomicReference<String> page = new AtomicReference<>();
        try (HttpClient http = HttpClient.newHttpClient()) {
            URI uri = URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/metrics");
            PrometheusMetrics.train(data.root(), registry, 2, items -> {
                if (batches.incrementAndGet() == 8) { // the last batch of epoch 1
                    try {
                        HttpResponse<String> response =
                                http.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString());
                        assertEquals(200, response.statusCode());
                        page.set(response.body());
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                }
            });
        } finally {
            server.stop(0);
        }
        String scraped = page.get();
        System.out.println(scraped); // in target/surefire-reports: what docs/cookbook.md quotes
        assertEquals(100.0, value(scraped, "granary_origin_requests_total{cache=\"train\"}"), scraped);
        assertEquals(100.0, value(scraped, "granary_cache_hits_total{cache=\"train\",tier=\"memory\"}"), scraped);
        assertEquals(8.0, value(scraped, "granary_loader_batches_total{loader=\"train\"}"), scraped);
        assertTrue(scraped.contains("granary_loader_data_wait_ratio{loader=\"train\"}"), scraped);
    }

    private static double value(String page, String series) {
        Matcher m =
                Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(page);
        assertTrue(m.find(), "no " + series);
        return Double.parseDouble(m.group(1));
    }
}
