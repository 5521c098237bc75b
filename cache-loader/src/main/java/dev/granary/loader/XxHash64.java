// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * XXH64 with seed 0 (Yann Collet's xxHash, as the {@code xxhash} Python package's {@code xxh64} computes it), to check
 * the hashes MosaicML's {@code index.json} records: the JDK has none of the xxHash family. Stateless.
 */
final class XxHash64 {

    private static final long P1 = 0x9E3779B185EBCA87L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;
    private static final long P3 = 0x165667B19E3779F9L;
    private static final long P4 = 0x85EBCA77C2B2AE63L;
    private static final long P5 = 0x27D4EB2F165667C5L;
    /** {@code P1 + P2}, wrapping as the reference's unsigned arithmetic does. */
    private static final long P1_PLUS_P2 = 0x60EA27EEADC0B5D6L;

    private XxHash64() {}

    /** {@return the XXH64 of the bytes from the buffer's position to its limit (the buffer is not moved)} */
    static long hash(ByteBuffer bytes) {
        ByteBuffer b = bytes.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int at = b.position();
        int end = b.limit();
        long length = (long) end - at;
        long h;
        if (length >= 32) {
            long v1 = P1_PLUS_P2;
            long v2 = P2;
            long v3 = 0;
            long v4 = -P1;
            while (end - at >= 32) {
                v1 = round(v1, b.getLong(at));
                v2 = round(v2, b.getLong(at + 8));
                v3 = round(v3, b.getLong(at + 16));
                v4 = round(v4, b.getLong(at + 24));
                at += 32;
            }
            h = Long.rotateLeft(v1, 1) + Long.rotateLeft(v2, 7) + Long.rotateLeft(v3, 12) + Long.rotateLeft(v4, 18);
            h = merge(h, v1);
            h = merge(h, v2);
            h = merge(h, v3);
            h = merge(h, v4);
        } else {
            h = P5;
        }
        h += length;
        while (end - at >= 8) {
            h ^= round(0, b.getLong(at));
            h = Long.rotateLeft(h, 27) * P1 + P4;
            at += 8;
        }
        if (end - at >= 4) {
            h ^= Integer.toUnsignedLong(b.getInt(at)) * P1;
            h = Long.rotateLeft(h, 23) * P2 + P3;
            at += 4;
        }
        while (at < end) {
            h ^= (b.get(at) & 0xffL) * P5;
            h = Long.rotateLeft(h, 11) * P1;
            at++;
        }
        h ^= h >>> 33;
        h *= P2;
        h ^= h >>> 29;
        h *= P3;
        h ^= h >>> 32;
        return h;
    }

    private static long round(long acc, long input) {
        acc += input * P2;
        acc = Long.rotateLeft(acc, 31);
        return acc * P1;
    }

    private static long merge(long acc, long value) {
        acc ^= round(0, value);
        return acc * P1 + P4;
    }
}
