// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.tier.DiskTierInspection;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code granary verify}: reads every page of a disk-tier directory from its file and checks its CRC32C
 * ({@link DiskTierInspection#verify}); exit 1 naming every damaged page. Damaged pages are not deleted: a cache drops
 * them from its index when it first reads them, and reads them again from the origin.
 */
@Command(name = "verify", mixinStandardHelpOptions = true,
        description = {"Check every page of a disk-tier directory against its CRC32C. Exit 1 and name the damaged"
                + " pages (a cache would drop them and read them again from the origin).",
            "",
            "  granary verify /nvme/granary"},
        footer = {"", ExitCodes.HELP})
final class VerifyCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "<disk-dir>", description = "A disk tier's directory.")
    Path directory;

    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        DiskTierInspection.Verification v = DiskTierInspection.verify(directory);
        PrintWriter out = spec.commandLine().getOut();
        for (DiskTierInspection.Damage d : v.damaged()) {
            out.printf(Locale.ROOT, "damaged: %s%s version %s bytes [%d, %d) in %s%n", d.page().origin(),
                    d.page().key(), d.page().version(), d.page().offset(), d.page().end(), d.segment().getFileName());
        }
        if (v.damaged().isEmpty()) {
            out.printf(Locale.ROOT, "verified %d pages (%s): every page matches its checksum%n", v.pages(),
                    Sizes.format(v.bytes()));
        } else {
            out.printf(Locale.ROOT, "%d of %d pages damaged in %s%n", v.damaged().size(), v.pages(), directory);
        }
        out.flush();
        return v.damaged().isEmpty() ? ExitCodes.OK : ExitCodes.PROBLEMS;
    }
}
