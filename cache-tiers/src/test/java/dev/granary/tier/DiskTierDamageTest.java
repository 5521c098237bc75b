// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.testkit.Dataset;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A disk tier whose files are damaged under it or between runs: misses and I/O errors, never a crash or wrong bytes. */
class DiskTierDamageTest {

    @TempDir
    Path root;
    private Path data;
    private Path dir;

    @BeforeEach
    void setUp() {
        data = root.resolve("data");
        dir = root.resolve("disk");
        Dataset dataset = new Dataset(data, 11);
        SplittableRandom random = new SplittableRandom(5);
        for (int i = 0; i < 30; i++) {
            // every object spans at least two pages, so whole reads are assembled by copies
            dataset.put(String.format("obj-%02d", i), TruncatedSegmentMain.PAGE + 1 + random.nextInt(50_000));
        }
    }

    @Test
    void aSegmentTruncatedUnderARunningTierIsAMissNotACrash() throws Exception {
        ChildJvm.Result child = ChildJvm.run(TruncatedSegmentMain.class, data.toString(), dir.toString(), "cold");
        assertEquals(0, child.exitCode(), "the child must end normally (134 is a SIGBUS): " + child.output());
        Matcher m = result(child);
        assertEquals(0, count(m, "wrong"), child.output());
        assertEquals(0, count(m, "io"), "unverified pages are verified by reading the file: a miss, not an error: "
                + child.output());
        assertEquals(2 * count(m, "objects"), count(m, "ok"), child.output());
        assertEquals(2 * count(m, "objects"), count(m, "second-pass-ok"), child.output());
        assertTrue(count(m, "corruptions") + count(m, "failures") > 0, "the truncation is counted: "
                + child.output());
    }

    @Test
    void aSegmentTruncatedAfterItsPagesWereVerifiedGivesIoErrorsNeverAnError() throws Exception {
        ChildJvm.Result child = ChildJvm.run(TruncatedSegmentMain.class, data.toString(), dir.toString(),
                "verified");
        assertEquals(0, child.exitCode(), "the child must end normally (1: an Error escaped a read; 134: a SIGBUS): "
                + child.output());
        Matcher m = result(child);
        assertEquals(0, count(m, "wrong"), child.output());
        assertEquals(0, count(m, "io-unexplained"), "an I/O error says the cache file was damaged: "
                + child.output());
        assertEquals(2 * count(m, "objects"), count(m, "ok") + count(m, "io"), child.output());
        assertEquals(2 * count(m, "objects"), count(m, "second-pass-ok"), "damaged pages were dropped, so the second"
                + " pass reads them from the origin: " + child.output());
        assertTrue(count(m, "corruptions") + count(m, "failures") > 0, "the truncation is counted: "
                + child.output());
    }

    @Test
    void copiesFromATruncatedMappingFailAsIoErrorsAndTheNextReadMisses() throws Exception {
        ChildJvm.Result child = ChildJvm.run(TruncatedSegmentMain.class, data.toString(), dir.toString(),
                "verified-disk-only");
        assertEquals(0, child.exitCode(), "1: an Error escaped a read; 134: a SIGBUS: " + child.output());
        Matcher m = result(child);
        assertEquals(0, count(m, "wrong"), child.output());
        assertTrue(count(m, "io") > 0, "a copy met the truncated mapping: " + child.output());
        assertEquals(0, count(m, "io-unexplained"), "an I/O error says the cache file was damaged: "
                + child.output());
        assertEquals(2 * count(m, "objects"), count(m, "ok") + count(m, "io"), child.output());
        assertEquals(2 * count(m, "objects"), count(m, "second-pass-ok"), child.output());
    }

    @Test
    void aSegmentTruncatedUnderARunningTierIsFoundByTheLengthCheckAndDropped() throws Exception {
        ChildJvm.Result child = ChildJvm.run(TruncatedSegmentMain.class, data.toString(), dir.toString(), "checked");
        assertEquals(0, child.exitCode(), child.output());
        Matcher m = result(child);
        assertEquals(0, count(m, "wrong"), child.output());
        assertEquals(0, count(m, "io-unexplained"), child.output());
        assertEquals(2 * count(m, "objects"), count(m, "second-pass-ok"), child.output());
        assertTrue(count(m, "corruptions") > 0, "the truncated segment is dropped and counted: " + child.output());
    }

    private static Matcher result(ChildJvm.Result child) {
        Matcher m = Pattern.compile("result (.*)").matcher(child.output());
        assertTrue(m.find(), "the child prints its result: " + child.output());
        System.out.println("truncation child: " + m.group(1));
        return m;
    }

    private static int count(Matcher m, String name) {
        Matcher field = Pattern.compile("(?:^| )" + Pattern.quote(name) + "=(\\d+)").matcher(m.group(1));
        assertTrue(field.find(), name + " in " + m.group(1));
        return Integer.parseInt(field.group(1));
    }
}
