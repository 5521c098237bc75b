// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** docs/extending.md shows {@link JsonLinesFormat} as it is compiled. */
@Timeout(30)
class FormatGuideTest {

    @Test
    void theGuideShowsTheFormatExampleAsCompiled() throws IOException {
        String guide = Files.readString(Path.of("..", "docs", "extending.md"));
        String marker = "<!-- example: cache-loader/src/test/java/dev/granary/examples/JsonLinesFormat.java -->";
        int at = guide.indexOf(marker);
        assertTrue(at >= 0, "the guide has no '" + marker + "'");
        int start = guide.indexOf("```java\n", at) + "```java\n".length();
        int end = guide.indexOf("```\n", start);
        assertEquals(
                Files.readString(Path.of("src", "test", "java", "dev", "granary", "examples", "JsonLinesFormat.java")),
                guide.substring(start, end));
    }
}
