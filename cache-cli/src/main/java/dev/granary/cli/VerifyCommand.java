// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.tier.DiskTier;
import dev.granary.tier.DiskTierInspection;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code granary verify}: opens a disk-tier directory as a cache would, reads every page from its file and checks its
 * CRC32C ({@link DiskTierInspection#verify}); exit 1 naming every page it could not vouch for: pages whose bytes fail
 * their checksum, and pages the opening scan dropped because a record or segment header before them is damaged.
 */
@Command(
        name = "verify",
        mixinStandardHelpOptions = true,
        description = {
            "Check every page of a disk-tier directory against its CRC32C, and count the pages damage made"
                    + " unreadable. Exit 1 and name what could not be vouched for.",
            "",
            "  granary verify /nvme/granary",
            "",
            "What it does: opens the directory as a cache would (a directory a running cache holds is refused), which"
                    + " scans every segment's record headers, then reads every page those headers index and checks its"
                    + " bytes against the CRC32C its record carries. Pages after a damaged record header are dropped by"
                    + " that scan (the log's order is not proven past damage): verify counts them too.",
            "What it changes: like any cache opening the directory, it deletes a segment file whose own header is"
                    + " damaged, or that ends before its pages do. It repairs nothing else and deletes no page: a cache"
                    + " drops a damaged page when it reads it, and reads it again from the origin; dropped pages are"
                    + " read again from the origin too. To start over, use 'granary clear'."
        },
        footer = {"", ExitCodes.HELP})
final class VerifyCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "<disk-dir>", description = "A disk tier's directory.")
    Path directory;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        DiskTierInspection.Verification v = DiskTierInspection.verify(directory);
        PrintWriter out = spec.commandLine().getOut();
        for (DiskTierInspection.Damage d : v.damaged()) {
            out.printf(
                    Locale.ROOT,
                    "damaged: %s%s version %s bytes [%d, %d) in %s: its bytes fail their CRC32C%n",
                    d.page().origin(),
                    d.page().key(),
                    d.page().version(),
                    d.page().offset(),
                    d.page().end(),
                    d.segment().getFileName());
        }
        for (DiskTier.Dropped d : v.dropped()) {
            out.printf(
                    Locale.ROOT,
                    "dropped: %s: %s; %s%n",
                    d.segment().getFileName(),
                    d.damage(),
                    d.wholeSegment()
                            ? "the file was deleted with its " + d.pages() + " page records (" + Sizes.format(d.bytes())
                                    + ")"
                            : d.pages() == 0
                                    ? "nothing valid after it (a write torn by a crash)"
                                    : d.pages() + " page records after it (" + Sizes.format(d.bytes())
                                            + ") are not served");
        }
        long total = v.pages() + v.droppedPages();
        if (v.clean()) {
            out.printf(
                    Locale.ROOT,
                    "verified %d pages (%s): every page matches its checksum%n",
                    v.pages(),
                    Sizes.format(v.bytes()));
        } else {
            out.printf(
                    Locale.ROOT,
                    "%d of %d pages not vouched for in %s: %d fail their checksum, %d dropped after"
                            + " damage; the other %d pages match their checksum%n",
                    v.notVouchedFor(),
                    total,
                    directory,
                    v.damaged().size(),
                    v.droppedPages(),
                    v.pages() - v.damaged().size());
        }
        out.flush();
        return v.clean() ? ExitCodes.OK : ExitCodes.PROBLEMS;
    }
}
