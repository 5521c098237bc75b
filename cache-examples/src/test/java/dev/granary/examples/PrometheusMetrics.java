// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import com.sun.net.httpserver.HttpServer;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.Sample;
import dev.granary.micrometer.DataLoaderMetrics;
import dev.granary.micrometer.TieredCacheMetrics;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

public class PrometheusMetrics {

    public static void main(String[] args) throws IOException {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        HttpServer server = serve(registry, 9400); // Prometheus scrapes http://<host>:9400/metrics
        try {
            train(Path.of(args[0]), registry, 10, batch -> {
                /* your training step */
            });
        } finally {
            server.stop(0);
        }
    }

    /** The scrape page; in Spring Boot or Quarkus, bind to the registry they expose instead. */
    public static HttpServer serve(PrometheusMeterRegistry registry, int port) throws IOException {
        HttpServer server = HttpServer.create(new InetSocketAddress(port), 0);
        server.createContext("/metrics", exchange -> {
            byte[] page = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, page.length);
            try (OutputStream body = exchange.getResponseBody()) {
                body.write(page);
            }
        });
        server.start();
        return server;
    }

    public static void train(Path data, MeterRegistry registry, int epochs, Consumer<List<Integer>> step)
            throws IOException {
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                        .tier(MemoryTier.builder().capacity(256L << 20).build())
                        .build();
                DataLoader<Integer> loader = DataLoader.builder(
                                Dataset.ofObjects(cache, "train/"),
                                (Sample sample) -> sample.bytes().remaining())
                        .batchSize(32)
                        .shuffle(42L)
                        .build()) {
            new TieredCacheMetrics(cache, "train", Tags.empty()).bindTo(registry); // tiers, origin, leases
            new DataLoaderMetrics(loader, "train", Tags.empty()).bindTo(registry); // data-wait, samples, queue
            for (int epoch = 0; epoch < epochs; epoch++) {
                try (Epoch<Integer> batches = loader.epoch(epoch)) {
                    for (Batch<Integer> batch : batches) {
                        step.accept(batch.items());
                    }
                }
            }
        }
    }
}
