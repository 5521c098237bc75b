// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Granary#version()} from the build's resource and from a jar manifest, and its {@code main} in a real JVM. */
class GranaryTest {

    @TempDir
    Path temp;

    /** The version in the root pom: what the build filtered into dev/granary/version.properties. */
    private static String projectVersion() throws Exception {
        String pom = Files.readString(Path.of("..", "pom.xml"));
        Matcher version = Pattern.compile("<artifactId>granary-parent</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(pom);
        assertTrue(version.find(), "the root pom has no version after its artifactId");
        return version.group(1).strip();
    }

    private static Path classesDirectory() throws Exception {
        return Path.of(Granary.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
    }

    /** Runs {@code java -cp classPath dev.granary.Granary} and returns its standard output. */
    private static String runMain(String classPath) throws IOException, InterruptedException {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Process process = new ProcessBuilder(java.toString(), "-cp", classPath, Granary.class.getName())
                .redirectErrorStream(true)
                .start();
        byte[] output = process.getInputStream().readAllBytes();
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "the child JVM did not exit");
        assertEquals(0, process.exitValue(), new String(output, StandardCharsets.UTF_8));
        return new String(output, StandardCharsets.UTF_8);
    }

    @Test
    void versionIsTheProjectVersionOutsideAJar() throws Exception {
        assertTrue(Files.isDirectory(classesDirectory()), "these tests run against target/classes");
        assertEquals(projectVersion(), Granary.version());
    }

    @Test
    void mainPrintsTheVersion() throws Exception {
        assertEquals(
                "Granary " + projectVersion() + System.lineSeparator(),
                runMain(classesDirectory().toString()));
    }

    @Test
    void aJarManifestsImplementationVersionComesFirst() throws Exception {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(Attributes.Name.IMPLEMENTATION_VERSION, "9.8.7-manifest");
        Path jar = temp.resolve("cache-core.jar");
        Path classes = classesDirectory();
        try (OutputStream file = Files.newOutputStream(jar);
                JarOutputStream out = new JarOutputStream(file, manifest)) {
            for (String entry : List.of("dev/granary/Granary.class", "dev/granary/version.properties")) {
                out.putNextEntry(new JarEntry(entry));
                out.write(Files.readAllBytes(classes.resolve(entry)));
                out.closeEntry();
            }
        }
        assertEquals("Granary 9.8.7-manifest" + System.lineSeparator(), runMain(jar.toString()));
    }
}
