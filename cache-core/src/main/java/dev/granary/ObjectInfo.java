// SPDX-License-Identifier: Apache-2.0
package dev.granary;

/**
 * What the cache knows of one object: its key, its size and its version.
 *
 * <p>The version is the origin's own name for one immutable state of the object: the S3 ETag, the GCS generation,
 * or for a POSIX file its size, modification time and inode. Every cached page is keyed by it, and every origin read
 * is pinned to it.
 *
 * @param key     the object key, relative to the origin's root
 * @param size    the object's size in bytes, {@code >= 0}
 * @param version the object's version, never empty
 */
public record ObjectInfo(String key, long size, String version) {

    /**
     * Validates the components.
     *
     * @throws IllegalArgumentException if the key or version is null or empty, or the size is negative
     */
    public ObjectInfo {
        if (key == null || key.isEmpty()) {
            throw new IllegalArgumentException("object key: " + Checks.quote(key) + " (expected: a non-empty key)");
        }
        if (size < 0) {
            throw new IllegalArgumentException("size of '" + key + "': " + size + " (expected: >= 0)");
        }
        if (version == null || version.isEmpty()) {
            throw new IllegalArgumentException(
                    "version of '" + key + "': " + Checks.quote(version) + " (expected: a non-empty version)");
        }
    }
}
