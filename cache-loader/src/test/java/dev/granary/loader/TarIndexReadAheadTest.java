// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** TarIndex's read-ahead through runs of small members: same result, fewer reads, large members' data never read. */
class TarIndexReadAheadTest {

    /** Scans in memory, recording every read. */
    private static List<TarIndex.Member> scan(byte[] tar, boolean readAhead, List<long[]> reads) throws IOException {
        return TarIndex.scan("t.tar", tar.length, (offset, length) -> {
            reads.add(new long[] {offset, length});
            return ByteBuffer.wrap(tar, (int) offset, length).slice();
        }, readAhead);
    }

    @Test
    void largeImagesWithSmallLabelsAreIndexedFromTheirHeadersOnly() throws IOException {
        TarWriter tar = new TarWriter();
        List<long[]> data = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            long at = tar.add(String.format("s/%03d.jpg", i), new byte[20_000 + i]);
            data.add(new long[] {at, 20_000 + i});
            tar.add(String.format("s/%03d.cls", i), new byte[] {(byte) i});
        }
        byte[] bytes = tar.finish();
        List<long[]> plain = new ArrayList<>();
        List<long[]> ahead = new ArrayList<>();
        assertEquals(scan(bytes, false, plain), scan(bytes, true, ahead));
        assertEquals(plain.size(), ahead.size(), "an image and a label do not make a run of small members");
        for (long[] r : ahead) {
            assertEquals(TarIndex.BLOCK, r[1]);
            for (long[] d : data) {
                assertTrue(r[0] + r[1] <= d[0] || r[0] >= d[0] + d[1], "read at " + r[0] + " inside image data");
            }
        }
    }

    @Test
    void smallMembersAreIndexedInAFewWindows() throws IOException {
        TarWriter tar = new TarWriter();
        for (int i = 0; i < 2_000; i++) {
            tar.add(String.format("m/%05d.raw", i), new byte[784]);
            tar.add(String.format("m/%05d.cls", i), new byte[] {(byte) (i % 10)});
        }
        byte[] bytes = tar.finish();
        List<long[]> plain = new ArrayList<>();
        List<long[]> ahead = new ArrayList<>();
        assertEquals(scan(bytes, false, plain), scan(bytes, true, ahead));
        assertEquals(4_001, plain.size(), "one read per header and the end block");
        assertTrue(ahead.size() < 100, ahead.size() + " reads");
        long read = ahead.stream().mapToLong(r -> r[1]).sum();
        assertTrue(read <= bytes.length, "read " + read + " of " + bytes.length);
    }

    @ParameterizedTest
    @ValueSource(strings = {"pax", "gnu", "ustar", "mixed", "webdataset", "zero_size", "gnutar-gnu", "gnutar-posix"})
    void readAheadFindsTheSameMembersInRealShards(String fixture) throws Exception {
        byte[] bytes = Files.readAllBytes(Path.of(getClass().getResource("/tar/" + fixture + ".tar").toURI()));
        assertEquals(scan(bytes, false, new ArrayList<>()), scan(bytes, true, new ArrayList<>()));
    }
}
