// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import java.util.Locale;
import picocli.CommandLine;

/**
 * Byte sizes as the command line writes them: {@code 4096}, {@code 64K}, {@code 64M}, {@code 10G}, {@code 1T} (powers
 * of 1024).
 */
final class Sizes implements CommandLine.ITypeConverter<Long> {

    @Override
    public Long convert(String value) {
        return parse(value);
    }

    /**
     * Parses a size.
     *
     * @throws IllegalArgumentException naming the value and the forms accepted
     */
    static long parse(String value) {
        String v = value == null ? "" : value.strip().toUpperCase(Locale.ROOT);
        if (v.endsWith("IB")) {
            v = v.substring(0, v.length() - 2);
        } else if (v.endsWith("B") && v.length() > 1 && !Character.isDigit(v.charAt(v.length() - 2))) {
            v = v.substring(0, v.length() - 1);
        }
        int shift = 0;
        if (!v.isEmpty()) {
            switch (v.charAt(v.length() - 1)) {
                case 'K' -> shift = 10;
                case 'M' -> shift = 20;
                case 'G' -> shift = 30;
                case 'T' -> shift = 40;
                default -> shift = -1;
            }
            if (shift >= 0) {
                v = v.substring(0, v.length() - 1);
            } else {
                shift = 0;
            }
        }
        try {
            double n = Double.parseDouble(v);
            double bytes = n * (1L << shift);
            if (n < 0 || bytes > Long.MAX_VALUE || Double.isNaN(n) || v.isEmpty()) {
                throw new NumberFormatException();
            }
            return (long) bytes;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "size: '" + value + "' (expected: bytes, or a number with K, M, G or T," + " such as 64M or 10G)");
        }
    }

    /**
     * {@return a size the command line accepts, rounded up to a whole number of the largest unit that is at most
     * {@code bytes}: {@code 41M}, {@code 3G}}
     */
    static String roundUp(long bytes) {
        String[] units = {"", "K", "M", "G", "T"};
        int u = 0;
        while (u < units.length - 1 && bytes >= 1L << (10 * (u + 1))) {
            u++;
        }
        long unit = 1L << (10 * u);
        return (bytes + unit - 1) / unit + units[u];
    }

    /** {@return a size for people: {@code 1.5 GiB}} */
    static String format(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB"};
        double v = bytes;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.1f %s", v, units[u]);
    }
}
