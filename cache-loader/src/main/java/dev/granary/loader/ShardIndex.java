// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.Arrays;
import java.util.Objects;

/**
 * Where the samples of one shard are: sample {@code i} is the shard's bytes {@code [start(i), start(i) + length(i))}.
 * A {@link ShardFormat} makes one per shard, from an index file or a scan; the {@link ShardedDataset} numbers the
 * samples of its shards one after the other.
 *
 * <p>Formats keep whatever else they need to decode a sample (field layouts, checksums) in their own implementation,
 * and find it again in {@link ShardFormat#decode}, which is handed this object back. For formats whose samples are
 * plain extents, {@link #of(String, long[], int[])} is an implementation in two arrays (12 bytes a sample).
 *
 * <p>Implementations are immutable and thread-safe; they should be compact (a dataset holds millions of samples).
 */
public interface ShardIndex {

    /** {@return the number of samples in the shard} */
    int size();

    /**
     * {@return the offset of sample {@code sample}'s first byte in the shard}
     *
     * @param sample {@code 0 <= sample < size()}
     */
    long start(int sample);

    /**
     * {@return the number of bytes of sample {@code sample}}, possibly 0
     *
     * @param sample {@code 0 <= sample < size()}
     */
    int length(int sample);

    /**
     * {@return the sample's key within its shard, or {@code null} for none} A sample without a key of its own is
     * named {@code <shard key>#<sample number>} by the dataset (records of a TFRecord file, rows of a table); a
     * WebDataset sample is named by its members' common base name ({@code train/n0153}).
     *
     * @param sample {@code 0 <= sample < size()}
     */
    default String key(int sample) {
        return null;
    }

    /**
     * {@return an index of plain extents}: sample {@code i} is {@code [starts[i], starts[i] + lengths[i])}
     *
     * @param shard   the shard's key, which the index keeps for its format's messages ({@link Extents#shard()})
     * @param starts  each sample's offset, {@code >= 0}
     * @param lengths each sample's length, {@code >= 0}; as many as {@code starts}
     * @throws IllegalArgumentException if the arrays differ in length, or an offset or length is negative
     */
    static Extents of(String shard, long[] starts, int[] lengths) {
        if (starts == null || lengths == null || starts.length != lengths.length) {
            throw new IllegalArgumentException("shard index: " + (starts == null ? "null" : starts.length)
                    + " offsets and " + (lengths == null ? "null" : lengths.length) + " lengths (expected: one of"
                    + " each per sample)");
        }
        for (int i = 0; i < starts.length; i++) {
            if (starts[i] < 0 || lengths[i] < 0) {
                throw new IllegalArgumentException("shard index: sample " + i + " at " + starts[i] + ", " + lengths[i]
                        + " bytes (expected: both >= 0)");
            }
        }
        return new Extents(shard, starts.clone(), lengths.clone());
    }

    /** {@link #of}'s implementation: two arrays, and the shard's key. */
    final class Extents implements ShardIndex {
        private final String shard;
        private final long[] starts;
        private final int[] lengths;

        private Extents(String shard, long[] starts, int[] lengths) {
            this.shard = shard;
            this.starts = starts;
            this.lengths = lengths;
        }

        /** {@return the key of the shard this index describes} */
        public String shard() {
            return shard;
        }

        @Override
        public int size() {
            return starts.length;
        }

        @Override
        public long start(int sample) {
            return starts[Objects.checkIndex(sample, starts.length)];
        }

        @Override
        public int length(int sample) {
            return lengths[Objects.checkIndex(sample, lengths.length)];
        }

        @Override
        public String toString() {
            return "ShardIndex[" + shard + ", " + starts.length + " samples"
                    + (starts.length == 0
                            ? ""
                            : ", " + Arrays.stream(lengths).asLongStream().sum() + " bytes") + "]";
        }
    }
}
