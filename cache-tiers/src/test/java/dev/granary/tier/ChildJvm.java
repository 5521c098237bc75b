// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Starts a {@code main} of the test classpath in a child JVM: real processes for locking and crash tests. */
final class ChildJvm {

    record Result(int exitCode, String output) {}

    private ChildJvm() {}

    /** Starts the child with its stdout and stderr merged into one stream the caller reads. */
    static Process start(Class<?> main, String... args) {
        return start(List.of(), main, args);
    }

    /** Starts the child with extra JVM options. */
    static Process start(List<String> jvmOptions, Class<?> main, String... args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.add("-Xmx256m");
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-XX:TieredStopAtLevel=1"); // a short-lived child: start fast
        // a child that crashes (a test that checks it does not) leaves its report in the temp directory, not the tree
        command.add("-XX:ErrorFile=" + Path.of(System.getProperty("java.io.tmpdir"), "granary-hs_err_pid%p.log"));
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(main.getName());
        command.addAll(List.of(args));
        try {
            return new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Runs the child to its end (at most a minute) and returns its exit code and output. */
    static Result run(Class<?> main, String... args) throws IOException, InterruptedException {
        return run(List.of(), main, args);
    }

    /** Runs the child, with extra JVM options, to its end (at most a minute). */
    static Result run(List<String> jvmOptions, Class<?> main, String... args) throws IOException, InterruptedException {
        Process process = start(jvmOptions, main, args);
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("child " + main.getSimpleName() + " did not end within a minute: " + output);
        }
        return new Result(process.exitValue(), output);
    }
}
