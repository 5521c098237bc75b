// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import static java.nio.charset.StandardCharsets.UTF_8;

import dev.granary.ObjectInfo;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The WebDataset tar format as a {@link ShardFormat}: samples are a shard's members grouped by base name
 * ({@link ShardSamples}), indexed from the {@code <shard>.gidx} file beside the shard ({@link ShardIndexFile},
 * {@code docs/shard-index.md}) or by scanning its tar headers ({@link TarIndex}); a sample's extent runs from its first
 * member's data to its last's, and its fields are slices of it. How an index file is bound to its shard (stale,
 * trusted, unconfirmed) is {@link WebDataset}'s class comment. Stateless and thread-safe.
 */
final class TarFormat implements ShardFormat {

    static final TarFormat INSTANCE = new TarFormat();

    private TarFormat() {}

    @Override
    public String name() {
        return "webdataset";
    }

    @Override
    public List<String> indexKeys(String shardKey) {
        return List.of(shardKey + ShardIndexFile.SUFFIX);
    }

    @Override
    public ShardIndex readIndex(ObjectInfo shard, ObjectInfo index, ByteBuffer bytes)
            throws StaleIndexException, IOException {
        ShardIndexFile.Decoded decoded;
        try {
            decoded = ShardIndexFile.decode(bytes);
        } catch (ShardIndexFile.UnknownVersion e) {
            throw new StaleIndexException("index '" + index.key() + "' of shard '" + shard.key() + "' has "
                    + e.getMessage() + ": indexing the shard by scanning it; rewrite the index with this version's"
                    + " WebDataset.writeIndex to skip the scan");
        } catch (ShardIndexFile.Damaged e) {
            throw corruptIndex(shard.key(), index.key(), e.getMessage(), null);
        }
        if (decoded.shardSize() != shard.size()) {
            throw new StaleIndexException("index '" + index.key() + "' is stale: it was written for a shard of "
                    + decoded.shardSize() + " bytes, and shard '" + shard.key() + "' has " + shard.size() + " bytes;"
                    + " indexing the shard by scanning it (if the shard was meant to change, write its index again"
                    + " with WebDataset.writeIndex; if not, the shard itself changed: check it against its source)");
        }
        boolean confirmed =
                !decoded.shardVersion().isEmpty() && decoded.shardVersion().equals(shard.version());
        return new TarShardIndex(decoded.samples(), decoded.crcs(), !confirmed, shard.key());
    }

    private static CorruptShardException corruptIndex(String shard, String index, String problem, Throwable cause) {
        return new CorruptShardException(
                shard,
                "index '" + index + "' of shard '" + shard + "' is damaged: "
                        + problem
                        + " (the index file itself does not check out; the shard may be intact: check the shard"
                        + " against its source first, then write a new index from it with WebDataset.writeIndex(cache,"
                        + " \""
                        + shard + "\"))",
                cause);
    }

    @Override
    public ShardIndex scan(ObjectInfo shard, ShardReader reader) throws IOException {
        List<ShardSamples.Entry> samples = samples(shard, reader);
        return new TarShardIndex(samples, new int[samples.size()], false, shard.key());
    }

    /** A shard's samples from its tar headers, read sequentially out of {@code reader}. */
    static List<ShardSamples.Entry> samples(ObjectInfo shard, ShardReader reader) throws IOException {
        List<TarIndex.Member> members = TarIndex.scan(shard.key(), shard.size(), reader::read);
        return ShardSamples.group(shard.key(), members);
    }

    /**
     * Slices a sample's fields out of its extent's bytes, checking the bytes against the index's CRC32C first when the
     * shard's index is unconfirmed (see {@link WebDataset}).
     *
     * @return the fields, in tar order: read-only slices of {@code extent}, in an unmodifiable map
     * @throws CorruptShardException if the bytes do not match the index's CRC32C: names shard, sample and offset
     */
    @Override
    public Map<String, ByteBuffer> decode(ShardIndex index, int sample, ByteBuffer extent)
            throws CorruptShardException {
        TarShardIndex tar = (TarShardIndex) index;
        if (tar.verify) {
            int actual = ShardIndexFile.crc(extent);
            if (actual != tar.crc[sample]) {
                throw new CorruptShardException(
                        tar.shard,
                        tar.start[sample],
                        "sample '" + tar.key(sample)
                                + "': CRC32C " + Integer.toHexString(actual) + " of its " + tar.length[sample]
                                + " bytes"
                                + " (expected: " + Integer.toHexString(tar.crc[sample]) + ", as its index '" + tar.shard
                                + ShardIndexFile.SUFFIX
                                + "' records). Either the shard's bytes changed after the index was"
                                + " written (damage, or the shard rewritten in place at the same size), or the index"
                                + " was written for other bytes. To tell which, check the shard against its source (a"
                                + " checksum"
                                + " or the ETag it was uploaded with): if the shard is damaged, restore it; only if the"
                                + " shard is right, write its index again with WebDataset.writeIndex. Do not delete or"
                                + " rewrite the index first: the loader would then serve the damaged bytes unchecked.");
            }
        }
        int from = tar.firstField[sample];
        int to = sample + 1 < tar.count ? tar.firstField[sample + 1] : tar.fieldName.length;
        Map<String, ByteBuffer> fields = new LinkedHashMap<>((to - from) * 2);
        int base = extent.position();
        for (int f = from; f < to; f++) {
            fields.put(
                    tar.names.get(tar.fieldName[f]),
                    extent.slice(base + tar.fieldOffset[f], tar.fieldSize[f]).asReadOnlyBuffer());
        }
        return Collections.unmodifiableMap(fields);
    }

