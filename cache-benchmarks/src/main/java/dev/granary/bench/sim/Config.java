// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.StringJoiner;

/**
 * The simulation's settings, validated on construction; see {@link EpochTraceSimulator} for the options.
 *
 * @param items     {@code N}, the items of the dataset (accesses per epoch)
 * @param epochs    {@code E}, at least 2 (epoch 0 is cold)
 * @param seed      the sampler's seed
 * @param fractions each {@code C/N} to simulate, in {@code (0, 1]}
 * @param granaryItems {@code N} for the Granary rows, which run real tiers and are slower: their own trace of this
 *                     many items (same seed, epochs and fractions)
 */
record Config(int items, int epochs, long seed, List<Double> fractions, int granaryItems) {

    /** The default {@code N} of the Granary rows: real tiers take about 70 µs an access on the 2-core machine. */
    static final int GRANARY_ITEMS = 20_000;

    /**
     * Validates the settings and copies {@code fractions}.
     *
     * @throws IllegalArgumentException if a value is out of range
     */
    Config {
        require(items >= 1, "items: " + items + " (expected: >= 1)");
        require(epochs >= 2, "epochs: " + epochs + " (expected: >= 2; epoch 0 is cold)");
        require(
                (long) items * epochs < Integer.MAX_VALUE,
                "trace: " + items + " x " + epochs + " accesses (expected: fewer than 2^31 - 1)");
        require(!fractions.isEmpty(), "fractions: none (expected: at least one C/N)");
        for (double f : fractions) {
            require(f > 0 && f <= 1, "fraction: " + f + " (expected: 0 < C/N <= 1)");
            require(Math.round(f * items) >= 1, "fraction: " + f + " of " + items + " items (expected: >= 1 item)");
        }
        require(granaryItems >= 1, "granary-items: " + granaryItems + " (expected: >= 1)");
        require(
                (long) granaryItems * epochs < Integer.MAX_VALUE,
                "Granary trace: " + granaryItems + " x " + epochs + " accesses (expected: fewer than 2^31 - 1)");
        fractions = List.copyOf(fractions);
    }

    /** Every row at {@code N = items}, the Granary rows too. */
    Config(int items, int epochs, long seed, List<Double> fractions) {
        this(items, epochs, seed, fractions, items);
    }

    /** {@return the capacity {@code C} for a {@code C/N} of {@code fraction}, in items} */
    int capacity(double fraction) {
        return capacity(fraction, items);
    }

    /** {@return the capacity {@code C} for a {@code C/N} of {@code fraction} of {@code n} items} */
    static int capacity(double fraction, int n) {
        return (int) Math.round(fraction * n);
    }

    static Config parse(String[] args) {
        String items = "100000";
        String epochs = "5";
        String seed = "1";
        String fractions = "0.1,0.25,0.5,0.75";
        String granaryItems = null;
        for (String arg : args) {
            if (arg.isBlank()) {
                continue;
            }
            int eq = arg.indexOf('=');
            String name = arg.startsWith("--") && eq > 2 ? arg.substring(2, eq) : "";
            String value = arg.substring(eq + 1);
            switch (name) {
                case "items" -> items = value;
                case "epochs" -> epochs = value;
                case "seed" -> seed = value;
                case "fractions" -> fractions = value;
                case "granary-items" -> granaryItems = value;
                default ->
                    throw new IllegalArgumentException("argument: '" + arg + "' (expected: --items=N,"
                            + " --epochs=E, --seed=S, --fractions=F,F,... or --granary-items=N)");
            }
        }
        List<Double> parsed = new ArrayList<>();
        for (String f : fractions.split(",")) {
            try {
                parsed.add(Double.parseDouble(f.strip()));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("fraction: '" + f + "' (expected: a number in (0, 1])", e);
            }
        }
        int n = integer(items, "items");
        int g = granaryItems == null ? Math.min(n, GRANARY_ITEMS) : integer(granaryItems, "granary-items");
        return new Config(n, integer(epochs, "epochs"), longInteger(seed, "seed"), parsed, g);
    }

    /** {@return the options, every one explicit, that reproduce this configuration} */
    String toArgs() {
        StringJoiner f = new StringJoiner(",");
        fractions.forEach(x -> f.add(Double.toString(x)));
        return "--items=" + items + " --epochs=" + epochs + " --seed=" + seed + " --fractions=" + f
                + " --granary-items=" + granaryItems;
    }

    private static int integer(String value, String name) {
        long v = longInteger(value, name);
        if (v != (int) v) {
            throw new IllegalArgumentException(name + ": " + value + " (expected: an int)");
        }
        return (int) v;
    }

    private static long longInteger(String value, String name) {
        try {
            return Long.parseLong(value.strip().replace("_", ""));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + ": '" + value + "' (expected: an integer)", e);
        }
    }

    /** Throws an {@link IllegalArgumentException} with {@code message} unless {@code condition} holds. */
    static void require(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException(message);
        }
    }

    /** {@return {@code capacity}} @throws IllegalArgumentException if it is below one item */
    static int checkCapacity(int capacity) {
        require(capacity >= 1, "capacity: " + capacity + " (expected: >= 1 item)");
        return capacity;
    }
}
