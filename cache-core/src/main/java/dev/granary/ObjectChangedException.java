// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import java.io.IOException;
import java.net.URI;

/**
 * Thrown when an object changed at the origin while it was being read: the version a read was pinned to no longer
 * exists. No bytes of the new version were mixed into the result; reading again reads the new version.
 */
public class ObjectChangedException extends IOException {

    private static final long serialVersionUID = 1L;

    /** The origin holding the object. */
    private final URI origin;
    /** The object's key. */
    private final String key;
    /** The version the read was pinned to. */
    private final String expectedVersion;
    /** The version the origin has now, or null if it did not say. */
    private final String actualVersion;

    /**
     * Creates the exception.
     *
     * @param origin          the origin's URI
     * @param key             the object key
     * @param expectedVersion the version the read was pinned to
     * @param actualVersion   the version the origin has now, or null if unknown
     */
    public ObjectChangedException(URI origin, String key, String expectedVersion, String actualVersion) {
        this(origin, key, expectedVersion, actualVersion, null);
    }

    /**
     * Creates the exception with the origin's own error as cause.
     *
     * @param origin          the origin's URI
     * @param key             the object key
     * @param expectedVersion the version the read was pinned to
     * @param actualVersion   the version the origin has now, or null if unknown
     * @param cause           the origin's error, or null
     */
    public ObjectChangedException(
            URI origin, String key, String expectedVersion, String actualVersion, Throwable cause) {
        super(
                "object changed: '" + key + "' in origin " + origin + " is no longer version " + expectedVersion
                        + (actualVersion == null ? "" : " (now " + actualVersion + ")"),
                cause);
        this.origin = origin;
        this.key = key;
        this.expectedVersion = expectedVersion;
        this.actualVersion = actualVersion;
    }

    /** {@return the origin's URI} */
    public URI origin() {
        return origin;
    }

    /** {@return the object key} */
    public String key() {
        return key;
    }

    /** {@return the version the read was pinned to} */
    public String expectedVersion() {
        return expectedVersion;
    }

    /** {@return the version the origin reported instead, or null if it did not say} */
    public String actualVersion() {
        return actualVersion;
    }
}
