// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.ObjectInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * MosaicML Streaming's MDS shards as a {@link ShardFormat} ({@link MdsDataset}), raw or zstd-compressed. A shard is
 * <pre>
 * uint32 LE          n, the number of samples
 * uint32 LE × (n+1)  offsets: sample i is the shard's bytes [offsets[i], offsets[i+1]); offsets[n] is its size
 * bytes              the shard's config (JSON), up to offsets[0]
 * bytes              the samples, back to back
 * </pre>
 * and a sample is a uint32 LE size for each variable-size column, in column order, then every column's bytes in
 * column order. {@code index.json} gives every shard's sample count and sizes, so the index is the header, read in
 * one request of {@code 4 + 4(n+1)} bytes ({@link #headerLength}); everything in it is checked against the shard's
 * size and {@code index.json} (count, offsets ascending, inside the shard, ending at its end), and every sample's
 * size table against its extent: a damaged shard is a {@link CorruptShardException} naming it, never wrong bytes.
 *
 * <p>A {@code .mds.zstd} shard is one zstd stream: it is {@linkplain EncodedShards decoded whole} (its size and the
 * hashes {@code index.json} records for the stored and the decoded bytes checked), and its samples are extents of the
 * decoded shard. Immutable and thread-safe.
 */
final class MdsFormat implements ShardFormat, EncodedShards {

    /** One shard as {@code index.json} describes it. */
    record Shard(
            String key,
            int samples,
            long rawBytes,
            long zipBytes,
            String compression,
            Map<String, String> rawHashes,
            Map<String, String> zipHashes) {}

    /**
     * The columns every shard of a dataset shares: names in shard order, encodings, fixed sizes ({@code -1}: variable).
     */
    record Columns(List<String> names, List<String> encodings, int[] sizes) {

        int variable() {
            int n = 0;
            for (int size : sizes) {
                n += size < 0 ? 1 : 0;
            }
            return n;
        }
    }

    private final String indexKey;
    private final Columns columns;
    private final Map<String, Shard> shards;
    private final List<String> order;

    MdsFormat(String indexKey, Columns columns, List<Shard> shards) {
        this.indexKey = indexKey;
        this.columns = columns;
        Map<String, Shard> byKey = new LinkedHashMap<>();
        for (Shard shard : shards) {
            byKey.put(shard.key(), shard);
        }
        this.shards = Map.copyOf(byKey);
        this.order = List.copyOf(byKey.keySet());
    }

    Columns columns() {
        return columns;
    }

    /** {@return the shards' keys, in index.json's order} */
    List<String> keys() {
        return List.copyOf(order);
    }

    Shard shard(String key) {
        Shard shard = shards.get(key);
        if (shard == null) {
            throw new IllegalStateException("shard '" + key + "' is not listed in '" + indexKey
                    + "' (expected: a shard of the dataset it describes)");
        }
        return shard;
    }

    @Override
    public String name() {
        return "mds";
    }

    @Override
    public long headerLength(ObjectInfo shard) {
        Shard s = shard(shard.key());
        return s.compression() != null ? -1 : header(s.samples());
    }

    private static long header(int samples) {
        return 4L + 4L * (samples + 1L);
    }

    @Override
    public ShardIndex scan(ObjectInfo shard, ShardReader reader) throws IOException {
        Shard s = shard(shard.key());
        String what = s.compression() == null ? "shard" : "decoded shard";
        if (reader.size() != s.rawBytes()) {
            throw new CorruptShardException(
                    shard.key(),
                    0,
                    what + " of " + reader.size() + " bytes (expected: " + s.rawBytes() + ", its raw_data bytes in '"
                            + indexKey + "': truncated, or rewritten since index.json was?)");
        }
        long header = header(s.samples());
        if (header > reader.size()) {
            throw new CorruptShardException(
                    shard.key(),
                    0,
                    what + " of " + reader.size() + " bytes (expected: at least the " + header + " bytes of the header"
                            + " of its " + s.samples() + " samples, as '" + indexKey + "' counts them)");
        }
        ByteBuffer b = reader.read(0, (int) header).order(ByteOrder.LITTLE_ENDIAN);
        int at = b.position();
        long count = Integer.toUnsignedLong(b.getInt(at));
        if (count != s.samples()) {
            throw new CorruptShardException(
                    shard.key(),
                    0,
                    "sample count " + count + " in the " + what + "'s header (expected: " + s.samples() + ", as '"
                            + indexKey + "' counts them)");
        }
        int[] offsets = new int[s.samples() + 1];
        long previous = header;
        for (int i = 0; i <= s.samples(); i++) {
            long offset = Integer.toUnsignedLong(b.getInt(at + 4 + 4 * i));
            if (offset < previous || offset > reader.size() || (i == s.samples() && offset != reader.size())) {
                throw new CorruptShardException(
                        shard.key(),
                        4 + 4L * i,
                        "offset " + i + " of the " + what + "'s offsets table: " + offset + " (expected: "
                                + (i == s.samples()
                                        ? "the shard's size, " + reader.size()
                                        : "from " + previous + (i == 0 ? ", the header's end," : ", the offset before,")
                                                + " to the shard's size, " + reader.size())
                                + ")");
            }
            if (i > 0 && offset - previous > ShardedDataset.MAX_SAMPLE_BYTES) {
                throw new CorruptShardException(
                        shard.key(),
                        4 + 4L * i,
                        "sample " + (i - 1) + " of " + (offset - previous) + " bytes (expected: at most "
                                + ShardedDataset.MAX_SAMPLE_BYTES + ")");
            }
            offsets[i] = (int) offset;
            previous = offset;
        }
        return new MdsIndex(shard.key(), offsets);
    }

    @Override
    public Map<String, ByteBuffer> decode(ShardIndex index, int sample, ByteBuffer extent) throws IOException {
        MdsIndex mds = (MdsIndex) index;
        int base = extent.position();
        int length = extent.remaining();
        int variable = columns.variable();
        long start = mds.start(sample);
        if (length < 4L * variable) {
            throw new CorruptShardException(
                    mds.shard,
                    start,
                    "sample " + sample + " of " + length + " bytes (expected: at least " + 4L * variable + " for the"
                            + " sizes of its " + variable + " variable-size columns)");
        }
        ByteBuffer le = extent.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int[] sizes = columns.sizes();
        long[] lengths = new long[sizes.length];
        long total = 4L * variable;
        for (int c = 0, v = 0; c < sizes.length; c++) {
            lengths[c] = sizes[c] >= 0 ? sizes[c] : Integer.toUnsignedLong(le.getInt(base + 4 * v++));
            total += lengths[c];
        }
        if (total != length) {
            throw new CorruptShardException(
                    mds.shard,
                    start,
                    "sample " + sample + ": its columns' sizes add up to " + total + " bytes (expected: " + length
                            + ", its extent in the offsets table)");
        }
        Map<String, ByteBuffer> fields = LinkedHashMap.newLinkedHashMap(sizes.length);
        int at = base + 4 * variable;
        for (int c = 0; c < sizes.length; c++) {
            fields.put(columns.names().get(c), extent.slice(at, (int) lengths[c]));
            at += (int) lengths[c];
        }
        return java.util.Collections.unmodifiableMap(fields);
    }

    // --------------------------------------------------------------------------------------- zstd: EncodedShards

    @Override
    public long decodedSize(ObjectInfo stored) throws CorruptShardException {
        Shard s = shard(stored.key());
        if (s.compression() == null) {
            return -1;
        }
        if (stored.size() != s.zipBytes()) {
            throw new CorruptShardException(
                    stored.key(),
                    0,
                    "compressed shard of " + stored.size() + " bytes (expected: " + s.zipBytes()
                            + ", its zip_data bytes in '" + indexKey + "': truncated, or rewritten since?)");
        }
        return s.rawBytes();
    }

    @Override
    public ByteBuffer decode(ObjectInfo stored, ByteBuffer bytes) throws IOException {
        Shard s = shard(stored.key());
        checkHashes(stored.key(), "compressed shard", bytes, s.zipHashes());
        byte[] raw = Codec.zstd(stored.key(), bytes, s.rawBytes());
        ByteBuffer out = ByteBuffer.wrap(raw);
        checkHashes(stored.key(), "decoded shard", out, s.rawHashes());
        return out;
    }

    /** The hash algorithms of {@code index.json} the JDK (or this class) computes, by MDS name. */
    static boolean checkable(String algorithm) {
        return algorithm.equals("xxh64") || digestName(algorithm) != null;
    }

    private static String digestName(String algorithm) {
        return switch (algorithm) {
            case "md5" -> "MD5";
            case "sha1" -> "SHA-1";
            case "sha224" -> "SHA-224";
            case "sha256" -> "SHA-256";
            case "sha384" -> "SHA-384";
            case "sha512" -> "SHA-512";
            case "sha3_224" -> "SHA3-224";
            case "sha3_256" -> "SHA3-256";
            case "sha3_384" -> "SHA3-384";
            case "sha3_512" -> "SHA3-512";
            default -> null;
        };
    }

    /**
     * Checks the hashes {@code index.json} records for some bytes (those this class can compute; the others,
     * {@code blake2b blake2s xxh32 xxh128 xxh3_64 xxh3_128}, are skipped: {@link MdsDataset}'s comment says so).
     */
    static void checkHashes(String shard, String what, ByteBuffer bytes, Map<String, String> hashes)
            throws CorruptShardException {
        for (Map.Entry<String, String> h : hashes.entrySet()) {
            String actual;
            if (h.getKey().equals("xxh64")) {
                actual = String.format("%016x", XxHash64.hash(bytes.duplicate()));
            } else {
                String name = digestName(h.getKey());
                if (name == null) {
                    continue;
                }
                try {
                    MessageDigest digest = MessageDigest.getInstance(name);
                    digest.update(bytes.duplicate());
                    actual = HexFormat.of().formatHex(digest.digest());
                } catch (NoSuchAlgorithmException e) {
                    continue; // not in this JDK: skipped, as the algorithms the JDK never has
                }
            }
            if (!actual.equalsIgnoreCase(h.getValue())) {
                throw new CorruptShardException(
                        shard,
                        0,
                        h.getKey() + " of the " + what + ": " + actual + " (expected: " + h.getValue()
                                + ", as index.json records it: the shard is damaged or was rewritten)");
            }
        }
    }

    /** An MDS shard's index: its offsets table (uint32s, as stored), 4 bytes a sample. */
    static final class MdsIndex implements ShardIndex {
        private final String shard;
        private final int[] offsets;

        MdsIndex(String shard, int[] offsets) {
            this.shard = shard;
            this.offsets = offsets;
        }

        @Override
        public int size() {
            return offsets.length - 1;
        }

        @Override
        public long start(int sample) {
            return Integer.toUnsignedLong(offsets[Objects.checkIndex(sample, size())]);
        }

        @Override
        public int length(int sample) {
            return (int) (Integer.toUnsignedLong(offsets[Objects.checkIndex(sample, size()) + 1])
                    - Integer.toUnsignedLong(offsets[sample]));
        }

        @Override
        public String toString() {
            return "MdsIndex[" + shard + ", " + size() + " samples]";
        }
    }

    /** zstd through zstd-jni, an optional dependency: touched only once {@link #require} said it is there. */
    static final class Codec {

        static final String ARTIFACT = "com.github.luben:zstd-jni";
        static final String CLASS = "com.github.luben.zstd.ZstdDecompressCtx";

        private Codec() {}

        /** Throws, naming the artifact, unless {@code className} (zstd-jni's) can be loaded. */
        static void require(String className, String shard) throws IOException {
            try {
                Class.forName(className, false, MdsFormat.class.getClassLoader());
            } catch (ClassNotFoundException | LinkageError e) {
                throw new IOException(
                        "shard '" + shard + "' is zstd-compressed, and decompressing it needs " + ARTIFACT
                                + " (1.5.7-28 or later) on the class path, which is missing (" + className
                                + " not found; expected: the dependency added beside cache-loader, which declares it"
                                + " optional)",
                        e);
            }
        }

        /** Decompresses a whole zstd stream into exactly {@code size} bytes, or throws naming the shard. */
        static byte[] zstd(String shard, ByteBuffer stored, long size) throws IOException {
            require(CLASS, shard);
            if (size > ShardedDataset.MAX_SAMPLE_BYTES) {
                throw new CorruptShardException(
                        shard,
                        0,
                        "decoded size " + size + " (expected: at most " + ShardedDataset.MAX_SAMPLE_BYTES + ")");
            }
            return Jni.decompress(shard, stored, (int) size);
        }
    }

    /** The calls into zstd-jni, in a class of their own so that nothing loads them before {@link Codec#require}. */
    private static final class Jni {

        static byte[] decompress(String shard, ByteBuffer stored, int size) throws CorruptShardException {
            byte[] out = new byte[size];
            int produced;
            try (com.github.luben.zstd.ZstdDecompressCtx ctx = new com.github.luben.zstd.ZstdDecompressCtx()) {
                if (stored.isDirect()) {
                    produced = ctx.decompressDirectByteBufferToByteArray(
                            out, 0, size, stored, stored.position(), stored.remaining());
                } else {
                    byte[] in = new byte[stored.remaining()];
                    stored.get(stored.position(), in);
                    produced = ctx.decompressByteArray(out, 0, size, in, 0, in.length);
                }
            } catch (RuntimeException e) {
                throw new CorruptShardException(
                        shard,
                        0,
                        "zstd stream: " + e.getMessage() + " (expected: a valid zstd stream of " + size + " bytes, as"
                                + " index.json's raw_data says: the frame is damaged, or holds more)",
                        e);
            }
            if (produced != size) {
                throw new CorruptShardException(
                        shard,
                        0,
                        "zstd stream decoded to " + produced + " bytes (expected: " + size + ", index.json's raw_data"
                                + " bytes: truncated?)");
            }
            return out;
        }
    }
}
