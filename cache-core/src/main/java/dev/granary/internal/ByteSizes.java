// SPDX-License-Identifier: Apache-2.0
package dev.granary.internal;

import java.util.Locale;

/**
 * Byte sizes as messages write them: {@code 64 KiB}, {@code 1 TiB}, {@code 1.5 GiB}, {@code 300 bytes}. A size that is
 * a whole number of a unit is written exactly ({@code 65536} is {@code 64 KiB}); others with one decimal. Stateless.
 */
public final class ByteSizes {

    private static final String[] UNITS = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

    private ByteSizes() {}

    /** {@return {@code bytes} for people, in powers of 1024} */
    public static String format(long bytes) {
        if (bytes < 1024 && bytes > -1024) {
            return bytes + (bytes == 1 || bytes == -1 ? " byte" : " bytes");
        }
        int unit = 0;
        while (unit < UNITS.length - 1 && Math.abs(bytes) >= 1L << (10 * (unit + 2))) {
            unit++;
        }
        long scale = 1L << (10 * (unit + 1));
        if (bytes % scale == 0) {
            return bytes / scale + " " + UNITS[unit];
        }
        return String.format(Locale.ROOT, "%.1f %s", (double) bytes / scale, UNITS[unit]);
    }

    /** {@return a range for a message's expectation: {@code 64 KiB..1 TiB}} */
    public static String range(long from, long to) {
        return format(from) + ".." + format(to);
    }
}
