// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.support;

/**
 * Key rules shared by origins over flat namespaces (S3, GCS): which names of the store are objects the cache can
 * address, and how a configured prefix is normalised. Stateless.
 */
public final class Keys {

    private Keys() {}

    /**
     * {@return whether the cache can address this key}: not empty, no leading {@code /}, no {@code ..} segment, no NUL,
     * and not ending in {@code /} (a folder marker, not an object)
     *
     * @param key the key, possibly null
     */
    public static boolean addressable(String key) {
        if (key == null || key.isEmpty() || key.endsWith("/") || key.startsWith("/") || key.indexOf('\0') >= 0) {
            return false;
        }
        int start = 0;
        while (true) {
            int slash = key.indexOf('/', start);
            int end = slash < 0 ? key.length() : slash;
            if (end - start == 2 && key.startsWith("..", start)) {
                return false;
            }
            if (slash < 0) {
                return true;
            }
            start = slash + 1;
        }
    }

    /**
     * Checks a key an origin is asked for.
     *
     * @param key the key
     * @return the key
     * @throws IllegalArgumentException naming the key unless {@link #addressable(String)}
     */
    public static String requireAddressable(String key) {
        if (!addressable(key)) {
            throw new IllegalArgumentException("key: " + (key == null ? "null" : "'" + key + "'") + " (expected: a"
                    + " non-empty relative key without '..' segments that does not end in '/')");
        }
        return key;
    }

    /**
     * Normalises a prefix that keys are relative to, like a directory: {@code "imagenet"} becomes
     * {@code "imagenet/"}; {@code ""} stays empty (the whole bucket).
     *
     * @param prefix the configured prefix
     * @return the prefix, empty or ending in {@code /}
     * @throws IllegalArgumentException naming the prefix if it is null, starts with {@code /}, or has an empty,
     *                                  {@code .} or {@code ..} segment
     */
    public static String directoryPrefix(String prefix) {
        if (prefix == null) {
            throw new IllegalArgumentException("prefix: null (expected: a key prefix such as 'imagenet/', or '')");
        }
        String p = prefix.isEmpty() || prefix.endsWith("/") ? prefix : prefix + "/";
        if (p.startsWith("/") || p.contains("//") || ("/" + p).contains("/../") || ("/" + p).contains("/./")) {
            throw new IllegalArgumentException("prefix: '" + prefix + "' (expected: a relative key prefix without a"
                    + " leading '/', empty, '.' or '..' segments, e.g. 'imagenet/')");
        }
        return p;
    }
}
