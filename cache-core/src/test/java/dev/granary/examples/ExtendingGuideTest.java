// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.testkit.OriginContractTest;
import dev.granary.testkit.TierContractTest;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * docs/extending.md shows the compiled code as it is: {@link MapOrigin}, {@link MapOriginContractTest} and
 * {@link MapOriginCacheTest} whole, and a tier snippet that implements every abstract method of {@link
 * TierContractTest}.
 */
class ExtendingGuideTest {

    private static final Path GUIDE = Path.of("..", "docs", "extending.md");
    private static final Path EXAMPLES = Path.of("src", "test", "java", "dev", "granary", "examples");

    /** The first ```java block after {@code marker} in the guide. */
    private static String blockAfter(String guide, String marker) {
        int at = guide.indexOf(marker);
        assertTrue(at >= 0, "the guide has no '" + marker + "'");
        int start = guide.indexOf("```java\n", at) + "```java\n".length();
        int end = guide.indexOf("```\n", start);
        return guide.substring(start, end);
    }

    private static List<Method> abstractMethods(Class<?> suite) {
        return Arrays.stream(suite.getDeclaredMethods())
                .filter(m -> Modifier.isAbstract(m.getModifiers()))
                .toList();
    }

    /** {@code "protected Tier createTier(long "}: how an implementation of the method starts (up to its first type). */
    private static String signatureStart(Method method) {
        Class<?>[] parameters = method.getParameterTypes();
        return "protected " + method.getReturnType().getSimpleName() + " " + method.getName() + "("
                + (parameters.length == 0 ? ")" : parameters[0].getSimpleName() + " ");
    }

    @Test
    void theGuideShowsTheOriginExampleAndItsContractTestAsCompiled() throws IOException {
        String guide = Files.readString(GUIDE);
        for (String file : new String[] {"MapOrigin.java", "MapOriginContractTest.java", "MapOriginCacheTest.java"}) {
            assertEquals(
                    Files.readString(EXAMPLES.resolve(file)),
                    blockAfter(guide, "<!-- example: cache-core/src/test/java/dev/granary/examples/" + file + " -->"),
                    file);
        }
    }

    @Test
    void theOriginExampleImplementsEveryAbstractMethodOfTheSuite() throws IOException {
        String test = Files.readString(EXAMPLES.resolve("MapOriginContractTest.java"));
        List<Method> methods = abstractMethods(OriginContractTest.class);
        assertFalse(methods.isEmpty(), "OriginContractTest has no abstract method");
        for (Method method : methods) {
            assertTrue(test.contains(signatureStart(method)), "no '" + signatureStart(method) + "' in the example");
        }
    }

    @Test
    void theTierSnippetImplementsEveryAbstractMethodOfTheSuite() throws IOException {
        String snippet = blockAfter(Files.readString(GUIDE), "<!-- snippet: tier contract -->");
        assertTrue(snippet.contains("extends " + TierContractTest.class.getSimpleName() + " {"), snippet);
        List<Method> methods = abstractMethods(TierContractTest.class);
        assertEquals(
                2,
                methods.size(),
                "TierContractTest's abstract methods changed: update docs/extending.md and this" + " test: " + methods);
        for (Method method : methods) {
            assertTrue(snippet.contains(signatureStart(method)), "no '" + signatureStart(method) + "' in:\n" + snippet);
        }
    }
}
