// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

/**
 * The {@code granary} command's exit codes (also listed by {@code granary --help} and in {@code docs/operations.md}).
 * Scripts branch on them: an init container retries on {@link #IO}, fails the pod on {@link #REFUSED}.
 */
final class ExitCodes {

    /** Done, nothing wrong. */
    static final int OK = 0;
    /** The command ran to the end and found a problem: damaged pages ({@code verify}), objects not staged. */
    static final int PROBLEMS = 1;
    /** Bad usage: an unknown option, a missing argument, a value that does not parse. */
    static final int USAGE = 2;
    /** Refused: not a Granary directory, a directory in use, an invalid value (nothing was changed). */
    static final int REFUSED = 3;
    /** An I/O failure: an origin that cannot be reached or listed (a missing bucket), a disk that fails. */
    static final int IO = 4;
    /** Cancelled (Ctrl-C during a prestage: what was staged stays, and a new run resumes). */
    static final int CANCELLED = 130;
    /** A bug: the message says what; run again with --verbose for the stack trace and report it. */
    static final int INTERNAL = 70;

    static final String HELP = """
            Exit codes:
              0    done
              1    ran, but found problems (damaged pages, objects not staged)
              2    bad usage (unknown option, missing or unparsable argument)
              3    refused, nothing changed (not a Granary directory, in use, bad value)
              4    I/O failure (origin unreachable or missing, disk failing)
              70   internal error (run with --verbose and report it)
              130  cancelled (Ctrl-C); a prestage run again resumes""";

    private ExitCodes() {}
}
