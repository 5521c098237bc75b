// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * Groups the members of a tar shard into WebDataset samples. Stateless and thread-safe.
 *
 * <h2>The webdataset convention</h2>
 * A member's sample key is its path up to the first dot of its last path component, and the rest, after that dot, is
 * the field name: {@code train/n0153.seg.png} is field {@code seg.png} of sample {@code train/n0153}, and
 * {@code n0153.cls} is field {@code cls} of sample {@code n0153}; dots in directory names do not count. Consecutive
 * members with the same key form one sample, as in webdataset's {@code group_by_keys}. A key that comes back after
 * another key is refused ({@link CorruptShardException} naming the shard and the key): webdataset would start a second
 * sample with the same key, and one key must never name two samples of a shard. Field names keep their case
 * (webdataset lower-cases them by default).
 *
 * <p>Members that belong to no sample are skipped: those whose last path component has no dot ({@code __init__},
 * {@code LICENSE}), starts with a dot ({@code .hidden}) or ends with its first dot ({@code n0153.}, an empty field
 * name).
 */
final class ShardSamples {

    private ShardSamples() {}

    /**
     * One field of a sample: one member of the shard.
     *
     * @param name   the field name, e.g. {@code seg.png}
     * @param offset the offset of the member's data in the shard
     * @param size   the member's size in bytes
     */
    record Field(String name, long offset, long size) {

        /**
         * Checks the components.
         *
         * @throws NullPointerException     if {@code name} is null
         * @throws IllegalArgumentException if {@code offset} or {@code size} is negative
         */
        Field {
            Objects.requireNonNull(name, "name");
            if (offset < 0) {
                throw new IllegalArgumentException("field offset: " + offset + " (expected: >= 0)");
            }
            if (size < 0) {
                throw new IllegalArgumentException("field size: " + size + " (expected: >= 0)");
            }
        }
    }

    /**
     * One sample: the fields sharing a key, and the byte range that holds all their data. The range also holds the
     * headers between the fields, so one ranged read of {@code [start, end)} fetches the whole sample.
     *
     * @param key    the sample key, e.g. {@code train/n0153}
     * @param start  the offset of the first field's data
     * @param end    the offset just past the last field's data
     * @param fields the fields, in shard order (so by increasing offset); not empty
     */
    record Entry(String key, long start, long end, List<Field> fields) {

        /**
         * Checks the components and copies {@code fields}.
         *
         * @throws NullPointerException     if {@code key} or {@code fields} (or one of them) is null
         * @throws IllegalArgumentException if {@code fields} is empty or {@code 0 <= start <= end} does not hold
         */
        Entry {
            Objects.requireNonNull(key, "key");
            fields = List.copyOf(fields);
            if (fields.isEmpty()) {
                throw new IllegalArgumentException("fields of sample '" + key + "': none (expected: at least one)");
            }
            if (start < 0 || end < start) {
                throw new IllegalArgumentException(
                        "extent of sample '" + key + "': [" + start + ", " + end + ") (expected: 0 <= start <= end)");
            }
        }
    }

    /**
     * Groups a shard's members, in the order {@link TarIndex#scan} lists them, into samples (see the class comment).
     *
     * @param shard   the shard's name, used in error messages
     * @param members the shard's regular members, in archive order
     * @return the samples in shard order, an unmodifiable list
     * @throws CorruptShardException if one sample has two fields with the same name, or the members of one sample
     *                               are not adjacent; the offset is that of the offending member's data
     * @throws NullPointerException  if {@code shard} or {@code members} (or one of them) is null
     */
    static List<Entry> group(String shard, List<TarIndex.Member> members) throws CorruptShardException {
        Objects.requireNonNull(shard, "shard");
        Objects.requireNonNull(members, "members");
        List<Entry> samples = new ArrayList<>();
        String key = null;
        List<Field> fields = new ArrayList<>();
        Set<String> done = new HashSet<>();
        for (TarIndex.Member member : members) {
            String name = member.name();
            int slash = name.lastIndexOf('/');
            int dot = name.indexOf('.', slash + 1);
            if (dot <= slash + 1 || dot == name.length() - 1) {
                continue;
            }
            String memberKey = name.substring(0, dot);
            String field = name.substring(dot + 1);
            if (!memberKey.equals(key)) {
                if (key != null) {
                    samples.add(entry(key, fields));
                    done.add(key);
                }
                if (done.contains(memberKey)) {
                    throw new CorruptShardException(
                            shard,
                            member.offset(),
                            "members of sample '" + memberKey
                                    + "' are not adjacent: member '" + name + "' comes after members of other samples"
                                    + " (expected: all members of a sample next to each other, as webdataset's writers"
                                    + " store them)");
                }
                key = memberKey;
                fields.clear();
            } else {
                for (Field f : fields) { // a handful of fields per sample: a scan beats hashing
                    if (f.name().equals(field)) {
                        throw new CorruptShardException(
                                shard,
                                member.offset(),
                                "duplicate field '" + field + "' in sample '" + key
                                        + "' (expected: each field once per sample)");
                    }
                }
            }
            fields.add(new Field(field, member.offset(), member.size()));
        }
        if (key != null) {
            samples.add(entry(key, fields));
        }
        return List.copyOf(samples);
    }

    private static Entry entry(String key, List<Field> fields) {
        Field last = fields.getLast();
        return new Entry(key, fields.getFirst().offset(), last.offset() + last.size(), fields);
    }
}
