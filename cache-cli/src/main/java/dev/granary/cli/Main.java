// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

/** The {@code granary} command's entry point: runs {@link GranaryCommand} and exits with its exit code. */
public final class Main {

    private Main() {}

    /**
     * Runs the command line.
     *
     * @param args the arguments
     */
    public static void main(String[] args) {
        System.exit(GranaryCommand.commandLine().execute(args));
    }
}
