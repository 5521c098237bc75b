// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.Arrays;
import java.util.function.IntToLongFunction;

/**
 * The versions of a listed dataset's objects, stored by their shape so that each is rebuilt exactly, character for
 * character, when a sample is read pinned to it. Versions are opaque strings to the cache; the shapes of the origins
 * Granary ships are recognised:
 *
 * <ul>
 *   <li>{@code CONSTANT}: one version for every object (a synthetic or frozen origin): nothing per object;</li>
 *   <li>{@code ETAG}: an S3 ETag of a single-part upload, {@code "} + 32 lowercase hex digits + {@code "}: two
 *       {@code long}s (16 bytes instead of a 34-character string, about 80 bytes);</li>
 *   <li>{@code DECIMAL}: a GCS generation, a decimal {@code long} without sign or leading zero: one {@code long};</li>
 *   <li>{@code POSIX}: {@code PosixOrigin}'s {@code size-mtime-inode} in lowercase hex, whose size part equals the
 *       listed size: two {@code long}s;</li>
 *   <li>{@code STRINGS}: anything else, front-coded UTF-8 ({@link FrontCodedStrings}).</li>
 * </ul>
 * A fixed-width shape is chosen if at most one version in 64 does not fit it (a multipart ETag {@code "…-3"} among
 * single-part ones); those few are kept as strings beside it, found by binary search.
 *
 * <p>Thread safety: immutable once built; {@link #get} may be called from any thread.
 */
final class ObjectVersions {

    enum Shape {
        CONSTANT,
        ETAG,
        DECIMAL,
        POSIX,
        STRINGS
    }

    /** The fixed-width shapes, narrowest first: on a tie, the first one wins. */
    private static final Shape[] FIXED = {Shape.DECIMAL, Shape.ETAG, Shape.POSIX};

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private final Shape shape;
    private final String constant;
    /** The first (or only) word of each version; the second word of ETAG and POSIX versions. */
    private final long[] first;

    private final long[] second;
    private final FrontCodedStrings strings;
    private final int[] exceptionIndex;
    private final String[] exceptionValue;

    private ObjectVersions(
            Shape shape,
            String constant,
            long[] first,
            long[] second,
            FrontCodedStrings strings,
            int[] exceptionIndex,
            String[] exceptionValue) {
        this.shape = shape;
        this.constant = constant;
        this.first = first;
        this.second = second;
        this.strings = strings;
        this.exceptionIndex = exceptionIndex;
        this.exceptionValue = exceptionValue;
    }

    /**
     * Chooses the shape that fits the versions and encodes them.
     *
     * @param versions the versions in dataset order, as listed
     * @param sizes    the listed size of object {@code i}, which a POSIX version repeats
     */
    static ObjectVersions of(FrontCodedStrings versions, IntToLongFunction sizes) {
        int n = versions.size();
        String one = n == 0 ? "" : versions.get(0);
        boolean[] varies = new boolean[1];
        int[] misfits = new int[FIXED.length]; // parallel to FIXED
        versions.forEach((i, v) -> {
            varies[0] |= !v.equals(one);
            for (int k = 0; k < FIXED.length; k++) {
                if (!fits(FIXED[k], v, sizes.applyAsLong(i))) {
                    misfits[k]++;
                }
            }
        });
        if (!varies[0]) {
            return new ObjectVersions(Shape.CONSTANT, one, null, null, null, new int[0], new String[0]);
        }
        Shape best = Shape.STRINGS;
        int fewest = n / 64;
        for (int k = 0; k < FIXED.length; k++) {
            if (misfits[k] <= fewest && (best == Shape.STRINGS || misfits[k] < fewest)) {
                best = FIXED[k];
                fewest = misfits[k];
            }
        }
        if (best == Shape.STRINGS) {
            return new ObjectVersions(Shape.STRINGS, null, null, null, versions, new int[0], new String[0]);
        }
        // Two arrays rather than one of 2n: a billion versions must not need an array longer than 2^31.
        long[] words = new long[n];
        long[] words2 = best == Shape.DECIMAL ? null : new long[n];
        int[] exceptionIndex = new int[fewest];
        String[] exceptionValue = new String[fewest];
        int[] e = {0};
        Shape chosen = best;
        versions.forEach((i, v) -> {
            if (!fits(chosen, v, sizes.applyAsLong(i))) {
                exceptionIndex[e[0]] = i;
                exceptionValue[e[0]++] = v;
                return;
            }
            switch (chosen) {
                case ETAG -> {
                    words[i] = Long.parseUnsignedLong(v, 1, 17, 16);
                    words2[i] = Long.parseUnsignedLong(v, 17, 33, 16);
                }
                case DECIMAL -> words[i] = Long.parseLong(v);
                case POSIX -> {
                    int a = v.indexOf('-');
                    int b = v.indexOf('-', a + 1);
                    words[i] = Long.parseUnsignedLong(v, a + 1, b, 16);
                    words2[i] = Long.parseUnsignedLong(v, b + 1, v.length(), 16);
                }
                default -> throw new AssertionError(chosen);
            }
        });
        return new ObjectVersions(best, null, words, words2, null, exceptionIndex, exceptionValue);
    }

