// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.tier.DiskTierInspection;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code granary clear}: removes a disk-tier directory ({@link DiskTierInspection#clear}); refuses a directory that is
 * not a Granary disk tier's, or one a running cache holds, before deleting anything.
 */
@Command(
        name = "clear",
        mixinStandardHelpOptions = true,
        description = {
            "Remove a Granary disk-tier directory (when the dataset changed or the job ended). Refuses any"
                    + " directory that is not a Granary disk tier, or holds other files, or is in use. A directory that"
                    + " does not exist is nothing to clear (exit 0).",
            "",
            "  granary clear /nvme/granary"
        },
        footer = {"", ExitCodes.HELP})
final class ClearCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "<disk-dir>", description = "A disk tier's directory.")
    Path directory;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if (!Files.exists(directory, LinkOption.NOFOLLOW_LINKS)) {
            spec.commandLine().getOut().println("nothing to clear: " + directory + " does not exist");
            spec.commandLine().getOut().flush();
            return ExitCodes.OK; // as rm -rf: the end state asked for holds
        }
        long bytes = DiskTierInspection.clear(directory);
        spec.commandLine().getOut().println("removed " + directory + " (" + Sizes.format(bytes) + " of segments)");
        spec.commandLine().getOut().flush();
        return ExitCodes.OK;
    }
}
