// SPDX-License-Identifier: Apache-2.0
package dev.granary.examples;

import dev.granary.ObjectInfo;
import dev.granary.loader.CorruptShardException;
import dev.granary.loader.ShardFormat;
import dev.granary.loader.ShardIndex;
import dev.granary.loader.ShardReader;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Map;

/**
 * A shard format of one's own: JSON Lines files ({@code .jsonl}), one sample per line. There is no index file, so
 * indexing scans each file once for its newlines (the parts it reads stay cached for the first epoch); a sample is its
 * line without the newline, in one field, {@code json}.
 */
public final class JsonLinesFormat implements ShardFormat {

    @Override
    public String name() {
        return "jsonl";
    }

    @Override
    public ShardIndex scan(ObjectInfo shard, ShardReader reader) throws IOException {
        long[] starts = new long[1024];
        int[] lengths = new int[1024];
        int n = 0;
        long lineStart = 0;
        long size = reader.size();
        for (long at = 0; at < size; ) {
            int chunk = (int) Math.min(1 << 20, size - at);
            ByteBuffer bytes = reader.read(at, chunk);
            for (int i = 0; i < chunk; i++) {
                if (bytes.get(bytes.position() + i) != '\n') {
                    continue;
                }
                long end = at + i;
                if (end - lineStart > Integer.MAX_VALUE - 8) {
                    throw new CorruptShardException(
                            shard.key(),
                            lineStart,
                            "a line of " + (end - lineStart) + " bytes (expected: below 2 GiB)");
                }
                if (n == starts.length) {
                    starts = Arrays.copyOf(starts, 2 * n);
                    lengths = Arrays.copyOf(lengths, 2 * n);
                }
                starts[n] = lineStart;
                lengths[n++] = (int) (end - lineStart);
                lineStart = end + 1;
            }
            at += chunk;
        }
        if (lineStart < size) {
            throw new CorruptShardException(
                    shard.key(),
                    lineStart,
                    "the last line has no newline (expected: every" + " line of a JSON Lines file to end with \\n)");
        }
        return ShardIndex.of(shard.key(), Arrays.copyOf(starts, n), Arrays.copyOf(lengths, n));
    }

    @Override
    public Map<String, ByteBuffer> decode(ShardIndex index, int sample, ByteBuffer extent) {
        return Map.of(
                "json", extent.slice(extent.position(), extent.remaining()).asReadOnlyBuffer());
    }
}
