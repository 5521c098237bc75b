// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import java.io.IOException;
import java.net.URI;

/** Thrown when an object does not exist at the origin. The message names the origin's URI and the key. */
public class NoSuchObjectException extends IOException {

    private static final long serialVersionUID = 1L;

    /** The origin the object was looked for in. */
    private final URI origin;
    /** The key that was not found. */
    private final String key;

    /**
     * Creates the exception.
     *
     * @param origin the origin's URI
     * @param key    the key that was not found
     */
    public NoSuchObjectException(URI origin, String key) {
        this(origin, key, null);
    }

    /**
     * Creates the exception with the origin's own error as cause.
     *
     * @param origin the origin's URI
     * @param key    the key that was not found
     * @param cause  the origin's error, or null
     */
    public NoSuchObjectException(URI origin, String key, Throwable cause) {
        super("no such object: '" + key + "' in origin " + origin, cause);
        this.origin = origin;
        this.key = key;
    }

    /** {@return the origin's URI} */
    public URI origin() {
        return origin;
    }

    /** {@return the key that was not found} */
    public String key() {
        return key;
    }
}
