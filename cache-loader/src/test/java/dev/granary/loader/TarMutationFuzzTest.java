// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The outside probe's tar mutation fuzzing, as a test: real shards (the fixtures GNU tar, Python's tarfile and
 * webdataset's writer made) are damaged at random — bytes flipped in headers and data, numeric fields garbled, the
 * shard cut short or padded — and indexed again. Indexing a damaged shard
 * may fail only with a {@link CorruptShardException} or an {@link EOFException} (a shard that ends early) naming the
 * shard; when it succeeds, every member lies inside the shard and the samples it groups never overlap or share a key.
 * Never another exception, a hang, or a member pointing outside the bytes. Seeded: a failure names its seed.
 */
@Timeout(120)
class TarMutationFuzzTest {

    private static final String[] FIXTURES = {
        "gnu", "gnutar-gnu", "gnutar-posix", "mixed", "pax", "ustar", "webdataset", "zero_size"
    };
    private static final int TRIALS_PER_FIXTURE = 250;

    @Test
    void damagedShardsFailByShardOrYieldMembersInsideTheShard() throws IOException {
        int indexed = 0;
        int refused = 0;
        for (String fixture : FIXTURES) {
            byte[] original;
            try (InputStream in = TarMutationFuzzTest.class.getResourceAsStream("/tar/" + fixture + ".tar")) {
                original = in.readAllBytes();
            }
            for (int trial = 0; trial < TRIALS_PER_FIXTURE; trial++) {
                long seed = fixture.hashCode() * 31L + trial;
                byte[] damaged = mutate(original, new Random(seed));
                String shard = "fuzz/" + fixture + "-" + seed + ".tar";
                {
                    try {
                        List<TarIndex.Member> members = TarIndex.scan(shard, damaged.length, reader(damaged));
                        for (TarIndex.Member m : members) {
                            assertTrue(
                                    m.offset() >= 0 && m.size() >= 0 && m.offset() + m.size() <= damaged.length,
                                    "seed " + seed + ": member " + m + " outside the " + damaged.length + " bytes");
                        }
                        checkSamples(shard, members, damaged.length, seed);
                        indexed++;
                    } catch (CorruptShardException | EOFException e) {
                        assertTrue(e.getMessage().contains(shard), "seed " + seed + ": " + e.getMessage());
                        refused++;
                    } catch (IOException | RuntimeException e) {
                        fail("seed " + seed + " (" + fixture + "): " + e, e);
                    }
                }
            }
        }
        // Both outcomes must occur, or the mutations are too weak (or too strong) to test anything.
        assertTrue(indexed > 100 && refused > 100, "indexed " + indexed + ", refused " + refused);
    }

    /** Groups the members as WebDataset does; a grouping may refuse, but never yields overlapping samples. */
    private static void checkSamples(String shard, List<TarIndex.Member> members, int size, long seed) {
        List<ShardSamples.Entry> samples;
        try {
            samples = ShardSamples.group(shard, members);
        } catch (CorruptShardException e) {
            assertTrue(e.getMessage().contains(shard), "seed " + seed + ": " + e.getMessage());
            return;
        }
        Set<String> keys = new HashSet<>();
        long previousEnd = 0;
        for (ShardSamples.Entry e : samples) {
            assertTrue(keys.add(e.key()), "seed " + seed + ": two samples with key '" + e.key() + "'");
            assertTrue(
                    e.start() >= previousEnd && e.end() <= size && e.start() <= e.end(),
                    "seed " + seed + ": sample '" + e.key() + "' [" + e.start() + ", " + e.end() + ") after "
                            + previousEnd + " in " + size + " bytes");
            previousEnd = e.end();
        }
    }

    private static byte[] mutate(byte[] original, Random random) {
        byte[] bytes = original.clone();
        int headers = Math.max(1, bytes.length / TarIndex.BLOCK);
        switch (random.nextInt(6)) {
            case 0 -> { // flip a few random bytes anywhere
                for (int i = 0, n = 1 + random.nextInt(8); i < n; i++) {
                    bytes[random.nextInt(bytes.length)] ^= (byte) (1 + random.nextInt(255));
                }
            }
            case 1 -> { // garble a numeric field of a block that may be a header: size (124), checksum (148)
                int block = random.nextInt(headers) * TarIndex.BLOCK;
                int field = random.nextBoolean() ? 124 : 148;
                for (int i = 0; i < 12 && block + field + i < bytes.length; i++) {
                    bytes[block + field + i] = (byte) "0123456789 \0\377x7".charAt(random.nextInt(15));
                }
            }
            case 2 -> { // a huge or negative-looking size, with a checksum recomputed so the header is "valid"
                int block = random.nextInt(headers) * TarIndex.BLOCK;
                if (block + TarIndex.BLOCK <= bytes.length) {
                    byte[] size = (random.nextBoolean()
                                    ? "77777777777"
                                    : String.format("%011o", random.nextInt(1 << 30)))
                            .getBytes(StandardCharsets.US_ASCII);
                    System.arraycopy(size, 0, bytes, block + 124, 11);
                    recomputeChecksum(bytes, block);
                }
            }
            case 3 -> { // cut short
                return Arrays.copyOf(bytes, random.nextInt(bytes.length + 1));
            }
            case 4 -> { // padded with garbage
                byte[] longer = Arrays.copyOf(bytes, bytes.length + 1 + random.nextInt(4096));
                for (int i = bytes.length; i < longer.length; i++) {
                    longer[i] = (byte) random.nextInt(256);
                }
                return longer;
            }
            default -> { // change a typeflag (156) and fix the checksum: links, directories, PAX, GNU long names
                int block = random.nextInt(headers) * TarIndex.BLOCK;
                if (block + TarIndex.BLOCK <= bytes.length) {
                    bytes[block + 156] = (byte) "0125LKxgX\0".charAt(random.nextInt(10));
                    recomputeChecksum(bytes, block);
                }
            }
        }
        return bytes;
    }

    private static void recomputeChecksum(byte[] bytes, int block) {
        Arrays.fill(bytes, block + 148, block + 156, (byte) ' ');
        int sum = 0;
        for (int i = 0; i < TarIndex.BLOCK; i++) {
            sum += bytes[block + i] & 0xff;
        }
        byte[] text = String.format("%06o\0 ", sum).getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(text, 0, bytes, block + 148, 8);
    }

    private static TarIndex.RangeReader reader(byte[] bytes) {
        return (offset, length) -> {
            if (offset < 0 || length < 1) {
                throw new AssertionError("read(" + offset + ", " + length + ") out of contract");
            }
            if (offset + length > bytes.length) {
                throw new EOFException("read(" + offset + ", " + length + ") past " + bytes.length);
            }
            return ByteBuffer.wrap(bytes, (int) offset, length).slice();
        };
    }
}
