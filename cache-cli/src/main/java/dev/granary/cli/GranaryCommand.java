// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.Granary;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

/**
 * The {@code granary} command: the operator's side of Granary. Each subcommand is a class of its own; this one wires
 * them, and turns failures into one line on standard error and an exit code ({@link ExitCodes}), with the stack trace
 * only under {@code --verbose}.
 *
 * <p>A {@link CommandLine} from {@link #commandLine()} runs one command per {@code execute}; tests run it in-process
 * with their own output writers. Not thread-safe: one execution at a time per instance.
 */
@Command(
        name = "granary",
        mixinStandardHelpOptions = true,
        versionProvider = GranaryCommand.Version.class,
        description = "Operate Granary disk caches: pre-stage a dataset, pack small files into shards, inspect, verify"
                + " and clear a cache directory, benchmark a loader, plan its epochs.",
        footer = {"", ExitCodes.HELP},
        subcommands = {
            PrestageCommand.class,
            PackCommand.class,
            IndexCommand.class,
            InspectCommand.class,
            VerifyCommand.class,
            ClearCommand.class,
            BenchCommand.class,
            PlanCommand.class,
            CommandLine.HelpCommand.class
        })
final class GranaryCommand implements Runnable {

    @Option(
            names = {"-v", "--verbose"},
            scope = ScopeType.INHERIT,
            description = "On failure, print the stack trace too.")
    boolean verbose;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** {@return a command line ready to execute, with Granary's error handling} */
    static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new GranaryCommand());
        cl.setExecutionStrategy(parsed -> {
            CommandLine command = parsed.asCommandLineList().getLast();
            boolean verbose = false;
            for (CommandLine.ParseResult p = parsed; p != null; p = p.subcommand()) {
                verbose |= p.hasMatchedOption("--verbose");
            }
            try (OneLineLog log = OneLineLog.install(name(command), command.getErr(), verbose)) {
                return new CommandLine.RunLast().execute(parsed);
            }
        });
        cl.setExecutionExceptionHandler(GranaryCommand::failed);
        cl.setParameterExceptionHandler(GranaryCommand::badUsage);
        cl.setUsageHelpAutoWidth(true);
        return cl;
    }

    private static int badUsage(CommandLine.ParameterException e, String[] args) {
        CommandLine cl = e.getCommandLine();
        PrintWriter err = cl.getErr();
        err.println(name(cl) + ": " + e.getMessage());
        err.println("Try '" + name(cl) + " --help'.");
        err.flush();
        return ExitCodes.USAGE;
    }

    private static int failed(Exception e, CommandLine cl, CommandLine.ParseResult parsed) {
        boolean verbose = false;
        for (CommandLine.ParseResult p = parsed; p != null; p = p.subcommand()) {
            verbose |= p.hasMatchedOption("--verbose");
        }
        PrintWriter err = cl.getErr();
        int code = exitCode(e);
        String message = oneLine(e);
        if (code == ExitCodes.INTERNAL && !verbose) {
            message += " (an internal error: run again with --verbose for the stack trace)";
        }
        err.println(name(cl) + ": " + message);
        if (verbose) {
            e.printStackTrace(err);
        }
        err.flush();
        return code;
    }

    private static String name(CommandLine cl) {
        return cl.getCommandSpec().qualifiedName();
    }

    static int exitCode(Throwable e) {
        return switch (e) {
            case IllegalArgumentException x -> ExitCodes.REFUSED;
            case IllegalStateException x -> ExitCodes.REFUSED;
            case IOException x -> ExitCodes.IO;
            case UncheckedIOException x -> ExitCodes.IO;
            case UnsupportedOperationException x -> ExitCodes.REFUSED;
            default ->
                e.getCause() != null && e.getCause() != e && (e.getCause() instanceof IOException)
                        ? ExitCodes.IO
                        : ExitCodes.INTERNAL;
        };
    }

    /** The message of a failure as one line; an UncheckedIOException's is its cause's. */
    static String oneLine(Throwable e) {
        Throwable t = e instanceof UncheckedIOException && e.getCause() != null ? e.getCause() : e;
        String message = t.getMessage();
        if (message == null || message.isBlank()) {
            message = t.getClass().getName();
        } else if (t instanceof IOException && !(t.getClass() == IOException.class)) {
            message = t.getClass().getSimpleName() + ": " + message;
        }
        return message.replaceAll("\\s*\\R\\s*", " ").strip();
    }

    /** The version from the jar's manifest (Granary.version()). */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            return new String[] {"granary " + Granary.version() + " (Java " + Runtime.version() + ")"};
        }
    }
}
