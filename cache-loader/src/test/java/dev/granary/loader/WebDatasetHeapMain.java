// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.ObjectInfo;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Measures the heap a {@link WebDataset} holds per sample: builds the index of {@code shards × samples} samples
 * (demo-like keys {@code s000123/00123456}, fields {@code jpg} and {@code cls}) without reading anything, and takes the
 * used heap after full GCs before and after, keeping the dataset reachable. For comparison in the same run, the same
 * samples in the layout WebDataset had before issue 12 (an array per field of a sample, a String per key and per field
 * name, as its scan produced them). Not a test: a measurement, run by hand.
 *
 * <pre>
 * ./mvnw -q -o test-compile -pl cache-loader -am
 * /usr/lib/jvm/temurin-25-jdk-amd64/bin/java -Xmx3g -cp cache-loader/target/classes:cache-loader/target/test-classes:cache-core/target/classes \
 *     dev.granary.loader.WebDatasetHeapMain 1000 1000
 * </pre>
 */
public final class WebDatasetHeapMain {

    private WebDatasetHeapMain() {}

    /**
     * Runs the measurement.
     *
     * @param args shards (default 1000) and samples per shard (default 1000)
     */
    public static void main(String[] args) {
        int shards = args.length > 0 ? Integer.parseInt(args[0]) : 1000;
        int perShard = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
        long n = (long) shards * perShard;

        List<ObjectInfo> infos = new ArrayList<>(shards);
        List<List<ShardSamples.Entry>> samples = new ArrayList<>(shards);
        for (int s = 0; s < shards; s++) {
            infos.add(new ObjectInfo(String.format(Locale.ROOT, "shards/%06d.tar", s), 1L << 31, "\"etag-" + s + "\""));
            samples.add(shard(s, perShard));
        }
        try {
            long before = used(); // with the decoded entries, which stay reachable: only the dataset is counted
            WebDataset dataset = WebDataset.ofIndexes(null, infos, samples);
            long compact = used() - before;
            System.out.printf(
                    Locale.ROOT,
                    "WebDataset, %d samples in %d shards: %.1f MB of heap, %.1f B per sample%n",
                    dataset.size(),
                    shards,
                    compact / 1e6,
                    compact / (double) n);

            before = used();
            OldLayout old = new OldLayout(shards, perShard);
            long previous = used() - before;
            System.out.printf(
                    Locale.ROOT,
                    "the layout before issue 12, same samples: %.1f MB, %.1f B per sample"
                            + " (%.1f B per tar member)%n",
                    previous / 1e6,
                    previous / (double) n,
                    previous / (2.0 * n));
            // Keep both reachable until measured.
            if (dataset.key(0).isEmpty() || old.keys.length == 0) {
                throw new AssertionError();
            }
        } finally {
            Reference.reachabilityFence(samples); // reachable in both measurements: not counted
        }
    }

    private static List<ShardSamples.Entry> shard(int s, int perShard) {
        List<ShardSamples.Entry> entries = new ArrayList<>(perShard);
        long at = 512;
        for (int i = 0; i < perShard; i++) {
            String key = String.format(Locale.ROOT, "s%06d/%08d", s, (long) s * perShard + i);
            int jpg = 8192 + (i * 7919) % 16384;
            long cls = at + ((jpg + 511) & -512) + 512;
            entries.add(new ShardSamples.Entry(
                    key,
                    at,
                    cls + 4,
                    List.of(new ShardSamples.Field("jpg", at, jpg), new ShardSamples.Field("cls", cls, 4))));
            at = cls + 512 + 512;
        }
        return entries;
    }

    /** WebDataset's fields before issue 12, filled as its constructor filled them. */
    private static final class OldLayout {
        final int[] shardOf;
        final long[] start;
        final int[] length;
        final String[] keys;
        final String[][] fieldNames;
        final long[][] fieldOffsets;
        final int[][] fieldSizes;

        OldLayout(int shards, int perShard) {
            int n = shards * perShard;
            shardOf = new int[n];
            start = new long[n];
            length = new int[n];
            keys = new String[n];
            fieldNames = new String[n][];
            fieldOffsets = new long[n][];
            fieldSizes = new int[n][];
            int i = 0;
            for (int s = 0; s < shards; s++) {
                for (ShardSamples.Entry e : shard(s, perShard)) {
                    shardOf[i] = s;
                    start[i] = e.start();
                    length[i] = (int) (e.end() - e.start());
                    keys[i] = e.key();
                    int f = e.fields().size();
                    fieldNames[i] = new String[f];
                    fieldOffsets[i] = new long[f];
                    fieldSizes[i] = new int[f];
                    for (int k = 0; k < f; k++) {
                        // The scan cut every field name out of its member's name: a String of its own each time.
                        fieldNames[i][k] = new String(e.fields().get(k).name().toCharArray());
                        fieldOffsets[i][k] = e.fields().get(k).offset() - e.start();
                        fieldSizes[i][k] = (int) e.fields().get(k).size();
                    }
                    i++;
                }
            }
        }
    }

    private static long used() {
        Runtime runtime = Runtime.getRuntime();
        for (int i = 0; i < 4; i++) {
            System.gc();
        }
        return runtime.totalMemory() - runtime.freeMemory();
    }
}
