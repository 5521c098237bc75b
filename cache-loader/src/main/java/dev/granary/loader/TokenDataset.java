// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.TieredCache;
import java.io.IOException;
import java.util.List;

/**
 * Pre-tokenized training data — the LLM pre-training layout — read through a {@link TieredCache}: Megatron-LM/NeMo
 * indexed datasets ({@code <prefix>.bin} with {@code <prefix>.idx}) and numpy {@code .npy} token arrays, as a
 * {@link ShardedDataset}, so every loader feature (shard-block orders, files read whole in parts, stable partitions,
 * resume, the dry run, pre-staging) applies.
 *
 * {@snippet :
 * Dataset windows = TokenDataset.of(cache, "tokens/web_text_document", 2048); // GPT windows of 2 049 tokens
 * DataLoader<int[]> loader = DataLoader.builder(windows, sample -> {
 *     ShortBuffer tokens = sample.bytes().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer(); // the file's dtype: uint16
 *     int[] ids = new int[tokens.remaining()];
 *     for (int i = 0; i < ids.length; i++) {
 *         ids[i] = Short.toUnsignedInt(tokens.get(i));
 *     }
 *     return ids;
 * }).shuffle(42L).build();
 * }
 *
 * <ul>
 *   <li>{@link #of}: the GPT layout. The documents concatenated in index order; sample {@code i} is the tokens
 *       {@code [i·L, i·L + L + 1)} (the model's inputs and, shifted by one, its targets); the last partial window is
 *       dropped.</li>
 *   <li>{@link #documents}: one sample per document.</li>
 *   <li>{@link Sample#bytes()} (also field {@code tokens}) is the tokens in the file's dtype, little-endian: a view of
 *       the cached bytes, not a copy (a window that crosses two cached parts of a streamed epoch is assembled by one
 *       copy).</li>
 *   <li>Every claim of the {@code .idx} is checked (its dtype code, its pointers against its lengths × the dtype's
 *       size, its document indices, the {@code .bin}'s size): a file that does not add up is a
 *       {@link CorruptShardException} naming it, never tokens at wrong offsets.</li>
 *   <li>{@code .npy}: 1-D arrays of {@code |u1 |i1 <u2 <i2 <u4 <i4 <u8 <i8} (header formats 1.0 to 3.0), one shard
 *       per file, windows cut per file. Big-endian, float, 2-D and object arrays are refused, saying so.</li>
 * </ul>
 *
 * <p>Stateless: the datasets it makes are immutable and thread-safe.
 */
public final class TokenDataset {

    private TokenDataset() {}

    /**
     * Windows of a Megatron-LM/NeMo indexed dataset in the GPT layout (see the class comment).
     *
     * @param cache          the cache to read through
     * @param prefix         the dataset's prefix: {@code tokens/web_text_document} for
     *                       {@code tokens/web_text_document.bin} and {@code .idx}
     * @param sequenceLength L, the tokens of a training sequence; each sample holds {@code L + 1}
     * @return the dataset
     * @throws IllegalArgumentException if an argument is null or invalid, {@code sequenceLength < 1}, the {@code .idx}
     *                                  is missing, or the dataset holds fewer than {@code L + 1} tokens
     * @throws CorruptShardException    if the {@code .idx} does not add up (names it and what is wrong)
     * @throws dev.granary.NoSuchObjectException if the {@code .bin} does not exist
     * @throws IOException              if the origin fails
     */
    public static ShardedDataset of(TieredCache cache, String prefix, int sequenceLength) throws IOException {
        checkLength(sequenceLength);
        return ShardedDataset.of(
                cache, List.of(bin(prefix)), TokenFormat.megatron(TokenFormat.Layout.WINDOWS, sequenceLength));
    }

    /**
     * One sample per document of a Megatron-LM/NeMo indexed dataset.
     *
     * @param cache  the cache to read through
     * @param prefix the dataset's prefix
     * @return the dataset
     * @throws IllegalArgumentException if an argument is null or invalid, the {@code .idx} is missing, or the dataset
     *                                  has no document
     * @throws CorruptShardException    if the {@code .idx} does not add up
     * @throws dev.granary.NoSuchObjectException if the {@code .bin} does not exist
     * @throws IOException              if the origin fails
     */
    public static ShardedDataset documents(TieredCache cache, String prefix) throws IOException {
        return ShardedDataset.of(cache, List.of(bin(prefix)), TokenFormat.megatron(TokenFormat.Layout.DOCUMENTS, 0));
    }

    /**
     * Windows of numpy {@code .npy} token arrays in the GPT layout, cut per file.
     *
     * @param cache          the cache to read through
     * @param npyKeys        the {@code .npy} files' keys, each once
     * @param sequenceLength L; each sample holds {@code L + 1} tokens
     * @return the dataset
     * @throws IllegalArgumentException if an argument is invalid, or an array is not a 1-D little-endian integer array
     * @throws CorruptShardException    if a file is not a valid {@code .npy} file
     * @throws dev.granary.NoSuchObjectException if a file does not exist
     * @throws IOException              if the origin fails
     */
    public static ShardedDataset ofNpy(TieredCache cache, List<String> npyKeys, int sequenceLength) throws IOException {
        checkLength(sequenceLength);
        return ShardedDataset.of(cache, npyKeys, TokenFormat.npy(TokenFormat.Layout.WINDOWS, sequenceLength));
    }

    private static void checkLength(int sequenceLength) {
        if (sequenceLength < 1) {
            throw new IllegalArgumentException("sequence length: " + sequenceLength + " (expected: >= 1 token)");
        }
    }

    private static String bin(String prefix) {
        if (prefix == null || prefix.isEmpty() || prefix.endsWith("/")) {
            throw new IllegalArgumentException("prefix: " + (prefix == null ? "null" : "'" + prefix + "'")
                    + " (expected: a Megatron dataset's prefix such as 'tokens/web_text_document', for"
                    + " tokens/web_text_document.bin and .idx)");
        }
        return (prefix.endsWith(TokenFormat.BIN)
                        ? prefix.substring(0, prefix.length() - TokenFormat.BIN.length())
                        : prefix)
                + TokenFormat.BIN;
    }
}
