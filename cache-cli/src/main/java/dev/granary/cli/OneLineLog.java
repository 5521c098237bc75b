// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import java.io.PrintWriter;
import java.text.MessageFormat;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * What the library logs, as the command line shows it: one line per warning on standard error,
 * {@code granary prestage: warning: <message>}, the way errors are shown, instead of java.util.logging's two-line
 * records with a timestamp and a class name. Granary logs through {@link System.Logger} and the SDKs through SLF4J,
 * both of which end in java.util.logging here. Informational lines show only under {@code --verbose}
 * ({@code granary prestage: info: …}). Installed on the root logger for one command's run, then the previous handlers
 * come back.
 *
 * <p>Not thread-safe to install: one command runs at a time. Records are written under the writer's lock, from any
 * thread.
 */
final class OneLineLog extends Handler implements AutoCloseable {

    private final String command;
    private final PrintWriter err;
    private final Logger root;
    private final Handler[] previous;
    private final Level previousLevel;

    private OneLineLog(String command, PrintWriter err, Logger root, boolean verbose) {
        this.command = command;
        this.err = err;
        this.root = root;
        this.previous = root.getHandlers();
        this.previousLevel = root.getLevel();
        setLevel(verbose ? Level.INFO : Level.WARNING);
    }

    /** Replaces the root logger's handlers by one that writes to {@code err}; {@link #close()} restores them. */
    static OneLineLog install(String command, PrintWriter err, boolean verbose) {
        Logger root = LogManager.getLogManager().getLogger("");
        OneLineLog log = new OneLineLog(command, err, root, verbose);
        for (Handler h : log.previous) {
            root.removeHandler(h);
        }
        root.addHandler(log);
        if (verbose && (root.getLevel() == null || root.getLevel().intValue() > Level.INFO.intValue())) {
            root.setLevel(Level.INFO);
        }
        return log;
    }

    @Override
    public void publish(LogRecord record) {
        if (!isLoggable(record)) {
            return;
        }
        String message = record.getMessage();
        if (record.getParameters() != null && record.getParameters().length > 0 && message != null) {
            message = MessageFormat.format(message, record.getParameters());
        }
        if (message == null || message.isBlank()) {
            message = record.getThrown() == null
                    ? "(no message)"
                    : record.getThrown().toString();
        } else if (record.getThrown() != null) {
            message += ": " + record.getThrown();
        }
        String kind = record.getLevel().intValue() >= Level.SEVERE.intValue()
                ? "error"
                : record.getLevel().intValue() >= Level.WARNING.intValue() ? "warning" : "info";
        synchronized (err) {
            err.println(command + ": " + kind + ": "
                    + message.replaceAll("\\s*\\R\\s*", " ").strip());
            err.flush();
        }
    }

    @Override
    public void flush() {
        err.flush();
    }

    @Override
    public void close() {
        root.removeHandler(this);
        for (Handler h : previous) {
            root.addHandler(h);
        }
        root.setLevel(previousLevel);
    }
}
