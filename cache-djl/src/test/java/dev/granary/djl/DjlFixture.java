// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl;

import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import dev.granary.LeakDetection;
import dev.granary.TieredCache;
import dev.granary.loader.Dataset;
import dev.granary.loader.Sample;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Origin;
import dev.granary.testkit.LeakCheck;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Small real datasets for the adapter's unit tests: {@code n} files {@code train/s000.bin …} whose three bytes are a
 * function of the index, read through a PosixOrigin and a memory tier, with leak checking on.
 */
final class DjlFixture {

    private DjlFixture() {}

    /** What a test decoder keeps of a sample: its index and a copy of its bytes. */
    record Item(int index, byte[] bytes) {}

    /** The bytes written for sample {@code i}. */
    static byte[] bytesOf(int i) {
        return new byte[] {(byte) i, (byte) (i * 3), (byte) (255 - i)};
    }

    static void writeSamples(Path root, int n) {
        try {
            Files.createDirectories(root.resolve("train"));
            for (int i = 0; i < n; i++) {
                Files.write(root.resolve(String.format("train/s%03d.bin", i)), bytesOf(i));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static TieredCache cache(LeakCheck leaks, Origin origin) {
        MemoryTier memory =
                MemoryTier.builder().capacity(16L << 20).slabSize(1 << 20).build();
        leaks.released("memory tier", () -> memory.stats().usedBytes() == 0);
        return leaks.watch(TieredCache.builder(origin)
                .tier(memory)
                .pageSize(64 << 10)
                .leakDetection(LeakDetection.PARANOID)
                .build());
    }

    static TieredCache cache(LeakCheck leaks, Path root) {
        return cache(leaks, PosixOrigin.of(root));
    }

    static Item decode(Sample sample) {
        ByteBuffer b = sample.bytes();
        byte[] bytes = new byte[b.remaining()];
        b.get(bytes);
        return new Item(sample.index(), bytes);
    }

    /**
     * A dataset of three arrays per item: data {@code [index / 2, byte 1]} as float32, data the three raw bytes as
     * uint8, label {@code index % 7} as int64.
     */
    static GranaryDataset.Builder<Item> builder(Dataset samples) {
        return GranaryDataset.builder(samples, DjlFixture::decode)
                .data(new Shape(2), DataType.FLOAT32, (item, slot) -> {
                    slot.setAtIndex(ValueLayout.JAVA_FLOAT, 0, item.index() * 0.5f);
                    slot.setAtIndex(ValueLayout.JAVA_FLOAT, 1, item.bytes()[1] & 0xff);
                })
                .data(new Shape(3), DataType.UINT8, (item, slot) -> slot.copyFrom(MemorySegment.ofArray(item.bytes())))
                .label(
                        new Shape(),
                        DataType.INT64,
                        (item, slot) -> slot.set(ValueLayout.JAVA_LONG, 0, item.index() % 7));
    }
}
