// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import java.nio.ByteBuffer;
import java.util.Arrays;

/** Byte comparisons with messages that say where bytes differ. */
public final class Bytes {

    private Bytes() {}

    public static byte[] toArray(ByteBuffer buffer) {
        ByteBuffer dup = buffer.duplicate();
        byte[] out = new byte[dup.remaining()];
        dup.get(out);
        return out;
    }

    public static void assertSame(byte[] expected, ByteBuffer actual, String what) {
        assertSame(expected, toArray(actual), what);
    }

    public static void assertSame(byte[] expected, byte[] actual, String what) {
        if (expected.length != actual.length) {
            throw new AssertionError(what + ": " + actual.length + " bytes (expected " + expected.length + ")");
        }
        int mismatch = Arrays.mismatch(expected, actual);
        if (mismatch >= 0) {
            throw new AssertionError(what + ": bytes differ at index " + mismatch + " (expected " + expected[mismatch]
                    + ", got " + actual[mismatch] + ")");
        }
    }
}
