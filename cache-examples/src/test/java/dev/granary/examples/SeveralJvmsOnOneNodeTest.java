// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cookbook's one-node recipe in two real processes (two "GPUs" of one node) over one shared disk directory: every
 * epoch the two ranks split the data between them, and the node reads each object from the origin once in all.
 */
@Timeout(120)
class SeveralJvmsOnOneNodeTest {

    private static final Pattern LINE = Pattern.compile("rank (\\d) epoch (\\d): (\\d+) samples, (\\d+) origin reads");

    @TempDir
    Path temp;

    @Test
    void twoRanksOfOneNodeShareOneCacheDirectory() throws Exception {
        ExampleData data = ExampleData.write(temp.resolve("data"), 400, 16 << 10);
        Path nodeCache = temp.resolve("node-cache");
        List<Process> ranks = new ArrayList<>();
        for (int rank = 0; rank < 2; rank++) {
            ranks.add(ChildJvm.start(
                    SeveralJvmsOnOneNode.class,
                    data.root().toString(),
                    nodeCache.toString(),
                    Integer.toString(rank),
                    "2",
                    "2",
                    "2"));
        }
        long[] samples = new long[2];
        long originReads = 0;
        int lines = 0;
        for (Process rank : ranks) {
            String output = new String(rank.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(rank.waitFor(60, TimeUnit.SECONDS), output);
            assertEquals(0, rank.exitValue(), output);
            Matcher m = LINE.matcher(output);
            while (m.find()) {
                samples[Integer.parseInt(m.group(2))] += Long.parseLong(m.group(3));
                originReads += Long.parseLong(m.group(4));
                lines++;
            }
        }
        assertEquals(4, lines, "two epochs of two ranks");
        assertEquals(data.count(), samples[0], "epoch 0: the ranks' parts make the dataset");
        assertEquals(data.count(), samples[1], "epoch 1: the ranks' parts make the dataset");
        assertEquals(
                data.count(),
                originReads,
                "each object read from the origin once for the whole node, although"
                        + " in epoch 1 each rank reads samples the other rank fetched in epoch 0");
    }
}
