// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.xpath.XPathFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.w3c.dom.Document;
import org.xml.sax.InputSource;

/**
 * README.md and docs/cookbook.md show the examples as they are compiled and run here: each ```java block follows a
 * marker {@code <!-- example: path -->} and equals that file byte for byte, no ```java block goes untested, and every
 * example file is shown somewhere. The README's build snippets carry what a first run needs.
 */
@Timeout(60)
class DocsExamplesTest {

    private static final Path REPO = Path.of(System.getProperty("granary.repo", ".."));
    private static final List<String> DOCS = List.of("README.md", "docs/cookbook.md");
    private static final Pattern MARKER =
            Pattern.compile("<!-- example: (\\S+) -->\n```java\n(.*?)```\n", Pattern.DOTALL);
    private static final String DEMO = "./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@demo"
            + "   # the demo: no setup, about a minute";
    private static final String TESTS =
            "./mvnw -q verify" + "                                                         # the tests";

    private static String read(String file) throws IOException {
        return Files.readString(REPO.resolve(file), StandardCharsets.UTF_8);
    }

    @Test
    void everyJavaBlockIsAnExampleFileAsItIs() throws IOException {
        for (String doc : DOCS) {
            String text = read(doc);
            Matcher m = MARKER.matcher(text);
            int shown = 0;
            while (m.find()) {
                assertEquals(read(m.group(1)), m.group(2), doc + " shows " + m.group(1) + " otherwise than it is");
                shown++;
            }
            int blocks = text.split("```java\n", -1).length - 1;
            assertEquals(
                    blocks,
                    shown,
                    doc + ": every ```java block must follow an <!-- example: path --> marker"
                            + " naming the file it shows");
            assertTrue(shown > 0, doc + " shows no example");
        }
    }

    @Test
    void everyExampleIsShownInTheDocs() throws IOException {
        Set<String> shown = new TreeSet<>();
        for (String doc : DOCS) {
            Matcher m = MARKER.matcher(read(doc));
            while (m.find()) {
                shown.add(m.group(1));
            }
        }
        Set<String> examples = new TreeSet<>();
        try (Stream<Path> files = Files.list(REPO.resolve("cache-examples/src/main/java/dev/granary/examples"))) {
            files.forEach(f -> examples.add(REPO.relativize(f).toString()));
        }
        // Examples that need a module cache-examples does not depend on live in that module's tests, which run them.
        examples.add("cache-examples/src/test/java/dev/granary/examples/PrometheusMetrics.java");
        examples.add("cache-parquet/src/test/java/dev/granary/examples/ParquetFiles.java");
        assertEquals(examples, shown);
    }

    @Test
    void theReadmeStartsWithWhatGranaryIsAndTheTwoCommands() throws IOException {
        String readme = read("README.md");
        List<String> top = readme.lines().limit(10).toList();
        assertTrue(top.contains(DEMO), "README lines 1-10 must hold, byte for byte (.ci/run greps it): " + DEMO);
        assertTrue(top.contains(TESTS), "README lines 1-10 must hold, byte for byte (.ci/run greps it): " + TESTS);
        assertTrue(
                readme.getBytes(StandardCharsets.UTF_8).length <= 15_000,
                "README.md is "
                        + readme.getBytes(StandardCharsets.UTF_8).length
                        + " bytes (expected: at most 15 000; details go"
                        + " to docs/)");
    }

    @Test
    void theReadmePomHasWhatAFirstRunNeeds() throws Exception {
        String readme = read("README.md");
        Matcher block =
                Pattern.compile("```xml\n(<\\?xml.*?)```\n", Pattern.DOTALL).matcher(readme);
        assertTrue(block.find(), "the README has no complete pom.xml (```xml starting with <?xml)");
        Document pom = DocumentBuilderFactory.newInstance()
                .newDocumentBuilder()
                .parse(new InputSource(new StringReader(block.group(1))));
        var xpath = XPathFactory.newInstance().newXPath();
        assertEquals("25", xpath.evaluate("/project/properties/*[local-name()='maven.compiler.release']", pom));
        assertEquals(
                projectVersion(),
                xpath.evaluate(
                        "/project/dependencyManagement/dependencies/dependency[artifactId='cache-bom']/version", pom));
        assertTrue(
                xpath.evaluate("//plugin[artifactId='maven-surefire-plugin']/configuration/argLine", pom)
                        .contains("--enable-native-access=ALL-UNNAMED"),
                "surefire's argLine");
        String exec = xpath.evaluate("//plugin[artifactId='exec-maven-plugin']/configuration", pom);
        assertTrue(exec.contains("--enable-native-access=ALL-UNNAMED"), "exec's arguments: " + exec);
        assertTrue(exec.contains(FirstLoop.class.getName()), "exec runs the first loop: " + exec);

        Matcher gradle =
                Pattern.compile("```kotlin\n(.*?)```\n", Pattern.DOTALL).matcher(readme);
        assertTrue(gradle.find(), "the README has no build.gradle.kts");
        String kts = gradle.group(1);
        assertTrue(kts.contains("dev.granary:cache-bom:" + projectVersion()), kts);
        assertTrue(kts.contains("JavaLanguageVersion.of(25)"), kts);
        assertEquals(2, kts.split("--enable-native-access=ALL-UNNAMED", -1).length - 1, "run and test: " + kts);
    }

    private static String projectVersion() throws Exception {
        Document pom = DocumentBuilderFactory.newInstance()
                .newDocumentBuilder()
                .parse(REPO.resolve("pom.xml").toFile());
        return XPathFactory.newInstance().newXPath().evaluate("/project/version", pom);
    }
}
