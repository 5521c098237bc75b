// SPDX-License-Identifier: Apache-2.0
package dev.granary.djl.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** docs/guide-djl.md shows the compiled code as it is: the whole example, and each short snippet. */
class GuideTest {

    private static final Path GUIDE = Path.of("..", "docs", "guide-djl.md");
    private static final Path EXAMPLES = Path.of("src", "test", "java", "dev", "granary", "djl", "examples");

    /** The first ```java block after {@code marker} in the guide. */
    private static String blockAfter(String guide, String marker) {
        int at = guide.indexOf(marker);
        assertTrue(at >= 0, "the guide has no '" + marker + "'");
        int start = guide.indexOf("```java\n", at) + "```java\n".length();
        int end = guide.indexOf("```\n", start);
        return guide.substring(start, end);
    }

    @Test
    void theGuideShowsTheExampleAsCompiled() throws IOException {
        String guide = Files.readString(GUIDE);
        String example = Files.readString(EXAMPLES.resolve("FashionMnistMlp.java"));
        assertEquals(
                example,
                blockAfter(
                        guide,
                        "<!-- example: cache-djl/src/test/java/dev/granary/djl/examples/FashionMnistMlp.java -->"));
    }

    @Test
    void theGuideShowsEachSnippetAsCompiled() throws IOException {
        String guide = Files.readString(GUIDE);
        String source = Files.readString(EXAMPLES.resolve("GuideSnippets.java"));
        for (String name : new String[] {"origins", "stats", "checkpoints"}) {
            int start = source.indexOf("// snippet: " + name + "\n");
            assertTrue(start >= 0, name);
            start = source.indexOf('\n', start) + 1;
            int end = source.indexOf("// end\n", start);
            String indent = "        ";
            StringBuilder code = new StringBuilder();
            for (String line : source.substring(start, end).split("\n")) {
                code.append(line.startsWith(indent) ? line.substring(indent.length()) : line.strip())
                        .append('\n');
            }
            String trimmed = code.toString().replaceAll("(?m)^\\s+$", "").stripTrailing() + "\n";
            assertEquals(trimmed, blockAfter(guide, "<!-- snippet: GuideSnippets " + name + " -->"), name);
        }
    }
}
