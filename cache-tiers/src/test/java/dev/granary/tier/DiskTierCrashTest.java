// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real crashes: a child JVM fills a disk tier and is killed with SIGKILL at a random moment, 25 times over the same
 * directory; after each kill the directory must open without error, and every page it serves must equal the source.
 */
class DiskTierCrashTest {

    private static final int ITERATIONS = 25;

    @TempDir
    Path root;

    @Test
    void aKilledFillerNeverLeavesATornOrWrongPage() throws Exception {
        Path data = Files.createDirectories(root.resolve("data"));
        Path dir = root.resolve("disk");
        Dataset dataset = new Dataset(data, 17);
        SplittableRandom random = new SplittableRandom(2026);
        for (int i = 0; i < 60; i++) {
            dataset.put(String.format("obj-%03d", i), 1 + random.nextInt(100_000));
        }
        long recoveredPages = 0;
        int tornTails = 0;
        for (int iteration = 0; iteration < ITERATIONS; iteration++) {
            // Kill at once (during start-up, directory creation, recovery) one time in eight, else after a random
            // number of completed reads.
            int killAfter = random.nextInt(8) == 0 ? -1 : random.nextInt(400);
            Process child =
                    ChildJvm.start(DiskFillerMain.class, data.toString(), dir.toString(), Long.toString(iteration));
            StringBuilder output = new StringBuilder();
            if (killAfter >= 0) {
                waitForFills(child, killAfter, output);
            }
            child.destroyForcibly(); // SIGKILL on Linux: no shutdown hooks, no finally blocks
            assertTrue(child.waitFor(30, TimeUnit.SECONDS), "the killed child must end");

            try (DiskTier tier = DiskTier.builder()
                    .directory(dir)
                    .capacity(DiskFillerMain.CAPACITY)
                    .segmentSize(DiskFillerMain.SEGMENT)
                    .build()) {
                tornTails += tier.recovery().damagedTails();
                recoveredPages += tier.recovery().pages();
                assertTrue(
                        tier.stats().usedBytes() <= DiskFillerMain.CAPACITY,
                        tier.stats().toString());
                for (PageKey key : tier.keys()) {
                    Page page = tier.get(key);
                    assertNotNull(page, "iteration " + iteration + ": recovered page " + key + " must be served");
                    try {
                        Bytes.assertSame(
                                dataset.range(key.key(), key.offset(), key.length()),
                                page.buffer(),
                                "iteration " + iteration + ", page " + key);
                    } finally {
                        page.release();
                    }
                }
                assertEquals(
                        0,
                        tier.stats().corruptions(),
                        "iteration " + iteration + ": a page whose header was"
                                + " written has its whole payload (payload first, header second): " + tier.stats());
            }
            try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                    .tier(DiskTier.builder()
                            .directory(dir)
                            .capacity(DiskFillerMain.CAPACITY)
                            .segmentSize(DiskFillerMain.SEGMENT)
                            .build())
                    .pageSize(DiskFillerMain.PAGE)
                    .build()) {
                for (Map.Entry<String, byte[]> e : dataset.objects().entrySet()) {
                    try (Lease lease = cache.read(e.getKey())) {
                        Bytes.assertSame(e.getValue(), lease.bytes(), "iteration " + iteration + ": " + e.getKey());
                    }
                }
            }
        }
        assertTrue(recoveredPages > 0, "the crash loop must recover pages to check something");
        assertTrue(directWrites > 0, "the children write pages with O_DIRECT too (decision 0015)");
        System.out.println("crash loop: " + ITERATIONS + " kills, " + recoveredPages + " pages recovered and checked, "
                + tornTails + " torn record tails found");
    }

    /** The most pages a child reported written with {@code O_DIRECT}. */
    private long directWrites;

    private void waitForFills(Process child, int fills, StringBuilder output) throws Exception {
        BufferedReader reader =
                new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        int seen = 0;
        String line;
        while (seen < fills && (line = reader.readLine()) != null) {
            if (line.startsWith("filled ")) {
                seen++;
                directWrites = Math.max(directWrites, Long.parseLong(line.substring(line.lastIndexOf(' ') + 1)));
            } else if (!line.startsWith("opened ") && !line.startsWith("WARNING")) {
                output.append(line).append('\n');
            }
        }
        if (seen < fills) {
            throw new AssertionError("the filler ended before " + fills + " fills: " + output);
        }
    }
}
