// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import picocli.CommandLine;

/**
 * The operations guide's files (docs/ops): every Kubernetes manifest parses as YAML and has what docs/operations.md
 * says it has (an init container running {@code granary prestage}, memory limits, IPC_LOCK, node-local volumes); every
 * {@code granary} command line in them parses with the real command's options; every shell script and the launcher
 * pass {@code bash -n}.
 */
@Timeout(60)
class OperationsDocsTest {

    private static final Path REPO = Path.of(System.getProperty("granary.repo", ".."));
    private static final Path OPS = REPO.resolve("docs/ops");

    private static List<Object> yaml(Path file) throws IOException {
        List<Object> docs = new ArrayList<>();
        try (Reader reader = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            for (Object doc : new Yaml(new SafeConstructor(new LoaderOptions())).loadAll(reader)) {
                docs.add(doc);
            }
        }
        return docs;
    }

    @SuppressWarnings("unchecked") // a YAML mapping is a Map<String, Object>
    private static Object at(Object node, String... path) {
        Object n = node;
        for (String p : path) {
            if (n instanceof List<?> list) {
                n = list.get(Integer.parseInt(p));
            } else {
                n = ((Map<String, Object>) n).get(p);
            }
            if (n == null) {
                throw new AssertionError("no " + String.join(".", path) + " (missing at " + p + ")");
            }
        }
        return n;
    }

    /** {@return the string at {@code path}} */
    private static String text(Object node, String... path) {
        return (String) at(node, path);
    }

    /** {@return the list of strings at {@code path}} */
    private static List<String> texts(Object node, String... path) {
        return ((List<?>) at(node, path)).stream().map(String.class::cast).toList();
    }

    @Test
    void theTrainingJobPrestagesInAnInitContainer() throws IOException {
        List<Object> docs = yaml(OPS.resolve("k8s/training-job.yaml"));
        assertEquals(1, docs.size());
        Object job = docs.getFirst();
        assertEquals("Job", at(job, "kind"));
        Object pod = at(job, "spec", "template", "spec");
        List<String> command = texts(pod, "initContainers", "0", "command");
        assertEquals(List.of("granary", "prestage"), command.subList(0, 2));
        assertParses(command.subList(1, command.size()));
        assertTrue(command.contains("--disk=/cache/granary"), command.toString());
        assertEquals("/cache", at(pod, "initContainers", "0", "volumeMounts", "0", "mountPath"));
        assertEquals("/cache", at(pod, "containers", "0", "volumeMounts", "0", "mountPath"));
        assertEquals(List.of("IPC_LOCK"), at(pod, "containers", "0", "securityContext", "capabilities", "add"));
        String limit = text(pod, "containers", "0", "resources", "limits", "memory");
        assertEquals("26Gi", limit, "heap 8 GiB + memory tier 16 GiB + 2 GiB overhead");
        String args = text(pod, "containers", "0", "args", "0");
        assertTrue(args.contains("-Xmx8g") && args.contains("--memory-tier 16g"), args);
        assertTrue(args.contains("granary clear /cache/granary"), args);
        assertParses(List.of("clear", "/cache/granary"));
        assertEquals("DirectoryOrCreate", at(pod, "volumes", "0", "hostPath", "type"));
    }

    @Test
    void theLocalVolumeIsBoundToItsNode() throws IOException {
        List<Object> docs = yaml(OPS.resolve("k8s/local-pv.yaml"));
        assertEquals(
                List.of("StorageClass", "PersistentVolume", "PersistentVolumeClaim"),
                docs.stream().map(d -> text(d, "kind")).toList());
        assertEquals("WaitForFirstConsumer", at(docs.get(0), "volumeBindingMode"));
        assertEquals("kubernetes.io/no-provisioner", at(docs.get(0), "provisioner"));
        assertEquals("/mnt/nvme0", at(docs.get(1), "spec", "local", "path"));
        assertEquals(
                "kubernetes.io/hostname",
                at(
                        docs.get(1),
                        "spec",
                        "nodeAffinity",
                        "required",
                        "nodeSelectorTerms",
                        "0",
                        "matchExpressions",
                        "0",
                        "key"));
        String storageClass = text(docs.get(0), "metadata", "name");
        String claimed = text(docs.get(2), "spec", "storageClassName");
        assertEquals(storageClass, claimed);
    }

    @Test
    void everyScriptPassesBashSyntaxCheckAndItsGranaryLinesParse() throws Exception {
        List<Path> scripts;
        try (Stream<Path> files = Files.list(OPS.resolve("slurm"))) {
            scripts = new ArrayList<>(files.sorted().toList());
        }
        scripts.add(REPO.resolve("cache-cli/src/main/scripts/granary"));
        assertEquals(4, scripts.size(), scripts.toString());
        for (Path script : scripts) {
            Process p = new ProcessBuilder("bash", "-n", script.toString())
                    .redirectErrorStream(true)
                    .start();
            String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), script + ": " + output);
            assertTrue(Files.isExecutable(script), script + " is executable");
        }
        String sbatch = Files.readString(OPS.resolve("slurm/train.sbatch"));
        assertTrue(
                sbatch.contains("\"$GRANARY\" prestage \"$ORIGIN\" --prefix train/ --disk \"$CACHE\" --capacity 500G"),
                sbatch);
        assertParses(List.of(
                "prestage",
                "s3://b/p/",
                "--prefix",
                "train/",
                "--disk",
                "/x",
                "--capacity",
                "500G",
                "--progress",
                "lines",
                "--interval",
                "60"));
        assertTrue(sbatch.contains("trap cleanup EXIT"));
        assertFalse(
                Files.readString(OPS.resolve("slurm/prolog.sh")).contains("exit 1"),
                "a failing prolog drains the node: prolog.sh always exits 0");
    }

    @Test
    void theGuideLinksEveryOpsFile() throws IOException {
        String guide = Files.readString(REPO.resolve("docs/operations.md"));
        for (String file : List.of(
                "ops/k8s/training-job.yaml",
                "ops/k8s/local-pv.yaml",
                "ops/slurm/train.sbatch",
                "ops/slurm/prolog.sh",
                "ops/slurm/epilog.sh")) {
            assertTrue(guide.contains(file), "docs/operations.md links " + file);
        }
    }

    /** Parses a granary command line (without the leading "granary") with the real command, without running it. */
    private static void assertParses(List<String> args) {
        CommandLine cl = GranaryCommand.commandLine();
        CommandLine.ParseResult parsed = cl.parseArgs(args.toArray(String[]::new));
        assertTrue(parsed.hasSubcommand(), args.toString());
        assertTrue(
                parsed.subcommand().errors().isEmpty(),
                args + ": " + parsed.subcommand().errors());
    }
}