    /**
     * One tar shard's samples in flat arrays: extents, CRCs, keys as one UTF-8 byte array, fields as name ids into the
     * shard's table of field names — about 44 bytes per two-field sample plus its key's bytes. Immutable.
     */
    static final class TarShardIndex implements ShardIndex {
        final String shard;
        final int count;
        /** Whether samples are checked against {@link #crc} when read: the shard's index file is unconfirmed. */
        final boolean verify;

        final long[] start;
        final int[] length;
        final int[] crc;
        final byte[] keyBytes;
        final int[] keyEnd;
        final List<String> names = new ArrayList<>();
        final int[] firstField;
        final char[] fieldName;
        final int[] fieldOffset;
        final int[] fieldSize;

        TarShardIndex(List<ShardSamples.Entry> samples, int[] crcs, boolean verify, String shard) {
            this.shard = shard;
            this.count = samples.size();
            this.verify = verify;
            start = new long[count];
            length = new int[count];
            crc = crcs;
            keyEnd = new int[count];
            firstField = new int[count];
            int fields = 0;
            for (ShardSamples.Entry e : samples) {
                fields += e.fields().size();
            }
            fieldName = new char[fields];
            fieldOffset = new int[fields];
            fieldSize = new int[fields];
            Map<String, Integer> ids = new HashMap<>();
            ByteArrayOutputStream keys = new ByteArrayOutputStream(count * 16);
            int f = 0;
            for (int i = 0; i < count; i++) {
                ShardSamples.Entry e = samples.get(i);
                long extent = e.end() - e.start();
                if (extent > ShardedDataset.MAX_SAMPLE_BYTES) {
                    throw new IllegalArgumentException("sample '" + e.key() + "' of shard '" + shard + "': " + extent
                            + " bytes (expected: at most " + ShardedDataset.MAX_SAMPLE_BYTES + " per sample)");
                }
                start[i] = e.start();
                length[i] = (int) extent;
                keys.writeBytes(e.key().getBytes(UTF_8));
                keyEnd[i] = keys.size();
                firstField[i] = f;
                for (ShardSamples.Field field : e.fields()) {
                    Integer id = ids.get(field.name());
                    if (id == null) {
                        id = names.size();
                        if (id > 0xffff) {
                            throw new IllegalArgumentException("field names of shard '" + shard + "': more than"
                                    + " 65536 distinct (expected: at most 65536)");
                        }
                        ids.put(field.name(), id);
                        names.add(field.name());
                    }
                    fieldName[f] = (char) (int) id;
                    fieldOffset[f] = (int) (field.offset() - e.start());
                    fieldSize[f] = (int) field.size();
                    f++;
                }
            }
            keyBytes = keys.toByteArray();
        }

        @Override
        public int size() {
            return count;
        }

        @Override
        public long start(int sample) {
            return start[sample];
        }

        @Override
        public int length(int sample) {
            return length[sample];
        }

        @Override
        public String key(int sample) {
            Objects.checkIndex(sample, count);
            int from = sample == 0 ? 0 : keyEnd[sample - 1];
            return new String(keyBytes, from, keyEnd[sample] - from, UTF_8);
        }

        /** {@return the field names of sample {@code sample}, in tar order} */
        List<String> fields(int sample) {
            Objects.checkIndex(sample, count);
            int to = sample + 1 < count ? firstField[sample + 1] : fieldName.length;
            String[] out = new String[to - firstField[sample]];
            for (int k = 0; k < out.length; k++) {
                out[k] = names.get(fieldName[firstField[sample] + k]);
            }
            return List.of(out);
        }

        boolean verifies() {
            return verify;
        }
    }
}
