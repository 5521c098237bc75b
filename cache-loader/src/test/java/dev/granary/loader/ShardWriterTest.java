// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/** Shards written by ShardWriter, read back by TarIndex + ShardSamples and by GNU tar. */
class ShardWriterTest {

    @TempDir
    Path dir;

    private static Map<String, byte[]> sample(int i) {
        Map<String, byte[]> fields = new LinkedHashMap<>();
        byte[] jpg = new byte[100 + i * 37 % 700];
        Arrays.fill(jpg, (byte) i);
        fields.put("jpg", jpg);
        fields.put("cls", Integer.toString(i % 10).getBytes(StandardCharsets.US_ASCII));
        return fields;
    }

    /** Reads a shard file back the way WebDataset does. */
    private static List<ShardSamples.Entry> read(Path shard) throws IOException {
        byte[] bytes = Files.readAllBytes(shard);
        List<TarIndex.Member> members = TarIndex.scan(
                shard.toString(),
                bytes.length,
                (offset, length) -> ByteBuffer.wrap(bytes, (int) offset, length).slice());
        return ShardSamples.group(shard.toString(), members);
    }

    @Test
    void samplesGoIntoShardsBoundedByCountAndReadBackExactly() throws Exception {
        List<String> names;
        try (ShardWriter writer =
                ShardWriter.builder(dir).pattern("train-%04d.tar").maxCount(10).build()) {
            for (int i = 0; i < 25; i++) {
                writer.write(String.format("n%02d/%05d", i % 3, i), sample(i));
            }
            assertEquals(List.of("train-0000.tar", "train-0001.tar"), writer.shards(), "the third is not done yet");
            writer.close();
            names = writer.shards();
        }
        assertEquals(List.of("train-0000.tar", "train-0001.tar", "train-0002.tar"), names);
        try (var files = Files.list(dir)) {
            assertFalse(files.anyMatch(p -> p.toString().endsWith(".partial")), "no partial files left");
        }
        int i = 0;
        for (String name : names) {
            List<ShardSamples.Entry> entries = read(dir.resolve(name));
            assertEquals(name.endsWith("2.tar") ? 5 : 10, entries.size());
            byte[] shard = Files.readAllBytes(dir.resolve(name));
            for (ShardSamples.Entry e : entries) {
                assertEquals(String.format("n%02d/%05d", i % 3, i), e.key());
                assertEquals(
                        List.of("jpg", "cls"),
                        e.fields().stream().map(ShardSamples.Field::name).toList());
                Map<String, byte[]> expected = sample(i);
                for (ShardSamples.Field f : e.fields()) {
                    assertArrayEquals(
                            expected.get(f.name()),
                            Arrays.copyOfRange(shard, (int) f.offset(), (int) (f.offset() + f.size())),
                            e.key() + "." + f.name());
                }
                i++;
            }
        }
        assertEquals(25, i);
        // Beside each shard, its index: the samples a scan finds, the shard's size, no version, each extent's CRC32C.
        for (String name : names) {
            byte[] shard = Files.readAllBytes(dir.resolve(name));
            ShardIndexFile.Decoded index =
                    ShardIndexFile.decode(ByteBuffer.wrap(Files.readAllBytes(dir.resolve(name + ".gidx"))));
            assertEquals(read(dir.resolve(name)), index.samples(), name);
            assertEquals(shard.length, index.shardSize());
            assertEquals("", index.shardVersion(), "a writer of local files cannot know the stored version");
            for (int k = 0; k < index.samples().size(); k++) {
                ShardSamples.Entry e = index.samples().get(k);
                assertEquals(
                        ShardIndexFile.crc(ByteBuffer.wrap(shard, (int) e.start(), (int) (e.end() - e.start()))),
                        index.crcs()[k],
                        name + " " + e.key());
            }
        }
    }

