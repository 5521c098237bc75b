// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

/**
 * The identity of one cached page: a byte extent of one version of one object of one origin.
 *
 * <p>Two pages with equal keys hold equal bytes, whatever tier holds them and whatever process wrote them: the key
 * names the origin, the object, the object's version (S3 ETag, GCS generation, POSIX size+mtime+inode) and the exact
 * extent. A changed object has a new version and therefore new keys, so its old pages can never be served for it.
 * The extent is explicit (offset and length) rather than a page index, so that caches with different page sizes, and
 * per-sample extents that are not page aligned, never collide.
 *
 * @param origin  the origin's URI as a string, {@link Origin#uri()}
 * @param key     the object key, relative to the origin
 * @param version the object version the bytes belong to, {@link dev.granary.ObjectInfo#version()}
 * @param offset  the first byte of the extent within the object, {@code >= 0}
 * @param length  the number of bytes, {@code >= 0}
 */
public record PageKey(String origin, String key, String version, long offset, int length) {

    /**
     * Validates the components.
     *
     * @throws IllegalArgumentException if a string is null or the extent is negative
     */
    public PageKey {
        if (origin == null || key == null || version == null) {
            throw new IllegalArgumentException("page key components: origin=" + origin + ", key=" + key + ", version="
                    + version + " (expected: none null)");
        }
        if (offset < 0 || length < 0 || offset + length < 0) {
            throw new IllegalArgumentException(
                    "page extent: offset=" + offset + ", length=" + length + " (expected: both >= 0, no overflow)");
        }
    }

    /** {@return the offset just past the last byte of the extent} */
    public long end() {
        return offset + length;
    }

    /**
     * {@return whether this page belongs to the given object of the given origin, in any version}
     *
     * @param origin the origin's URI as a string
     * @param key    the object key
     */
    public boolean isOf(String origin, String key) {
        return this.key.equals(key) && this.origin.equals(origin);
    }
}
