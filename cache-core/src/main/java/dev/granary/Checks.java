// SPDX-License-Identifier: Apache-2.0
package dev.granary;

/**
 * Argument checks shared by the cache's public entry points. Messages follow {@code "<what>: <value> (expected:
 * <constraint>)"}.
 */
final class Checks {

    private Checks() {}

    static String quote(String s) {
        return s == null ? "null" : "'" + s + "'";
    }

    /**
     * Checks a key the way every origin needs it: present, relative, and not escaping the origin's root.
     *
     * @throws IllegalArgumentException naming the key and the rule it breaks
     */
    static String key(String key) {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("key: " + quote(key) + " (expected: a non-empty key)");
        }
        if (key.charAt(0) == '/') {
            throw new IllegalArgumentException(
                    "key: " + quote(key) + " (expected: a key relative to the origin's root, not an absolute path)");
        }
        if (key.indexOf('\0') >= 0) {
            throw new IllegalArgumentException(
                    "key: " + quote(key.replace("\0", "\\0")) + " (expected: no NUL character)");
        }
        int start = 0;
        while (start <= key.length()) {
            int slash = key.indexOf('/', start);
            int end = slash < 0 ? key.length() : slash;
            if (end - start == 2 && key.charAt(start) == '.' && key.charAt(start + 1) == '.') {
                throw new IllegalArgumentException(
                        "key: " + quote(key) + " (expected: no '..' segment; keys may not escape the origin's root)");
            }
            if (slash < 0) {
                break;
            }
            start = slash + 1;
        }
        return key;
    }

    static void range(String key, long offset, long length) {
        if (offset < 0) {
            throw new IllegalArgumentException("offset into '" + key + "': " + offset + " (expected: >= 0)");
        }
        if (length < 0) {
            throw new IllegalArgumentException("length of read of '" + key + "': " + length + " (expected: >= 0)");
        }
        if (length > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("length of read of '" + key + "': " + length + " (expected: <= "
                    + (Integer.MAX_VALUE - 8) + ", one buffer; use readInto for more)");
        }
    }
}
