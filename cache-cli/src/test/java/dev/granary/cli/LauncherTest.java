// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The {@code granary} launcher script finds a Java 25 where {@code ./mvnw}'s toolchain discovery would, also when
 * {@code JAVA_HOME} and the {@code PATH}'s {@code java} are older: here both are a stand-in that says it is Java 17,
 * and
 * the only Java 25 the test adds is one in {@code ~/.sdkman/candidates/java} (a link to the JDK running this test).
 */
@Timeout(60)
class LauncherTest {

    private static final Path SCRIPT = Path.of("src", "main", "scripts", "granary");

    /** The launched program: prints the Java it runs on. */
    public static final class PrintJava {
        public static void main(String[] args) {
            System.out.println(
                    System.getProperty("java.specification.version") + " " + System.getProperty("java.home"));
        }
    }

    @TempDir
    Path root;

    @Test
    void theLauncherSkipsAnOlderJavaAndFindsJava25WhereBuildToolsInstallIt() throws Exception {
        Path jar = jarOf(PrintJava.class);
        Path old = fakeJava(root.resolve("jdk-17"), "17");
        Path home = Files.createDirectories(root.resolve("home/.sdkman/candidates/java"));
        Files.createSymbolicLink(home.resolve("25-tem"), Path.of(System.getProperty("java.home")));
        ProcessBuilder pb = new ProcessBuilder("bash", SCRIPT.toAbsolutePath().toString());
        Map<String, String> env = pb.environment();
        env.put("JAVA_HOME", old.toString());
        env.put("PATH", old.resolve("bin") + ":/usr/bin:/bin");
        env.put("HOME", root.resolve("home").toString());
        env.put("GRANARY_JAR", jar.toString());
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        String[] words = out.split(" ");
        assertTrue(Integer.parseInt(words[0]) >= 25, "ran on Java " + out);
        assertTrue(!words[1].startsWith(old.toString()), "not the older Java: " + out);
    }

    @Test
    void withNoJava25AnywhereItSaysWhereItLooked() throws Exception {
        Path old = fakeJava(root.resolve("jdk-17"), "17");
        ProcessBuilder pb = new ProcessBuilder(
                "bash",
                "-c",
                "sed 's|/usr/lib/jvm |/nonexistent/jvm |;"
                        + " s|/usr/lib64/jvm ||; s|/usr/jdk ||; s|/usr/java ||; s|/usr/local/java ||; s|/opt/java ||' "
                        + SCRIPT.toAbsolutePath() + " > " + root.resolve("granary") + " && bash "
                        + root.resolve("granary"));
        Map<String, String> env = pb.environment();
        env.put("JAVA_HOME", old.toString());
        env.put("PATH", old.resolve("bin") + ":/usr/bin:/bin");
        env.put("HOME", Files.createDirectories(root.resolve("empty-home")).toString());
        env.put("GRANARY_JAR", jarOf(PrintJava.class).toString());
        env.keySet().removeIf(k -> k.matches("JAVA\\d+_HOME"));
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        if (Files.isExecutable(Path.of("/usr/bin/java")) && javaMajor("/usr/bin/java") >= 25) {
            return; // this machine's default java is 25: nothing older to skip past
        }
        assertEquals(3, p.exitValue(), out);
        assertTrue(out.startsWith("granary: no Java 25 or newer found"), out);
        assertTrue(out.contains("~/.sdkman/candidates/java"), out);
    }

    private static int javaMajor(String java) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(java, "-XshowSettings:properties", "-version")
                .redirectErrorStream(true)
                .start();
        String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        for (String line : text.split("\n")) {
            if (line.strip().startsWith("java.specification.version = ")) {
                String v = line.strip().substring("java.specification.version = ".length());
                return Integer.parseInt(v.contains(".") ? v.substring(0, v.indexOf('.')) : v);
            }
        }
        return -1;
    }

    /** A directory whose {@code bin/java} answers the launcher's version question as Java {@code version}. */
    private static Path fakeJava(Path dir, String version) throws IOException {
        Path bin = Files.createDirectories(dir.resolve("bin"));
        Path java = bin.resolve("java");
        Files.writeString(
                java,
                "#!/bin/sh\necho \"    java.specification.version = " + version + "\" >&2\n"
                        + "echo 'this is not the Java to run' ; exit 9\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        return dir;
    }

    private Path jarOf(Class<?> main) throws IOException {
        Path jar = root.resolve("print-java.jar");
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(Attributes.Name.MAIN_CLASS, main.getName());
        String entry = main.getName().replace('.', '/') + ".class";
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), manifest);
                var in = main.getClassLoader().getResourceAsStream(entry)) {
            out.putNextEntry(new JarEntry(entry));
            in.transferTo(out);
            out.closeEntry();
        }
        return jar;
    }
}
