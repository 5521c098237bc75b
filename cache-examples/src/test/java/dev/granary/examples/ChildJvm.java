// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Starts an example's {@code main} in a child JVM on this test's class path: a real second process. */
final class ChildJvm {

    private ChildJvm() {}

    static Process start(Class<?> main, String... args) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m",
                "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1",
                "-XX:ErrorFile=" + Path.of(System.getProperty("java.io.tmpdir"), "granary-hs_err_pid%p.log"),
                "-cp",
                System.getProperty("java.class.path"),
                main.getName()));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }
}