    @Test
    void aKeyWrittenTwiceToOneShardIsRefusedAndIndexesCanBeTurnedOff() throws IOException {
        try (ShardWriter writer =
                ShardWriter.builder(dir).pattern("dup-%d.tar").indexes(false).build()) {
            writer.write("a/1", sample(1));
            writer.write("a/2", sample(2));
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> writer.write("a/1", sample(3)));
            assertTrue(e.getMessage().contains("sample key: 'a/1' already written to shard dup-0.tar"), e.getMessage());
        }
        assertTrue(Files.exists(dir.resolve("dup-0.tar")));
        assertFalse(Files.exists(dir.resolve("dup-0.tar.gidx")), "indexes(false) writes none");
        assertEquals(2, read(dir.resolve("dup-0.tar")).size());
    }

    @Test
    void aShardIsClosedBeforeItWouldPassMaxBytes() {
        Map<String, ByteArrayOutputStream> out = new HashMap<>();
        try (ShardWriter writer = ShardWriter.builder((index, name) -> {
                    ByteArrayOutputStream stream = new ByteArrayOutputStream();
                    out.put(name, stream);
                    return stream;
                })
                .maxBytes(10_000)
                .build()) {
            for (int i = 0; i < 10; i++) {
                writer.write("k/" + i, Map.of("bin", new byte[3000]));
            }
            writer.write("k/big", Map.of("bin", new byte[50_000])); // alone, over the bound
            writer.write("k/after", Map.of("bin", new byte[10]));
        }
        for (var e : out.entrySet()) {
            int size = e.getValue().size();
            assertTrue(size <= 10_000 + 1024 || size > 50_000, e.getKey() + ": " + size + " bytes");
        }
        // 3000-byte samples take 3584 bytes each (header + padded data): two fit under 10 000 with the writer's
        // margin of 1 KiB per field, so 10 samples make 5 shards; then the big one alone, then the last. Each shard's
        // index went to the sink too, as a second stream named after the shard.
        List<String> shards =
                out.keySet().stream().filter(n -> n.endsWith(".tar")).sorted().toList();
        assertEquals(7, shards.size(), out.keySet().toString());
        for (String shard : shards) {
            assertTrue(out.containsKey(shard + ".gidx"), "index of " + shard + ": " + out.keySet());
        }
        assertEquals(14, out.size(), out.keySet().toString());
    }

    @Test
    void longAndNonAsciiNamesGetPaxHeadersThatReadersFollow() throws Exception {
        String longKey = "very/" + "deep/".repeat(40) + "sample";
        String unicode = "images/übung/ñandú";
        try (ShardWriter writer = ShardWriter.builder(dir).build()) {
            writer.write(longKey, Map.of("jpg", new byte[] {1, 2, 3}));
            writer.write(unicode, Map.of("cls", new byte[] {7}));
        }
        Path shard = dir.resolve("shard-000000.tar");
        List<ShardSamples.Entry> entries = read(shard);
        assertEquals(
                List.of(longKey, unicode),
                entries.stream().map(ShardSamples.Entry::key).toList());
        // GNU tar reads the same names.
        Process tar = new ProcessBuilder("tar", "-tf", shard.toString())
                .redirectErrorStream(true)
                .start();
        String listing = new String(tar.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(tar.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, tar.exitValue(), listing);
        assertEquals(
                List.of(longKey + ".jpg", unicode + ".cls"), listing.lines().toList());
    }

    @Test
    void keysAndFieldsThatBreakTheConventionAreRefused() {
        try (ShardWriter writer = ShardWriter.builder(dir).build()) {
            assertMessage(() -> writer.write("a/b.c", Map.of("jpg", new byte[1])), "has a '.' in its last component");
            assertMessage(() -> writer.write("/abs", Map.of("jpg", new byte[1])), "sample key: '/abs'");
            assertMessage(() -> writer.write("a/../b", Map.of("jpg", new byte[1])), "sample key");
            assertMessage(() -> writer.write("k", Map.of()), "at least one field");
            assertMessage(() -> writer.write("k", Map.of(".jpg", new byte[1])), "field of 'k': '.jpg'");
            assertMessage(() -> writer.write("k", Map.of("a/b", new byte[1])), "no '/'");
        }
        assertMessage(() -> ShardWriter.builder(dir).pattern("fixed.tar"), "shard name pattern: 'fixed.tar'");
        assertMessage(() -> ShardWriter.builder(dir).pattern("s-%d.zip"), "ending in .tar");
        assertMessage(() -> ShardWriter.builder(dir).maxCount(0), "max samples per shard: 0");
        assertMessage(() -> ShardWriter.builder(dir).maxBytes(10), "max bytes per shard: 10");
        ShardWriter closed = ShardWriter.builder(dir).build();
        closed.close();
        assertThrows(IllegalStateException.class, () -> closed.write("k", Map.of("x", new byte[1])));
        List<String> none = new ArrayList<>(closed.shards());
        assertTrue(none.isEmpty(), "no sample, no shard: " + none);
    }

    private static void assertMessage(Executable call, String expected) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
        assertTrue(e.getMessage().contains(expected), "'" + e.getMessage() + "' should contain '" + expected + "'");
    }
}
