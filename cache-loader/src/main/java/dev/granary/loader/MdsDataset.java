// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.Lease;
import dev.granary.NoSuchObjectException;
import dev.granary.TieredCache;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * The samples of a MosaicML Streaming dataset in MDS shards — {@code index.json} and its shards
 * {@code shard.00000.mds}, or {@code shard.00000.mds.zstd} — read through a {@link TieredCache}: the
 * {@link ShardedDataset} of the MDS format, so every loader feature (shard-block orders, shards read whole in parts,
 * stable partitions, resume, the exact dry run, pre-staging) applies.
 *
 * {@snippet :
 * ShardedDataset mds = MdsDataset.of(cache, "mds/train"); // reads mds/train/index.json, then each shard's header
 * Map<String, String> encodings = MdsDataset.columns(mds);   // {"caption": "str", "image": "jpeg", "label": "int"}
 * DataLoader<Example> loader = DataLoader.builder(mds, sample -> {
 *     String caption = StandardCharsets.UTF_8.decode(sample.fields().get("caption")).toString();
 *     long label = sample.fields().get("label").order(ByteOrder.LITTLE_ENDIAN).getLong(0);
 *     return decode(sample.fields().get("image"), caption, label);
 * }).shuffle(Shuffle.shardBlocks(42L, 8)).build();
 * }
 *
 * <ul>
 *   <li><b>Indexing</b> costs one small read per shard: {@code index.json} gives each shard's sample count, so its
 *       header (the count and the offsets table, {@code 4 + 4(n+1)} bytes) is read in one request. Everything in it is
 *       checked against the shard's size and {@code index.json}: a damaged shard is a {@link CorruptShardException}
 *       naming it, never wrong bytes. A sample's column size table is checked against its extent on every read.</li>
 *   <li><b>Fields</b>: one per column, in the shards' column order, each a zero-copy view of exactly the bytes MDS
 *       stored for it (big-endian buffers by Java's default: set the order). {@link #columns} gives each column's
 *       encoding, so: {@code bytes} raw; {@code str}, {@code str_int}, {@code str_float}, {@code str_decimal} UTF-8
 *       text; {@code int} a little-endian int64; {@code int8 … int64}, {@code uint8 … uint64},
 *       {@code float16 … float64} little-endian values of their own width; {@code ndarray[:dtype[:shape]]} MDS's
 *       array encoding ({@link #ndarray} parses it into dtype, shape and the raw little-endian values); {@code jpeg},
 *       {@code png}, {@code pil} the image file's bytes as MDS stored them; {@code json} the JSON text;
 *       {@code pkl} the pickle's bytes — Java cannot unpickle: decode it yourself or write the column in another
 *       encoding.</li>
 *   <li><b>zstd</b> ({@code compression: "zstd"} or {@code "zstd:<level>"}): a compressed shard is one stream, so it
 *       is read whole through the cache (the tiers hold the compressed bytes) and decompressed once into a bounded
 *       heap budget of decoded shards ({@link #DEFAULT_DECODED_BYTES}, or {@link #of(TieredCache, String, long)}),
 *       whose samples are slices; {@link ShardedDataset#decoding()} counts what it costs
 *       (docs/decisions/0024-compressed-shards.md). It needs {@code com.github.luben:zstd-jni} on the class path
 *       (an optional dependency of cache-loader: add it); without it a zstd shard is an error that names it. A
 *       corrupt frame is a {@link CorruptShardException}. Other compressions ({@code gz bz2 br snappy}) are refused
 *       when {@code index.json} is read.</li>
 *   <li><b>Hashes</b> recorded in {@code index.json} ({@code md5 sha1 sha224 sha256 sha384 sha512 sha3_*} through the
 *       JDK's {@code MessageDigest}, and {@code xxh64}) are checked whenever a shard is read whole: every time a zstd
 *       shard is decoded (its stored and its decoded bytes), and for raw shards, which are read sample by sample or in
 *       parts, by {@link #verify}. {@code blake2b blake2s xxh32 xxh128 xxh3_64 xxh3_128} are not computed (the JDK has
 *       none of them): {@link #verify} names those it skipped.</li>
 * </ul>
 *
 * <p>Stateless: the datasets it makes are immutable and thread-safe.
 */
public final class MdsDataset {

    /** The heap budget of decoded zstd shards {@link #of(TieredCache, String)} holds: 256 MiB. */
    public static final long DEFAULT_DECODED_BYTES = ShardedDataset.DEFAULT_DECODED_BYTES;

    static final String INDEX = "index.json";

    private static final Set<String> FIXED_8 = Set.of("int", "int64", "uint64", "float64");
    private static final Set<String> VARIABLE = Set.of(
            "bytes",
            "str",
            "str_int",
            "str_float",
            "str_decimal",
            "json",
            "pkl",
            "pil",
            "jpeg",
            "png",
            "jpeg_array",
            "jpegarray");

    private MdsDataset() {}

    /**
     * Reads an MDS dataset: {@code <root>/index.json}, then each shard's header (see the class comment).
     *
     * @param cache the cache to read through
     * @param root  the dataset's directory ({@code "mds/train"} for {@code mds/train/index.json}); {@code ""} for the
     *              origin's root
     * @return the dataset: the shards in {@code index.json}'s order, each sample's fields its columns
     * @throws IllegalArgumentException if an argument is null or invalid, there is no {@code index.json} under
     *                                  {@code root}, or the shards hold no sample
     * @throws CorruptShardException    if {@code index.json} is not a valid MDS index (names it, the entry and what was
     *                                  expected: unknown encodings and compressions included), or a shard's header
     *                                  does not match it
     * @throws NoSuchObjectException    if a shard it lists does not exist
     * @throws IOException              if the origin fails, or a zstd shard meets no zstd-jni on the class path
     */
    public static ShardedDataset of(TieredCache cache, String root) throws IOException {
        return of(cache, root, DEFAULT_DECODED_BYTES);
    }

    /**
     * Reads an MDS dataset as {@link #of(TieredCache, String)} does, holding up to {@code decodedBytes} of decoded
     * zstd shards on the heap (soft by one shard: the shard last decoded is always held).
     *
     * @param cache        the cache to read through
     * @param root         the dataset's directory
     * @param decodedBytes the heap budget of decoded zstd shards, {@code >= 0}; size it to hold the shards an epoch
     *                     reads at once (a shard-block order's block, times the loader's workers' spread), or an epoch
     *                     decodes a shard more than once ({@link ShardedDataset#decoding()} counts it)
     * @return the dataset
     * @throws IllegalArgumentException as {@link #of(TieredCache, String)}, or if {@code decodedBytes < 0}
     * @throws CorruptShardException    as {@link #of(TieredCache, String)}
     * @throws NoSuchObjectException    if a shard does not exist
     * @throws IOException              as {@link #of(TieredCache, String)}
     */
    public static ShardedDataset of(TieredCache cache, String root, long decodedBytes) throws IOException {
        return of(cache, root, decodedBytes, progress -> {});
    }

    /**
     * Reads an MDS dataset as {@link #of(TieredCache, String, long)} does, reporting each shard as it is indexed.
     *
     * @param cache        the cache to read through
     * @param root         the dataset's directory
     * @param decodedBytes the heap budget of decoded zstd shards, {@code >= 0}
     * @param listener     called once per shard indexed, never concurrently
     * @return the dataset
     * @throws IllegalArgumentException as {@link #of(TieredCache, String, long)}, or if {@code listener} is null
     * @throws CorruptShardException    as {@link #of(TieredCache, String)}
     * @throws NoSuchObjectException    if a shard does not exist
     * @throws IOException              as {@link #of(TieredCache, String)}
     */
    public static ShardedDataset of(
            TieredCache cache, String root, long decodedBytes, Consumer<IndexingProgress> listener) throws IOException {
        Dataset.checkCache(cache);
        if (root == null || root.startsWith("/") || root.endsWith("//")) {
            throw new IllegalArgumentException("root: " + (root == null ? "null" : "'" + root + "'")
                    + " (expected: the dataset's directory relative to the origin, such as 'mds/train', or '')");
        }
        if (decodedBytes < 0) {
            throw new IllegalArgumentException(
                    "decoded shard budget: " + decodedBytes + " bytes (expected: >= 0; 0 keeps only the last shard)");
        }
        String dir = root.isEmpty() || root.endsWith("/") ? root : root + "/";
        String indexKey = dir + INDEX;
        MdsFormat format = parse(indexKey, dir, readIndex(cache, indexKey, root));
        List<String> keys = new ArrayList<>();
        boolean zstd = false;
        for (String key : format.keys()) {
            keys.add(key);
            zstd |= format.shard(key).compression() != null;
        }
        if (zstd) {
            MdsFormat.Codec.require(MdsFormat.Codec.CLASS, keys.getFirst());
        }
        return new ShardedDataset(ShardedDataset.index(cache, keys, format, listener, decodedBytes));
    }

    /**
     * {@return the columns of an MDS dataset's samples}: each field's name, in the shards' order, with its MDS
     * encoding ({@code "str"}, {@code "int"}, {@code "ndarray:uint16"}, …), to decode its bytes by
     *
     * @param dataset a dataset {@link #of} made
     * @throws IllegalArgumentException if it is not an MDS dataset
     */
    public static Map<String, String> columns(ShardedDataset dataset) {
        MdsFormat format = mds(dataset);
        Map<String, String> columns = new LinkedHashMap<>();
        for (int c = 0; c < format.columns().names().size(); c++) {
            columns.put(
                    format.columns().names().get(c),
                    format.columns().encodings().get(c));
        }
        return java.util.Collections.unmodifiableMap(columns);
    }

    /**
     * Checks every shard against the hashes {@code index.json} records for it, reading each shard whole through the
     * cache (a raw shard is read without being cached; a zstd shard is decoded, which checks its hashes).
     *
     * @param dataset a dataset {@link #of} made
     * @return the hash algorithms {@code index.json} lists that were not computed (none of the JDK's, nor xxh64),
     *     sorted; empty if every recorded hash was checked
     * @throws IllegalArgumentException if it is not an MDS dataset
     * @throws CorruptShardException    naming the shard, the algorithm and both digests, at the first that differs
     * @throws IOException              if reading fails
     */
    public static List<String> verify(ShardedDataset dataset) throws IOException {
        MdsFormat format = mds(dataset);
        Set<String> skipped = new TreeSet<>();
        for (int s = 0; s < dataset.shardCount(); s++) {
            MdsFormat.Shard shard = format.shard(dataset.shards().get(s));
            for (String algorithm : shard.rawHashes().keySet()) {
                if (!MdsFormat.checkable(algorithm)) {
                    skipped.add(algorithm);
                }
            }
            if (dataset.decodedShard(s)) {
                try (Lease lease = dataset.readShard(s, 0, 0)) {
                    // decoded (and so checked) unless held; a held shard was checked when it was decoded
                }
                continue;
            }
            var info = dataset.storedInfo(s);
            if (info.size() > ShardedDataset.MAX_SAMPLE_BYTES) {
                throw new IOException("verify: shard '" + info.key() + "' of " + info.size()
                        + " bytes (expected: at most " + ShardedDataset.MAX_SAMPLE_BYTES
                        + " to verify it in one buffer; MDS writes shards of 64 MiB by default)");
            }
            try (Lease lease = dataset.cache().loaderSupport().readExtentUncached(info, 0, (int) info.size())) {
                MdsFormat.checkHashes(info.key(), "shard", lease.bytes(), shard.rawHashes());
            }
        }
        return List.copyOf(skipped);
    }

    /**
     * An array of an {@code ndarray} column, parsed out of the bytes MDS stored.
     *
     * @param dtype  numpy's name of its element type ({@code "uint16"}, {@code "float32"}, …)
     * @param shape  its dimensions
     * @param values its elements in C order, little-endian, a view of the field
     */
    public record NdArray(String dtype, long[] shape, ByteBuffer values) {}

    /**
     * Parses a field of an {@code ndarray} column: MDS stores its dtype and its shape unless the column's encoding
     * fixes them ({@code ndarray}, {@code ndarray:uint16}, {@code ndarray:int16:3,4}).
     *
     * @param field    the field's bytes, from {@link Sample#fields()}
     * @param encoding the column's encoding, from {@link #columns}
     * @return the array
     * @throws IllegalArgumentException if the encoding is not an ndarray encoding, or the bytes do not hold an array
     *                                  of it (naming the value and the expectation)
     */
    public static NdArray ndarray(ByteBuffer field, String encoding) {
        if (field == null || encoding == null || !(encoding.equals("ndarray") || encoding.startsWith("ndarray:"))) {
            throw new IllegalArgumentException("ndarray: encoding " + (encoding == null ? "null" : "'" + encoding + "'")
                    + (field == null ? ", field null" : "")
                    + " (expected: a field and its 'ndarray[:dtype[:shape]]' encoding)");
        }
        String[] parts = encoding.split(":", -1);
        ByteBuffer b = field.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN);
        int at = b.position();
        String dtype;
        try {
            if (parts.length >= 2) {
                dtype = parts[1];
                itemSize(dtype);
            } else {
                dtype = dtypeOf(b.get(at++) & 0xff);
            }
            long[] shape;
            if (parts.length >= 3) {
                String[] dims = parts[2].split(",");
                shape = new long[dims.length];
                for (int i = 0; i < dims.length; i++) {
                    shape[i] = Long.parseLong(dims[i].strip());
                }
            } else {
                int code = b.get(at++) & 0xff;
                int ndim = code >>> 2;
                int width = 1 << (code & 3);
                if (ndim < 1) {
                    throw new IllegalArgumentException("shape of 0 dimensions (MDS writes arrays of 1 to 63)");
                }
                shape = new long[ndim];
                for (int i = 0; i < ndim; i++) {
                    shape[i] = switch (width) {
                        case 1 -> b.get(at) & 0xffL;
                        case 2 -> b.getShort(at) & 0xffffL;
                        case 4 -> Integer.toUnsignedLong(b.getInt(at));
                        default -> b.getLong(at);
                    };
                    at += width;
                }
            }
            long count = 1;
            for (long d : shape) {
                if (d < 0) {
                    throw new IllegalArgumentException("dimension " + d);
                }
                count = Math.multiplyExact(count, d);
            }
            long bytes = Math.multiplyExact(count, itemSize(dtype));
            if (bytes != b.limit() - at) {
                throw new IllegalArgumentException(
                        "values of " + (b.limit() - at) + " bytes for " + count + " " + dtype + " elements");
            }
            return new NdArray(dtype, shape, field.slice(at - field.position(), (int) bytes));
        } catch (IllegalArgumentException | IndexOutOfBoundsException | ArithmeticException e) {
            throw new IllegalArgumentException(
                    "ndarray field of " + field.remaining() + " bytes, encoding '"
                            + encoding + "': " + e.getMessage()
                            + " (expected: MDS's ndarray encoding: [dtype code][ndim<<2 |"
                            + " shape width][shape][values], the parts the encoding does not fix)",
                    e);
        }
    }

    // ------------------------------------------------------------------------------------------------- internals

    private static MdsFormat mds(ShardedDataset dataset) {
        if (dataset == null || !(dataset.format() instanceof MdsFormat format)) {
            throw new IllegalArgumentException(
                    "dataset: " + dataset + " (expected: an MDS dataset from MdsDataset.of)");
        }
        return format;
    }

    private static String readIndex(TieredCache cache, String indexKey, String root) throws IOException {
        ByteBuffer bytes;
        try (Lease lease = cache.read(indexKey)) {
            bytes = lease.bytes();
            try {
                return StandardCharsets.UTF_8
                        .newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(bytes)
                        .toString();
            } catch (CharacterCodingException e) {
                throw new CorruptShardException(
                        indexKey,
                        "'" + indexKey + "' is not UTF-8 text (expected: MosaicML Streaming's index.json, JSON)",
                        e);
            }
        } catch (NoSuchObjectException e) {
            throw new IllegalArgumentException(
                    "root '" + root + "': no '" + indexKey + "' at " + cache.originUri() + " (expected: the directory"
                            + " of a MosaicML Streaming dataset, with index.json beside its shards)",
                    e);
        }
    }

    /** Parses and checks {@code index.json}. */
    static MdsFormat parse(String indexKey, String dir, String text) throws CorruptShardException {
        Object json;
        try {
            json = Json.parse(text);
        } catch (IllegalArgumentException e) {
            throw bad(indexKey, "is not JSON: " + e.getMessage(), e);
        }
        if (!(json instanceof Map<?, ?> top) || !(top.get("shards") instanceof List<?> list)) {
            throw bad(
                    indexKey,
                    "has no \"shards\" list (expected: {\"shards\": [...], \"version\": 2}, as"
                            + " MosaicML Streaming writes it)",
                    null);
        }
        if (!Long.valueOf(2).equals(top.get("version"))) {
            throw bad(
                    indexKey,
                    "version " + top.get("version") + " (expected: 2, the index version MosaicML"
                            + " Streaming writes)",
                    null);
        }
        if (list.isEmpty()) {
            throw bad(indexKey, "lists no shard (expected: at least one)", null);
        }
        List<MdsFormat.Shard> shards = new ArrayList<>(list.size());
        MdsFormat.Columns columns = null;
        Set<String> keys = new java.util.HashSet<>();
        for (int i = 0; i < list.size(); i++) {
            String where = "shard " + i;
            Map<?, ?> entry = map(indexKey, where, list.get(i));
            Object format = entry.get("format");
            if (!"mds".equals(format)) {
                throw bad(
                        indexKey,
                        where + ": format " + quote(format) + " (expected: \"mds\"; Granary reads MDS"
                                + " shards, not MosaicML's xsv or json formats)",
                        null);
            }
            MdsFormat.Columns c = columns(indexKey, where, entry);
            if (columns == null) {
                columns = c;
            } else if (!columns.names().equals(c.names())
                    || !columns.encodings().equals(c.encodings())) {
                throw bad(
                        indexKey,
                        where + ": columns " + c.names() + " " + c.encodings() + " (expected: those of" + " shard 0, "
                                + columns.names() + " " + columns.encodings() + ": one dataset, one schema)",
                        null);
            }
            long samples = number(indexKey, where + ": samples", entry.get("samples"), Integer.MAX_VALUE - 2L);
            Object compression = entry.get("compression");
            String codec = null;
            if (compression != null) {
                if (!(compression instanceof String name)
                        || !(name.equals("zstd") || name.matches("zstd:-?[0-9]{1,3}"))) {
                    throw bad(
                            indexKey,
                            where + ": compression " + quote(compression) + " (expected: null or \"zstd\""
                                    + " / \"zstd:<level>\"; Granary does not read MDS's gz, bz2, br or snappy shards:"
                                    + " rewrite them uncompressed or with zstd)",
                            null);
                }
                codec = "zstd";
            }
            Map<?, ?> raw = map(indexKey, where + ": raw_data", entry.get("raw_data"));
            long rawBytes = number(indexKey, where + ": raw_data.bytes", raw.get("bytes"), 0xffffffffL);
            String basename = basename(indexKey, where + ": raw_data.basename", raw.get("basename"));
            long zipBytes = -1;
            Map<String, String> zipHashes = Map.of();
            if (codec != null) {
                Map<?, ?> zip = map(indexKey, where + ": zip_data (a compressed shard's file)", entry.get("zip_data"));
                zipBytes = number(indexKey, where + ": zip_data.bytes", zip.get("bytes"), Long.MAX_VALUE);
                basename = basename(indexKey, where + ": zip_data.basename", zip.get("basename"));
                zipHashes = hashes(indexKey, where + ": zip_data.hashes", zip.get("hashes"));
            }
            String key = dir + basename;
            if (!keys.add(key)) {
                throw bad(indexKey, where + ": file '" + basename + "' listed twice (expected: each shard once)", null);
            }
            shards.add(new MdsFormat.Shard(
                    key,
                    (int) samples,
                    rawBytes,
                    zipBytes,
                    codec,
                    hashes(indexKey, where + ": raw_data.hashes", raw.get("hashes")),
                    zipHashes));
        }
        return new MdsFormat(indexKey, columns, shards);
    }

    private static MdsFormat.Columns columns(String indexKey, String where, Map<?, ?> entry)
            throws CorruptShardException {
        if (!(entry.get("column_names") instanceof List<?> names)
                || !(entry.get("column_encodings") instanceof List<?> encodings)
                || !(entry.get("column_sizes") instanceof List<?> sizes)
                || names.size() != encodings.size()
                || names.size() != sizes.size()
                || names.isEmpty()) {
            throw bad(
                    indexKey,
                    where + ": column_names, column_encodings, column_sizes " + entry.get("column_names")
                            + ", " + entry.get("column_encodings") + ", " + entry.get("column_sizes")
                            + " (expected: three"
                            + " lists of one entry per column, at least one)",
                    null);
        }
        List<String> n = new ArrayList<>();
        List<String> e = new ArrayList<>();
        int[] fixed = new int[names.size()];
        for (int c = 0; c < names.size(); c++) {
            if (!(names.get(c) instanceof String name) || !(encodings.get(c) instanceof String encoding)) {
                throw bad(
                        indexKey,
                        where + ": column " + c + " " + quote(names.get(c)) + " encoded " + quote(encodings.get(c))
                                + " (expected: two strings)",
                        null);
            }
            if (n.contains(name)) {
                throw bad(indexKey, where + ": column '" + name + "' twice (expected: distinct names)", null);
            }
            long expected = fixedSize(indexKey, where + ": column '" + name + "'", encoding);
            Object size = sizes.get(c);
            long given = size == null ? -1 : size instanceof Long l ? l : -2;
            if (given != expected) {
                throw bad(
                        indexKey,
                        where + ": column '" + name + "' (" + encoding + ") of size " + size
                                + " (expected: "
                                + (expected < 0 ? "null, a variable-size encoding" : expected + " bytes")
                                + ")",
                        null);
            }
            n.add(name);
            e.add(encoding);
            fixed[c] = (int) expected;
        }
        return new MdsFormat.Columns(List.copyOf(n), List.copyOf(e), fixed);
    }

    /** {@return an encoding's fixed size in bytes, or -1 for a variable-size one}, refusing unknown encodings */
    private static long fixedSize(String indexKey, String where, String encoding) throws CorruptShardException {
        if (VARIABLE.contains(encoding) || encoding.startsWith("list[")) {
            return -1;
        }
        if (FIXED_8.contains(encoding)) {
            return 8;
        }
        switch (encoding) {
            case "uint8", "int8" -> {
                return 1;
            }
            case "uint16", "int16", "float16" -> {
                return 2;
            }
            case "uint32", "int32", "float32" -> {
                return 4;
            }
            default -> {}
        }
        if (encoding.equals("ndarray") || encoding.startsWith("ndarray:")) {
            String[] parts = encoding.split(":", -1);
            try {
                if (parts.length > 3) {
                    throw new IllegalArgumentException("too many parts");
                }
                long item = parts.length >= 2 ? itemSize(parts[1]) : -1;
                if (parts.length < 3) {
                    return -1;
                }
                long count = 1;
                for (String dim : parts[2].split(",")) {
                    long d = Long.parseLong(dim.strip());
                    if (d < 1) {
                        throw new IllegalArgumentException("dimension " + d);
                    }
                    count = Math.multiplyExact(count, d);
                }
                long size = Math.multiplyExact(count, item);
                if (size > ShardedDataset.MAX_SAMPLE_BYTES) {
                    throw new IllegalArgumentException(size + " bytes");
                }
                return size;
            } catch (IllegalArgumentException | ArithmeticException e) {
                throw bad(
                        indexKey,
                        where + ": encoding '" + encoding + "': " + e.getMessage() + " (expected:"
                                + " ndarray[:<dtype>[:<d0>,<d1>,…]] with a numpy dtype and dimensions >= 1)",
                        e);
            }
        }
        throw bad(
                indexKey,
                where + ": encoding '" + encoding + "' (expected: an MDS encoding: bytes, str, int,"
                        + " (u)int8-64, float16-64, str_int, str_float, str_decimal, json, pkl, pil, jpeg, png,"
                        + " list[…] or ndarray[:dtype[:shape]])",
                null);
    }

    private static final List<String> DTYPES = List.of(
            "uint8", "int8", "uint16", "int16", "float16", "uint32", "int32", "float32", "uint64", "int64", "float64");
    private static final int[] DTYPE_CODES = {8, 9, 16, 17, 18, 32, 33, 34, 64, 65, 66};

    private static long itemSize(String dtype) {
        int i = DTYPES.indexOf(dtype);
        if (i < 0) {
            throw new IllegalArgumentException("dtype '" + dtype + "' (expected: one of " + DTYPES + ")");
        }
        return (long) DTYPE_CODES[i] >>> 3;
    }

    private static String dtypeOf(int code) {
        for (int i = 0; i < DTYPE_CODES.length; i++) {
            if (DTYPE_CODES[i] == code) {
                return DTYPES.get(i);
            }
        }
        throw new IllegalArgumentException(
                "dtype code " + code + " (expected: one of MDS's 8, 9, 16, 17, 18, 32, 33," + " 34, 64, 65, 66)");
    }

    private static Map<?, ?> map(String indexKey, String where, Object value) throws CorruptShardException {
        if (!(value instanceof Map<?, ?> map)) {
            throw bad(indexKey, where + ": " + quote(value) + " (expected: a JSON object)", null);
        }
        return map;
    }

    private static long number(String indexKey, String where, Object value, long max) throws CorruptShardException {
        if (!(value instanceof Long n) || n < 0 || n > max) {
            throw bad(indexKey, where + " " + quote(value) + " (expected: an integer from 0 to " + max + ")", null);
        }
        return n;
    }

    private static String basename(String indexKey, String where, Object value) throws CorruptShardException {
        if (!(value instanceof String name)
                || name.isEmpty()
                || name.contains("/")
                || name.contains("\\")
                || name.equals(".")
                || name.equals("..")) {
            throw bad(indexKey, where + " " + quote(value) + " (expected: a file name beside index.json)", null);
        }
        return name;
    }

    private static Map<String, String> hashes(String indexKey, String where, Object value)
            throws CorruptShardException {
        if (value == null) {
            return Map.of();
        }
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : map(indexKey, where, value).entrySet()) {
            if (!(e.getValue() instanceof String hex) || !hex.matches("[0-9a-fA-F]+")) {
                throw bad(
                        indexKey,
                        where + "." + e.getKey() + " " + quote(e.getValue()) + " (expected: a hex" + " digest)",
                        null);
            }
            out.put(String.valueOf(e.getKey()), hex);
        }
        return Map.copyOf(out);
    }

    private static String quote(Object value) {
        return value instanceof String s ? "\"" + s + "\"" : String.valueOf(value);
    }

    private static CorruptShardException bad(String indexKey, String problem, Throwable cause) {
        return new CorruptShardException(indexKey, "'" + indexKey + "' " + problem, cause);
    }
}
