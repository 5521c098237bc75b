// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import dev.granary.testkit.HeapTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Random ranges of random objects through a cache with tiny pages (4 KiB) and a tier much smaller than the
 * data, compared with the file bytes: reads cross pages, pages get evicted and refilled, and every byte must match.
 */
class TieredCacheRangePropertyTest {

    private static final int OBJECTS = 24;
    private static Path dir;
    private static Dataset data;
    private static HeapTier tier;
    private static TieredCache cache;

    @BeforeContainer
    static void createDataset() throws IOException {
        dir = Files.createTempDirectory("granary-props");
        data = new Dataset(dir, 99);
        int[] sizes = {0, 1, 4095, 4096, 4097, 8191, 8192, 12_289, 65_536, 100_003};
        for (int i = 0; i < OBJECTS; i++) {
            data.put("p/" + i, i < sizes.length ? sizes[i] : 1000 + i * 7919);
        }
        tier = new HeapTier(256 << 10);
        cache = TieredCache.builder(PosixOrigin.of(dir))
                .tier(tier)
                .pageSize(4096)
                .leakDetection(LeakDetection.PARANOID)
                .build();
    }

    @AfterContainer
    static void closeAndCheck() throws IOException {
        long open = cache.stats().openLeases();
        cache.close();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.delete(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
        if (open != 0) {
            throw new AssertionError(open + " lease(s) left open by the properties");
        }
        if (!tier.isReleased()) {
            throw new AssertionError("heap tier not released after close");
        }
    }

    record Range(String key, int offset, int length) {}

    @Provide
    Arbitrary<Range> ranges() {
        return Arbitraries.integers().between(0, OBJECTS - 1).flatMap(i -> {
            String key = "p/" + i;
            int size = data.bytes(key).length;
            return Arbitraries.integers()
                    .between(0, size)
                    .flatMap(offset -> Arbitraries.integers()
                            .between(0, size - offset)
                            .map(length -> new Range(key, offset, length)));
        });
    }

    @Property(tries = 400)
    void leasedRangesEqualTheFileBytes(@ForAll("ranges") Range r) throws IOException {
        try (Lease lease = cache.read(r.key(), r.offset(), r.length())) {
            Bytes.assertSame(data.range(r.key(), r.offset(), r.length()), lease.bytes(), r.toString());
        }
    }

    @Property(tries = 200)
    void copiedRangesEqualTheFileBytes(@ForAll("ranges") Range r) throws IOException {
        ByteBuffer dst = ByteBuffer.allocate(r.length());
        cache.readInto(r.key(), r.offset(), dst);
        Bytes.assertSame(data.range(r.key(), r.offset(), r.length()), dst.flip(), r.toString());
    }

    @Property(tries = 50)
    void wholeObjectsEqualTheFiles(@ForAll("keys") String key) throws IOException {
        try (Lease lease = cache.read(key)) {
            Bytes.assertSame(data.bytes(key), lease.bytes(), key);
        }
    }

    @Provide
    Arbitrary<String> keys() {
        return Arbitraries.integers().between(0, OBJECTS - 1).map(i -> "p/" + i);
    }
}
