// SPDX-License-Identifier: Apache-2.0
package dev.granary.dl4j.examples;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Keeps docs/guide-dl4j.md honest: every {@code ```java} block in it must appear, line for line (indentation aside),
 * in {@link FashionMnistTraining}, which the build compiles and {@link GuideExampleTest} runs; and the dependency
 * snippet must name this artifact and the BOM.
 */
class GuideSnippetsTest {

    private static final Path GUIDE = Path.of("..", "docs", "guide-dl4j.md");
    private static final Path EXAMPLE =
            Path.of("src", "test", "java", "dev", "granary", "dl4j", "examples", "FashionMnistTraining.java");

    @Test
    void everyJavaBlockOfTheGuideIsCompiledCode() throws IOException {
        List<String> guide = Files.readAllLines(GUIDE);
        List<String> example = strip(Files.readAllLines(EXAMPLE));
        List<List<String>> blocks = new ArrayList<>();
        List<String> block = null;
        for (String line : guide) {
            if (block == null && line.strip().equals("```java")) {
                block = new ArrayList<>();
            } else if (block != null && line.strip().equals("```")) {
                blocks.add(strip(block));
                block = null;
            } else if (block != null) {
                block.add(line);
            }
        }
        assertTrue(
                blocks.size() >= 4,
                "the guide's Java blocks: " + blocks.size() + " (expected: the example and"
                        + " its origin, sharding and resume parts)");
        for (List<String> b : blocks) {
            assertTrue(
                    Collections.indexOfSubList(example, b) >= 0,
                    "this block of " + GUIDE + " is not in " + EXAMPLE + " (copy it from there):\n"
                            + String.join("\n", b));
        }
        String text = String.join("\n", guide);
        for (String needle : List.of(
                "<artifactId>cache-bom</artifactId>",
                "<artifactId>cache-dl4j</artifactId>",
                "--enable-native-access=ALL-UNNAMED",
                "asyncSupported")) {
            assertTrue(text.contains(needle), GUIDE + " lacks " + needle);
        }
    }

    private static List<String> strip(List<String> lines) {
        return lines.stream().map(String::strip).filter(l -> !l.isEmpty()).toList();
    }
}
