// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * Which Granary this is. {@code java -jar cache-core-<version>.jar} (or {@code java -cp ... dev.granary.Granary})
 * prints {@code Granary <version>}.
 *
 * <p>Stateless and thread-safe; not instantiable.
 */
public final class Granary {

    private Granary() {}

    /**
     * {@return the version of the {@code cache-core} artifact on the class or module path}, such as
     * {@code 0.1.0-SNAPSHOT}: the {@code Implementation-Version} of its jar's manifest, or, when the classes are not in
     * a
     * jar (an IDE, {@code target/classes}), the {@code dev/granary/version.properties} resource the build wrote beside
     * them
     *
     * @throws IllegalStateException if neither says (a build that skipped resource processing)
     * @throws UncheckedIOException  if the resource is there but cannot be read
     */
    public static String version() {
        String fromManifest = Granary.class.getPackage().getImplementationVersion();
        if (fromManifest != null && !fromManifest.isBlank()) {
            return fromManifest;
        }
        // The resource is in this class's own package (and module), which getResourceAsStream may always read.
        try (InputStream in = Granary.class.getResourceAsStream("version.properties")) {
            if (in != null) {
                Properties properties = new Properties();
                properties.load(in);
                String version = properties.getProperty("version", "");
                if (!version.isBlank() && !version.startsWith("${")) {
                    return version;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading dev/granary/version.properties", e);
        }
        throw new IllegalStateException("Granary version: unknown (expected: an Implementation-Version in the jar's"
                + " manifest or a filtered dev/granary/version.properties beside the classes)");
    }

    /**
     * Prints {@code Granary <version>} to standard output.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        System.out.println("Granary " + version());
    }
}
