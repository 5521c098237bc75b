// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

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

/** {@code granary inspect}: what a disk-tier directory holds ({@link DiskTierInspection#inspect}). */
@Command(
        name = "inspect",
        mixinStandardHelpOptions = true,
        description = {
            "Show what a disk-tier directory holds: format, capacity and how full it is, segments, pages,"
                    + " objects, bytes, versions, origins and free room. Reads only: no lock, nothing written, so a"
                    + " directory running caches hold can be inspected (the figures are then a snapshot).",
            "",
            "  granary inspect /nvme/granary"
        },
        footer = {"", ExitCodes.HELP})
final class InspectCommand implements Callable<Integer> {

    @Parameters(index = "0", paramLabel = "<disk-dir>", description = "A disk tier's directory.")
    Path directory;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        DiskTierInspection.Summary s = DiskTierInspection.inspect(directory);
        PrintWriter out = spec.commandLine().getOut();
        out.printf(Locale.ROOT, "directory  %s%n", s.directory());
        out.printf(
                Locale.ROOT,
                "in use     %s%n",
                s.inUseBy()
                        .map(h -> "yes, by " + h + " (a snapshot: it may be" + " changing)")
                        .orElse("no"));
        out.printf(Locale.ROOT, "format     %d%n", s.format());
        out.printf(
                Locale.ROOT,
                "capacity   %s%n",
                s.capacity() < 0
                        ? "not recorded (written by an older Granary)"
                        : String.format(
                                Locale.ROOT,
                                "%s, %.0f %% used (as the tier that opened it last was configured)",
                                Sizes.format(s.capacity()),
                                100.0 * s.segmentBytes() / Math.max(1, s.capacity())));
        out.printf(Locale.ROOT, "segments   %d (%s on disk)%n", s.segments(), Sizes.format(s.segmentBytes()));
        out.printf(Locale.ROOT, "pages      %d (%s)%n", s.pages(), Sizes.format(s.pageBytes()));
        out.printf(Locale.ROOT, "objects    %d%n", s.objects());
        out.printf(Locale.ROOT, "versions   %d%n", s.versions());
        out.printf(Locale.ROOT, "origins    %s%n", s.origins().isEmpty() ? "-" : String.join(", ", s.origins()));
        out.printf(Locale.ROOT, "free room  %s on the file system%n", Sizes.format(s.freeBytes()));
        out.printf(
                Locale.ROOT,
                "damage     %d segments with a damaged header, %d ending in a record that is not valid"
                        + " (scan took %d ms; 'granary verify' checks every page)%n",
                s.damagedSegments(),
                s.damagedTails(),
                s.scan().toMillis());
        out.flush();
        return ExitCodes.OK;
    }
}
