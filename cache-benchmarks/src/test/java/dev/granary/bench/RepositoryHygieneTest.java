// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every source file, pom and script of the repository names its licence with an SPDX identifier near its top. Lives
 * here, in the module that is not published, because it looks at the whole repository ({@code ..}), not at a module.
 */
class RepositoryHygieneTest {

    private static final String SPDX = "SPDX-License-Identifier: Apache-2.0";
    /** The identifier must be in the header: after a shebang or an XML declaration at most, not somewhere below. */
    private static final int HEADER_LINES = 5;

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    /** Java sources, poms, shell and Python scripts, and the CI scripts in .ci/ (which have no extension). */
    private static boolean checked(Path file) {
        String name = file.getFileName().toString();
        return name.endsWith(".java")
                || name.equals("pom.xml")
                || name.endsWith(".sh")
                || name.endsWith(".py")
                || file.getParent().equals(ROOT.resolve(".ci"));
    }

    /** Build output, version control and IDE folders are not walked; .ci is the one hidden folder of ours. */
    private static List<Path> files() throws IOException {
        List<Path> files = new ArrayList<>();
        Files.walkFileTree(ROOT, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attributes) {
                String name = dir.getFileName().toString();
                boolean skipped =
                        !dir.equals(ROOT) && (name.equals("target") || (name.startsWith(".") && !name.equals(".ci")));
                return skipped ? FileVisitResult.SKIP_SUBTREE : FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) {
                if (attributes.isRegularFile() && checked(file)) {
                    files.add(file);
                }
                return FileVisitResult.CONTINUE;
            }
        });
        Collections.sort(files);
        return files;
    }

    private static boolean hasHeader(Path file) {
        try (Stream<String> lines = Files.lines(file, StandardCharsets.UTF_8)) {
            return lines.limit(HEADER_LINES).anyMatch(line -> line.contains(SPDX));
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + file, e);
        }
    }

    @Test
    void everySourcePomAndScriptHasTheSpdxIdentifier() throws IOException {
        assertTrue(
                Files.readString(ROOT.resolve("pom.xml")).contains("<artifactId>granary-parent</artifactId>"),
                "not the repository root: " + ROOT);
        List<Path> files = files();
        assertTrue(
                files.contains(ROOT.resolve("cache-core/src/main/java/dev/granary/TieredCache.java")),
                "walked " + files.size() + " files under " + ROOT + " without finding TieredCache.java");
        assertTrue(files.contains(ROOT.resolve(".ci/run")), ".ci/run was not walked");
        assertTrue(
                files.stream()
                                .filter(f -> f.getFileName().toString().equals("pom.xml"))
                                .count()
                        >= 10,
                "fewer poms than modules under " + ROOT);

        List<String> missing = files.stream()
                .filter(file -> !hasHeader(file))
                .map(file -> ROOT.relativize(file).toString())
                .toList();
        assertEquals(
                List.of(),
                missing,
                "files without '" + SPDX + "' in their first " + HEADER_LINES
                        + " lines (add it as the first comment line)");
    }
}
