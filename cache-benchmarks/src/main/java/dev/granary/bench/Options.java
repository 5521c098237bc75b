// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import java.util.LinkedHashMap;
import java.util.Map;

/** {@code --name=value} options of the benchmark mains: integers, each with a default; unknown names are errors. */
public final class Options {

    private Options() {}

    /**
     * Parses the arguments over the defaults.
     *
     * @throws IllegalArgumentException naming the argument and the expectation
     */
    public static Map<String, Long> parse(String[] args, Map<String, String> defaults) {
        Map<String, Long> values = new LinkedHashMap<>();
        defaults.forEach((name, value) -> values.put(name, number(name, value)));
        for (String arg : args) {
            if (arg.isBlank()) {
                continue;
            }
            int eq = arg.indexOf('=');
            String name = arg.startsWith("--") && eq > 2 ? arg.substring(2, eq) : null;
            if (name == null || !defaults.containsKey(name)) {
                throw new IllegalArgumentException(
                        "argument: '" + arg + "' (expected: --name=value with a name in " + defaults.keySet() + ")");
            }
            values.put(name, number(name, arg.substring(eq + 1)));
        }
        return values;
    }

    private static long number(String name, String value) {
        try {
            long n = Long.parseLong(value.strip().replace("_", ""));
            if (n < 0) {
                throw new NumberFormatException();
            }
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + name + ": '" + value + "' (expected: an integer >= 0)");
        }
    }
}
