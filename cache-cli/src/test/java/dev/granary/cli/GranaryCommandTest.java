// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.loader.Batch;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Epoch;
import dev.granary.loader.WebDataset;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.MemoryTier;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.GZIPOutputStream;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code granary} command, run in-process (picocli's {@code execute}) against real directories: outputs, exit
 * codes and one-line errors, including bad input (a directory that is not Granary's, a directory in use, a size that
 * does not parse, objects a tier cannot hold).
 */
@Timeout(120)
class GranaryCommandTest {

    private static final int OBJECTS = 30;

    @TempDir
    Path root;

    private Path data;
    private final TreeMap<String, byte[]> objects = new TreeMap<>();

    @BeforeEach
    void setUp() throws IOException {
        data = Files.createDirectories(root.resolve("data/train"));
        SplittableRandom random = new SplittableRandom(9);
        for (int i = 0; i < OBJECTS; i++) {
            byte[] bytes = new byte[2_000 + random.nextInt(40_000)];
            random.nextBytes(bytes);
            String key = String.format("train/%03d.jpg", i);
            Files.write(root.resolve("data").resolve(key), bytes);
            objects.put(key, bytes);
        }
        data = root.resolve("data");
    }

    private String origin() {
        return data.toUri().toString();
    }

    private static void assertOneLineError(Cli.Result r, int exit, String contains) {
        assertEquals(exit, r.exit(), r.toString());
        String[] lines = r.err().strip().split("\n");
        assertEquals(1, lines.length, "one line: " + r.err());
        assertTrue(lines[0].startsWith("granary "), r.err());
        assertTrue(lines[0].contains(contains), r.err());
    }

    @Test
    void everyCommandHasHelp() {
        for (String command : List.of("prestage", "pack", "index", "inspect", "verify", "clear", "bench", "plan")) {
            Cli.Result r = Cli.run(command, "--help");
            assertEquals(0, r.exit(), r.toString());
            assertTrue(r.out().startsWith("Usage: granary " + command), r.out());
            assertTrue(r.out().contains("Exit codes:"), r.out());
        }
        Cli.Result top = Cli.run("--help");
        assertEquals(0, top.exit());
        assertTrue(top.out().contains("prestage") && top.out().contains("130"), top.out());
        assertEquals(2, Cli.run("no-such-command").exit());
    }

    @Test
    void prestageStagesResumesAndInspectVerifyClearTheDirectory() throws Exception {
        Path disk = root.resolve("nvme");
        long total = objects.values().stream().mapToLong(b -> b.length).sum();
        Cli.Result first = Cli.run(
                "prestage",
                origin(),
                "--prefix",
                "train/",
                "--disk",
                disk.toString(),
                "--capacity",
                "64M",
                "--page-size",
                "64K",
                "--interval",
                "0");
        assertEquals(0, first.exit(), first.toString());
        assertTrue(first.out().startsWith("prestaged " + OBJECTS + " of " + OBJECTS + " objects"), first.out());
        assertTrue(first.out().contains("already cached 0 objects, failed 0"), first.out());
        assertTrue(
                first.err().contains("prestage: " + OBJECTS + "/" + OBJECTS + " objects"),
                "plain progress lines when not on a terminal: " + first.err());

        Cli.Result again = Cli.run(
                "prestage",
                origin(),
                "--prefix",
                "train/",
                "--disk",
                disk.toString(),
                "--capacity",
                "64M",
                "--page-size",
                "64K",
                "--progress",
                "none");
        assertEquals(0, again.exit(), again.toString());
        assertTrue(
                again.out().contains("fetched 0 B") && again.out().contains("already cached " + OBJECTS), again.out());
        assertEquals("", again.err());

        Cli.Result inspect = Cli.run("inspect", disk.toString());
        assertEquals(0, inspect.exit(), inspect.toString());
        assertTrue(inspect.out().contains("objects    " + OBJECTS + "\n"), inspect.out());
        assertTrue(inspect.out().contains("versions   " + OBJECTS + "\n"), inspect.out());
        long pages = objects.values().stream()
                .mapToLong(b -> (b.length + (64 << 10) - 1) / (64 << 10))
                .sum();
        assertTrue(inspect.out().contains("pages      " + pages + " ("), inspect.out());
        assertTrue(inspect.out().contains("origins    " + origin()), inspect.out());
        assertTrue(inspect.out().contains("free room"), inspect.out());

        Cli.Result verify = Cli.run("verify", disk.toString());
        assertEquals(0, verify.exit(), verify.toString());
        assertEquals(
                "verified " + pages + " pages (" + Sizes.format(total) + "): every page matches its checksum\n",
                verify.out());

        // Damage one object's bytes inside its segment file: verify names it and exits 1.
        String victim = "train/017.jpg";
        damage(disk, objects.get(victim));
        Cli.Result damaged = Cli.run("verify", disk.toString());
        assertEquals(1, damaged.exit(), damaged.toString());
        assertTrue(damaged.out().contains("damaged: " + origin() + victim + " version "), damaged.out());
        assertTrue(
                damaged.out()
                        .contains("1 of " + pages + " pages not vouched for in " + disk + ": 1 fail their"
                                + " checksum, 0 dropped after damage"),
                damaged.out());

        // A directory a tier holds is refused.
        try (DiskTier held =
                DiskTier.builder().directory(disk).capacity(64L << 20).build()) {
            assertOneLineError(Cli.run("clear", disk.toString()), 3, "is in use by another DiskTier");
        }
        Cli.Result clear = Cli.run("clear", disk.toString());
        assertEquals(0, clear.exit(), clear.toString());
        assertTrue(clear.out().startsWith("removed " + disk), clear.out());
        assertFalse(Files.exists(disk));
    }

    @Test
    void prestageSharedStagesIntoADirectoryJobsAreUsing() throws Exception {
        Path disk = root.resolve("node-cache");
        try (DiskTier job = DiskTier.builder()
                .directory(disk)
                .capacity(64L << 20)
                .shared(true)
                .build()) {
            // unshared, the command is refused while a job holds the directory
            assertOneLineError(
                    Cli.run(
                            "prestage",
                            origin(),
                            "--disk",
                            disk.toString(),
                            "--capacity",
                            "64M",
                            "--page-size",
                            "64K",
                            "--progress",
                            "none"),
                    3,
                    "in use by another DiskTier in this process (1" + " shared)");
            Cli.Result staged = Cli.run(
                    "prestage",
                    origin(),
                    "--disk",
                    disk.toString(),
                    "--capacity",
                    "64M",
                    "--page-size",
                    "64K",
                    "--progress",
                    "none",
                    "--shared");
            assertEquals(0, staged.exit(), staged.toString());
            assertTrue(staged.out().startsWith("prestaged " + OBJECTS + " of " + OBJECTS + " objects"), staged.out());
            // the running job sees the staged pages at once
            long pages = objects.values().stream()
                    .mapToLong(b -> (b.length + (64 << 10) - 1) / (64 << 10))
                    .sum();
            try (TieredCache cache = TieredCache.builder(PosixOrigin.of(data))
                    .tier(job)
                    .pageSize(64 << 10)
                    .build()) {
                for (var e : objects.entrySet()) {
                    try (Lease lease = cache.read(e.getKey())) {
                        assertEquals(ByteBuffer.wrap(e.getValue()), lease.bytes(), e.getKey());
                    }
                }
                assertEquals(0, cache.stats().origin().reads(), "all " + pages + " pages came from the prestage");
            }
        }
    }

    /** Flips a byte in the middle of the first place {@code bytes}' first 64 bytes occur in a segment file. */
    private static void damage(Path disk, byte[] bytes) throws IOException {
        byte[] needle = Arrays.copyOf(bytes, 64);
        try (Stream<Path> files = Files.list(disk.resolve("segments"))) {
            for (Path file : files.toList()) {
                byte[] all = Files.readAllBytes(file);
                for (int i = 0; i + needle.length <= all.length; i++) {
                    if (all[i] == needle[0] && Arrays.equals(all, i, i + 64, needle, 0, 64)) {
                        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                            ch.write(ByteBuffer.wrap(new byte[] {(byte) ~all[i + 10]}), i + 10);
                        }
                        return;
                    }
                }
            }
        }
        throw new AssertionError("object bytes not found in any segment");
    }

    @Test
    void badInputGetsOneLineAndAnExitCode() throws Exception {
        Path foreign = Files.createDirectories(root.resolve("home"));
        Path thesis = Files.writeString(foreign.resolve("thesis.tex"), "mine");
        assertOneLineError(
                Cli.run("prestage", origin(), "--disk", foreign.toString(), "--capacity", "1G"),
                3,
                "holds other files");
        assertOneLineError(Cli.run("clear", foreign.toString()), 3, "is not a Granary disk tier");
        assertOneLineError(Cli.run("inspect", foreign.toString()), 3, "is not a Granary disk tier");
        assertOneLineError(Cli.run("verify", root.resolve("nope").toString()), 3, "does not exist");
        assertEquals("mine", Files.readString(thesis), "nothing of the user's is touched");

        Cli.Result size =
                Cli.run("prestage", origin(), "--disk", root.resolve("d").toString(), "--capacity", "1Q");
        assertEquals(2, size.exit(), size.toString());
        assertTrue(size.err().contains("size: '1Q' (expected: bytes, or a number with K, M, G or T"), size.err());
        assertOneLineError(
                Cli.run("prestage", "ftp://x/y", "--disk", root.resolve("d").toString(), "--capacity", "1G"),
                3,
                "expected: file:///dir, s3://bucket/prefix or gs://bucket/prefix");
        assertOneLineError(
                Cli.run(
                        "prestage",
                        root.resolve("missing").toUri().toString(),
                        "--disk",
                        root.resolve("d").toString(),
                        "--capacity",
                        "1G"),
                3,
                "expected: an existing directory");

        // A directory a newer Granary wrote: inspect refuses to read it, clear removes it (starting over).
        Path newer = Files.createDirectories(root.resolve("newer/segments"));
        Files.writeString(newer.getParent().resolve("FORMAT"), "granary-disk-tier\nformat 99\n");
        assertOneLineError(Cli.run("inspect", newer.getParent().toString()), 3, "holds format 99");
        assertEquals(0, Cli.run("clear", newer.getParent().toString()).exit());
        assertFalse(Files.exists(newer.getParent()));

        Path keys = Files.writeString(root.resolve("keys.txt"), "train/000.jpg\n");
        assertOneLineError(
                Cli.run(
                        "prestage",
                        origin(),
                        "--keys-from",
                        keys.toString(),
                        "--prefix",
                        "train/",
                        "--disk",
                        root.resolve("d").toString(),
                        "--capacity",
                        "1G"),
                3,
                "(expected: one of them");

        Cli.Result verbose = Cli.run("clear", foreign.toString(), "--verbose");
        assertEquals(3, verbose.exit());
        assertTrue(verbose.err().contains("\tat dev.granary."), "--verbose prints the stack trace: " + verbose.err());
    }

    @Test
    void objectsATierCannotHoldAreReportedAndExitOne() throws Exception {
        // 64K of capacity makes 16K segments: objects of 30 000 bytes, one page each, do not fit one and are refused;
        // the small one fits.
        Path big = Files.createDirectories(root.resolve("big"));
        for (int i = 0; i < 25; i++) {
            Files.write(big.resolve(String.format("%02d.bin", i)), new byte[30_000]);
        }
        Files.write(big.resolve("small.bin"), new byte[100]);
        Cli.Result r = Cli.run(
                "prestage",
                big.toUri().toString(),
                "--disk",
                root.resolve("small").toString(),
                "--capacity",
                "64K",
                "--progress",
                "none");
        assertEquals(1, r.exit(), r.toString());
        assertTrue(r.out().startsWith("prestaged 1 of 26 objects (100 B)"), r.out());
        assertTrue(r.out().contains("failed 25\n"), r.out());
        assertTrue(
                r.out()
                        .contains(": page 0: IOException: no staging tier kept page 0 ('disk' refused it: a page"
                                + " larger than it holds"),
                r.out());
        assertFalse(r.out().contains("not staged"), "the tier is not full: its pages are too large " + r.out());
        assertTrue(r.out().contains("... and 5 more"), r.out());
    }

    @Test
    void packSmallFilesThenIndexAndReadTheShards() throws Exception {
        Path src = Files.createDirectories(root.resolve("small/img"));
        Map<String, Map<String, byte[]>> samples = new TreeMap<>();
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < 25; i++) {
            String key = String.format("img/n%04d", i);
            Map<String, byte[]> fields = new LinkedHashMap<>();
            byte[] jpg = new byte[100 + random.nextInt(3000)];
            random.nextBytes(jpg);
            fields.put("cls", Integer.toString(i % 7).getBytes(StandardCharsets.US_ASCII));
            fields.put("jpg", jpg);
            for (Map.Entry<String, byte[]> f : fields.entrySet()) {
                Files.write(root.resolve("small").resolve(key + "." + f.getKey()), f.getValue());
            }
            samples.put(key, fields);
        }
        Files.writeString(src.resolve("README"), "no extension: skipped");
        Files.writeString(src.resolve(".hidden.txt"), "a dot file: skipped");
        Path shards = root.resolve("shards");
        Cli.Result pack = Cli.run("pack", root.resolve("small").toString(), shards.toString(), "--max-count", "10");
        assertEquals(0, pack.exit(), pack.toString());
        assertTrue(pack.out().startsWith("packed 25 samples"), pack.out());
        assertTrue(pack.out().contains("into 3 shards") && pack.out().contains("skipped 2 files"), pack.out());
        for (int s = 0; s < 3; s++) {
            assertTrue(Files.exists(shards.resolve(String.format("shard-%06d.tar.gidx", s))));
        }

        // index: rewrite one shard's index through the command.
        Files.delete(shards.resolve("shard-000001.tar.gidx"));
        Cli.Result index = Cli.run("index", shards.toUri().toString(), "shard-000001.tar");
        assertEquals(0, index.exit(), index.toString());
        assertTrue(index.out().startsWith("indexed shard-000001.tar -> shard-000001.tar.gidx"), index.out());
        assertTrue(Files.exists(shards.resolve("shard-000001.tar.gidx")));
        assertOneLineError(Cli.run("index", shards.toUri().toString(), "nope.tar"), 4, "nope.tar");

        Map<String, Map<String, byte[]>> read = readShards(shards, 3);
        assertEquals(samples.keySet(), read.keySet());
        for (String key : samples.keySet()) {
            assertArrayEquals(samples.get(key).get("jpg"), read.get(key).get("jpg"), key);
            assertArrayEquals(samples.get(key).get("cls"), read.get(key).get("cls"), key);
        }
    }

    /** Reads every sample of the shards through a loader: key to fields. */
    private static Map<String, Map<String, byte[]>> readShards(Path shards, int count) throws IOException {
        Map<String, Map<String, byte[]>> read = new HashMap<>();
        List<String> keys = new ArrayList<>();
        for (int s = 0; s < count; s++) {
            keys.add(String.format("shard-%06d.tar", s));
        }
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(shards))
                .tier(MemoryTier.builder().capacity(16L << 20).build())
                .build()) {
            WebDataset dataset = WebDataset.of(cache, keys);
            try (DataLoader<Map.Entry<String, Map<String, byte[]>>> loader = DataLoader.builder(dataset, s -> {
                                Map<String, byte[]> fields = new HashMap<>();
                                for (Map.Entry<String, ByteBuffer> f :
                                        s.fields().entrySet()) {
                                    byte[] b = new byte[f.getValue().remaining()];
                                    f.getValue().duplicate().get(b);
                                    fields.put(f.getKey(), b);
                                }
                                return Map.entry(s.key(), fields);
                            })
                            .batchSize(4)
                            .build();
                    Epoch<Map.Entry<String, Map<String, byte[]>>> epoch = loader.epoch(0)) {
                for (Batch<Map.Entry<String, Map<String, byte[]>>> batch : epoch) {
                    for (Map.Entry<String, Map<String, byte[]>> e : batch.items()) {
                        read.put(e.getKey(), e.getValue());
                    }
                }
            }
        }
        return read;
    }

    @Test
    void packIdxImagesAsPngWithTheirLabels() throws Exception {
        Path src = Files.createDirectories(root.resolve("mnist"));
        int n = 13;
        int rows = 7;
        int cols = 5;
        byte[][] images = new byte[n][rows * cols];
        byte[] labels = new byte[n];
        SplittableRandom random = new SplittableRandom(4);
        for (int i = 0; i < n; i++) {
            random.nextBytes(images[i]);
            labels[i] = (byte) random.nextInt(10);
        }
        try (DataOutputStream out = new DataOutputStream(
                new GZIPOutputStream(Files.newOutputStream(src.resolve("train-images-idx3-ubyte.gz"))))) {
            out.writeInt(0x803);
            out.writeInt(n);
            out.writeInt(rows);
            out.writeInt(cols);
            for (byte[] image : images) {
                out.write(image);
            }
        }
        try (OutputStream raw = Files.newOutputStream(src.resolve("train-labels-idx1-ubyte"));
                DataOutputStream out = new DataOutputStream(raw)) {
            out.writeInt(0x801);
            out.writeInt(n);
            out.write(labels);
        }
        Path shards = root.resolve("mnist-shards");
        Cli.Result pack = Cli.run("pack", src.toString(), shards.toString(), "--max-count", "5");
        assertEquals(0, pack.exit(), pack.toString());
        assertTrue(pack.out().startsWith("packed 13 samples") && pack.out().contains("into 3 shards"), pack.out());
        Map<String, Map<String, byte[]>> read = readShards(shards, 3);
        assertEquals(n, read.size());
        for (int i = 0; i < n; i++) {
            Map<String, byte[]> fields = read.get(String.format("train/%06d", i));
            assertEquals(Integer.toString(labels[i]), new String(fields.get("cls"), StandardCharsets.US_ASCII));
            BufferedImage png = ImageIO.read(new ByteArrayInputStream(fields.get("png")));
            assertEquals(cols, png.getWidth());
            assertEquals(rows, png.getHeight());
            byte[] pixels = new byte[rows * cols];
            png.getRaster().getDataElements(0, 0, cols, rows, pixels);
            assertArrayEquals(images[i], pixels, "image " + i);
        }

        Path broken = Files.createDirectories(root.resolve("broken"));
        Files.write(broken.resolve("x-images-idx3-ubyte"), new byte[] {0, 0, 8, 1, 0, 0, 0, 0});
        Files.write(broken.resolve("x-labels-idx1-ubyte"), new byte[] {0, 0, 8, 1, 0, 0, 0, 0});
        assertOneLineError(
                Cli.run("pack", broken.toString(), root.resolve("out").toString()), 3, "magic 0x801 (expected: 0x803");
    }

    @Test
    void planCountsAStagedDiskTier() throws Exception {
        Cli.Result cold = Cli.run(
                "plan", origin(), "--prefix", "train/", "--memory", "64M", "--epochs", "2", "--batch-size", "8");
        assertEquals(0, cold.exit(), cold.toString());
        assertTrue(cold.out().startsWith("plan: " + OBJECTS + " samples"), cold.out());
        String[] lines = cold.out().split("\n");
        assertTrue(
                lines[1].matches("indexing \\(made now, once per job\\): 1 listing/metadata requests, 0 GETs .*"),
                "the listing is counted: " + lines[1]);
        assertTrue(
                lines[3].matches("\\s+0\\s+" + OBJECTS + "\\s+" + OBJECTS + "\\s+0\\s+.*\\$0\\.000012"),
                "epoch 0 cold, $0.0004 per 1 000 GETs: " + lines[3]);
        assertTrue(lines[4].matches("\\s+1\\s+" + OBJECTS + "\\s+0\\s+0\\s+.*100\\.0%.*"), "epoch 1 warm: " + lines[4]);
        assertTrue(cold.out().contains("total: " + (OBJECTS + 1) + " origin requests, "), cold.out());
        assertTrue(cold.out().contains("(GETs at $0.0004 and LISTs at $0.005 per 1 000)"), cold.out());

        Path disk = root.resolve("nvme");
        assertEquals(
                0,
                Cli.run(
                                "prestage",
                                origin(),
                                "--prefix",
                                "train/",
                                "--disk",
                                disk.toString(),
                                "--capacity",
                                "64M",
                                "--progress",
                                "none")
                        .exit());
        Cli.Result staged = Cli.run(
                "plan",
                origin(),
                "--prefix",
                "train/",
                "--memory",
                "64M",
                "--disk",
                disk.toString(),
                "--capacity",
                "64M",
                "--epochs",
                "1");
        assertEquals(0, staged.exit(), staged.toString());
        String epoch0 = staged.out().split("\n")[3];
        assertTrue(
                epoch0.matches("\\s+0\\s+" + OBJECTS + "\\s+0\\s+0\\s+.*100\\.0%.*"),
                "a staged disk tier: no GET in epoch 0: " + staged.out());
        assertOneLineError(Cli.run("plan", origin(), "--disk", disk.toString()), 3, "--disk and --capacity");
    }

    @Test
    void benchWritesCsvAndPngForBothSweeps() throws Exception {
        Path out = root.resolve("bench");
        Cli.Result r = Cli.run(
                "bench",
                "--out",
                out.toString(),
                "--samples",
                "48",
                "--sample-size",
                "4K",
                "--workers",
                "1,2",
                "--latencies",
                "0,3",
                "--step-ms",
                "1",
                "--batch-size",
                "8",
                "--repeat",
                "2");
        assertEquals(0, r.exit(), r.toString());
        List<String> workers = Files.readAllLines(out.resolve("throughput-vs-workers.csv"));
        assertEquals(
                "workers,samples_per_second,mib_per_second,samples_per_second_min,samples_per_second_max,repeats",
                workers.get(0));
        assertEquals(3, workers.size(), workers.toString());
        assertTrue(workers.get(1).startsWith("1.00000,") && workers.get(2).startsWith("2.00000,"), workers.toString());
        for (String row : workers.subList(1, 3)) {
            double[] v = Arrays.stream(row.split(","))
                    .mapToDouble(Double::parseDouble)
                    .toArray();
            assertTrue(v[3] <= v[1] && v[1] <= v[4] && v[5] == 2, "min <= median <= max, 2 runs: " + row);
        }
        List<String> latency = Files.readAllLines(out.resolve("datawait-vs-latency.csv"));
        assertEquals(
                "latency_ms,epoch_seconds,data_wait_seconds,gpu_utilisation,gpu_utilisation_min,"
                        + "gpu_utilisation_max,repeats",
                latency.get(0));
        assertEquals(3, latency.size(), latency.toString());
        for (String row : latency.subList(1, 3)) {
            double[] v = Arrays.stream(row.split(","))
                    .mapToDouble(Double::parseDouble)
                    .toArray();
            assertTrue(v[3] >= 0 && v[3] <= 1 && v[4] <= v[3] && v[3] <= v[5], row);
        }
        assertTrue(r.out().contains("over 2 runs"), r.out());
        for (String png : List.of("throughput-vs-workers.png", "datawait-vs-latency.png")) {
            byte[] bytes = Files.readAllBytes(out.resolve(png));
            assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G'}, Arrays.copyOf(bytes, 4), png);
            assertTrue(ImageIO.read(out.resolve(png).toFile()).getWidth() == 800, png);
        }
        assertTrue(r.out().contains("GPU utilisation"), r.out());
        assertOneLineError(Cli.run("bench", "--workers", "0"), 3, "workers: 0 (expected: >= 1)");
    }
}