    /**
     * {@return the version of object {@code index}, exactly as listed}
     *
     * @param size the object's listed size (a POSIX version repeats it)
     */
    String get(int index, long size) {
        if (shape == Shape.CONSTANT) {
            return constant;
        }
        if (shape == Shape.STRINGS) {
            return strings.get(index);
        }
        if (exceptionIndex.length > 0) {
            int e = Arrays.binarySearch(exceptionIndex, index);
            if (e >= 0) {
                return exceptionValue[e];
            }
        }
        return switch (shape) {
            case ETAG -> {
                char[] c = new char[34];
                c[0] = '"';
                hex(first[index], c, 1);
                hex(second[index], c, 17);
                c[33] = '"';
                yield new String(c);
            }
            case DECIMAL -> Long.toString(first[index]);
            case POSIX ->
                Long.toHexString(size) + "-" + Long.toHexString(first[index]) + "-" + Long.toHexString(second[index]);
            default -> throw new AssertionError(shape);
        };
    }

    /** {@return the shape chosen} */
    Shape shape() {
        return shape;
    }

    private static void hex(long v, char[] out, int at) {
        for (int i = 15; i >= 0; i--) {
            out[at + i] = HEX[(int) (v & 15)];
            v >>>= 4;
        }
    }

    /** Whether {@code v} is rebuilt exactly from the words of {@code shape}. */
    static boolean fits(Shape shape, String v, long size) {
        return switch (shape) {
            case ETAG -> v.length() == 34 && v.charAt(0) == '"' && v.charAt(33) == '"' && lowerHex(v, 1, 33);
            case DECIMAL -> canonicalDecimal(v);
            case POSIX -> {
                int a = v.indexOf('-');
                int b = a < 0 ? -1 : v.indexOf('-', a + 1);
                yield b > 0
                        && v.indexOf('-', b + 1) < 0
                        && v.substring(0, a).equals(Long.toHexString(size))
                        && canonicalHex(v, a + 1, b)
                        && canonicalHex(v, b + 1, v.length());
            }
            default -> false;
        };
    }

    private static boolean lowerHex(String v, int from, int to) {
        for (int i = from; i < to; i++) {
            char c = v.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
                return false;
            }
        }
        return true;
    }

    /** What {@link Long#toHexString} prints: 1–16 lowercase digits, no leading zero but for "0" itself. */
    private static boolean canonicalHex(String v, int from, int to) {
        int n = to - from;
        return n >= 1 && n <= 16 && lowerHex(v, from, to) && (n == 1 || v.charAt(from) != '0');
    }

    /** What {@link Long#toString(long)} prints for a value {@code >= 0}. */
    private static boolean canonicalDecimal(String v) {
        int n = v.length();
        if (n < 1 || n > 19 || (n > 1 && v.charAt(0) == '0')) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            char c = v.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return n < 19 || v.compareTo(Long.toString(Long.MAX_VALUE)) <= 0;
    }
}
