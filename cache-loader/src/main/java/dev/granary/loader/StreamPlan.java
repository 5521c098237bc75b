// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.util.Arrays;
import java.util.Locale;

/**
 * Whether an epoch reads its shards in large parts ({@link ShardStream}) or each sample as its own extent, and if
 * in parts, which parts in which order: a pure function of the dataset's index, the epoch's order, the part size and
 * the memory budget. {@link EpochRun} asks it at the start of every epoch; a dry-run planner asks it the same
 * question to predict what the epoch will read. Immutable and thread-safe.
 *
 * <h2>The rule</h2>
 * The parts are {@link ShardParts}' (part {@code i} of a shard is {@code [i·P, min((i+1)·P, size))}); a sample needs
 * the parts its extent overlaps. Each part the epoch needs is read once, in order of its first use, and must stay held
 * from its first use to its last. So the memory an order needs is the largest total size of the parts live at one
 * position (first use ≤ position ≤ last use), its <em>working set</em>: about one part for a sequential order, the
 * blocks' shards for an order that shuffles within blocks of k shards, and the whole dataset for a global per-sample
 * shuffle. An epoch streams when:
 * <ol>
 *   <li>the dataset is a {@link ShardedDataset} (objects are read whole already);</li>
 *   <li>the working set fits the budget (the loader's {@code maxBytesInFlight}: parts held are bytes read and not
 *       yet decoded), else the read-ahead could not hold what the order needs and parts would be read again;</li>
 *   <li>the epoch uses at least {@value #MIN_USED_FRACTION} of the sample bytes in the parts it would read, else
 *       reading whole parts moves more than twice the bytes per-sample reads move (a rank whose order takes every
 *       W-th sample of each shard).</li>
 * </ol>
 * Otherwise the epoch reads each sample as its own extent, as before, and {@link #reason()} says why.
 *
 * <p>Cost: one pass over the epoch's positions, arrays over the dataset's parts (12 bytes each), and a sort of the
 * parts the epoch uses; nothing per position is kept.
 */
final class StreamPlan {

    /** The least share of the sample bytes in the parts read that the epoch must use for parts to be worth it. */
    static final double MIN_USED_FRACTION = 0.5;

    private final boolean streams;
    private final String reason;
    private final int partSize;
    private final int from;
    private final int to;
    /** Per shard, the global number of its part 0; one more entry for the total. Null without shards. */
    private final int[] partBase;
    /** Global part number → index in first-use order, or -1 if the epoch does not use the part. */
    private final int[] index;
    // The parts the epoch uses, in order of first use.
    private final int[] shard;
    private final int[] number;
    private final int[] firstUse;
    private final int[] lastUse;
    private final int[] uses;
    private final long workingSet;
    private final long partBytes;
    private final long sampleBytes;

    private StreamPlan(
            boolean streams,
            String reason,
            int partSize,
            int from,
            int to,
            int[] partBase,
            int[] index,
            int[] shard,
            int[] number,
            int[] firstUse,
            int[] lastUse,
            int[] uses,
            long workingSet,
            long partBytes,
            long sampleBytes) {
        this.streams = streams;
        this.reason = reason;
        this.partSize = partSize;
        this.from = from;
        this.to = to;
        this.partBase = partBase;
        this.index = index;
        this.shard = shard;
        this.number = number;
        this.firstUse = firstUse;
        this.lastUse = lastUse;
        this.uses = uses;
        this.workingSet = workingSet;
        this.partBytes = partBytes;
        this.sampleBytes = sampleBytes;
    }

    /**
     * The one decision of how a loader's epoch reads, for the epoch itself ({@link EpochRun}) and for its dry run
     * ({@link ReadUnits}) alike: a refused plan when the loader does not stream shards ({@code streamShards(false)}),
     * when the dataset has no shards, or when the epoch reads nothing; else {@link #decide} with the epoch's part size
     * ({@link ShardParts#forEpoch}) and the loader's stream budget.
     *
     * @param settings the loader's settings
     * @param order    the epoch's order for this rank
     * @param from     the first position the epoch reads
     * @param to       the position after the last it reads
     * @return the plan; {@link #streams()} says whether the epoch reads its shards in parts
     */
    static StreamPlan forEpoch(LoaderSettings<?> settings, int[] order, int from, int to) {
        if (!settings.streamShards()) {
            return refused(
                    "the loader reads each sample as its own extent (streamShards(false))",
                    settings.partSize(),
                    from,
                    to);
        }
        if (!(settings.dataset() instanceof ShardedDataset shards)) {
            return refused(
                    "the dataset has no shards: each sample is an object, read whole", settings.partSize(), from, to);
        }
        if (from == to) {
            return refused("the epoch reads no sample", settings.partSize(), from, to);
        }
        return decide(
                shards, order, from, to, ShardParts.forEpoch(shards, settings.partSize()), settings.streamBudget());
    }

    /**
     * Decides how positions {@code [from, to)} of an epoch's order are read (see the class comment).
     *
     * @param dataset  the dataset the order indexes
     * @param order    the epoch's order for this rank: sample indices
     * @param from     the first position to read (a resumed epoch starts past 0)
     * @param to       the position after the last to read
     * @param partSize the part size, {@code >= ShardParts.MIN_PART_SIZE}
     * @param budget   the bytes the parts held at once may take, {@code >= 1}
     * @return the plan; {@link #streams()} says whether to stream
     * @throws IllegalArgumentException if the range, the part size or the budget is out of bounds, or the order
     *                                  holds an index outside the dataset
     */
    static StreamPlan decide(Dataset dataset, int[] order, int from, int to, int partSize, long budget) {
        if (from < 0 || to < from || to > order.length) {
            throw new IllegalArgumentException("positions: [" + from + ", " + to + ") (expected: within the order's "
                    + order.length + " positions)");
        }
        if (partSize < ShardParts.MIN_PART_SIZE) {
            throw new IllegalArgumentException(
                    "part size: " + partSize + " (expected: >= " + ShardParts.MIN_PART_SIZE + ")");
        }
        if (budget < 1) {
            throw new IllegalArgumentException("budget: " + budget + " (expected: >= 1)");
        }
        if (!(dataset instanceof ShardedDataset shards)) {
            return refused("the dataset has no shards: each sample is an object, read whole", partSize, from, to);
        }
        int shardCount = shards.shardCount();
        int[] base = new int[shardCount + 1];
        for (int s = 0; s < shardCount; s++) {
            long parts = (long) base[s] + ShardParts.count(shards.shardInfo(s).size(), partSize);
            if (parts > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("shards in parts of " + partSize + " bytes: more than 2^31 parts"
                        + " (expected: fewer; use a larger part size)");
            }
            base[s + 1] = (int) parts;
        }
        int total = base[shardCount];
        int[] first = new int[total];
        int[] last = new int[total];
        int[] count = new int[total];
        Arrays.fill(first, -1);
        int[] inOrder = new int[Math.min(total, Math.max(16, to - from))];
        int used = 0;
        long sampleBytes = 0;
        int size = dataset.size();
        for (int p = from; p < to; p++) {
            int sample = order[p];
            if (sample < 0 || sample >= size) {
                throw new IllegalArgumentException(
                        "order[" + p + "]: " + sample + " (expected: a sample index in [0, " + size + "))");
            }
            int length = shards.sampleLength(sample);
            if (length == 0) {
                continue; // an empty sample needs no bytes
            }
            sampleBytes += length;
            long start = shards.sampleStart(sample);
            int b = base[shards.shardOf(sample)];
            for (int q = ShardParts.partOf(start, partSize), end = ShardParts.partOf(start + length - 1, partSize);
                    q <= end;
                    q++) {
                int g = b + q;
                if (first[g] < 0) {
                    first[g] = p;
                    if (used == inOrder.length) {
                        inOrder = Arrays.copyOf(inOrder, (int) Math.min(total, 2L * used));
                    }
                    inOrder[used++] = g;
                }
                last[g] = p;
                count[g]++;
            }
        }
        int[] index = new int[total];
        Arrays.fill(index, -1);
        int[] shard = new int[used];
        int[] number = new int[used];
        int[] firstUse = new int[used];
        int[] lastUse = new int[used];
        int[] uses = new int[used];
        long partBytes = 0;
        for (int i = 0; i < used; i++) {
            int g = inOrder[i];
            int s = upperShard(base, g);
            index[g] = i;
            shard[i] = s;
            number[i] = g - base[s];
            firstUse[i] = first[g];
            lastUse[i] = last[g];
            uses[i] = count[g];
            partBytes += ShardParts.length(number[i], shards.shardInfo(s).size(), partSize);
        }
        long workingSet = workingSet(shards, partSize, shard, number, firstUse, lastUse);
        long available = availableBytes(shards, partSize, base, index);
        String reason;
        boolean streams;
        if (used == 0) {
            streams = false;
            reason = "the epoch reads no bytes";
        } else if (workingSet > budget) {
            streams = false;
            reason = "the order needs " + mib(workingSet) + " of shard parts held at once (expected: at most "
                    + mib(budget) + ", maxBytesInFlight; a global per-sample shuffle needs the whole dataset, a"
                    + " shuffle within blocks of k shards about k shards): shuffle within blocks of fewer shards,"
                    + " or raise maxBytesInFlight";
        } else if (sampleBytes < MIN_USED_FRACTION * available) {
            streams = false;
            reason = "the epoch uses " + sampleBytes + " of the " + available + " sample bytes in the parts it would"
                    + " read (expected: at least " + (int) (100 * MIN_USED_FRACTION) + " %): per-sample reads move"
                    + " fewer bytes";
        } else {
            streams = true;
            reason = used + " parts of " + mib(partSize) + ", " + mib(partBytes) + ", working set " + mib(workingSet)
                    + " of " + mib(budget);
        }
        return new StreamPlan(
                streams,
                reason,
                partSize,
                from,
                to,
                base,
                index,
                shard,
                number,
                firstUse,
                lastUse,
                uses,
                workingSet,
                partBytes,
                sampleBytes);
    }

    /** {@return the shard whose parts hold global part {@code g}} */
    private static int upperShard(int[] base, int g) {
        int s = Arrays.binarySearch(base, g);
        if (s < 0) {
            return -s - 2;
        }
        while (s + 1 < base.length && base[s + 1] == g) { // empty shards have no parts: skip to the one that has
            s++;
        }
        return s;
    }

    private static StreamPlan refused(String reason, int partSize, int from, int to) {
        int[] none = new int[0];
        return new StreamPlan(false, reason, partSize, from, to, null, none, none, none, none, none, none, 0, 0, 0);
    }

    /** The largest total size of the parts live at one position: a sweep over first and last uses. */
    private static long workingSet(
            ShardedDataset shards, int partSize, int[] shard, int[] number, int[] firstUse, int[] lastUse) {
        int n = shard.length;
        long[] ends = new long[n]; // (last use, part) packed, sorted: the parts in order of their last use
        for (int i = 0; i < n; i++) {
            ends[i] = (long) lastUse[i] << 32 | i;
        }
        Arrays.sort(ends);
        long live = 0;
        long peak = 0;
        int e = 0;
        for (int i = 0; i < n; i++) { // parts arrive in first-use order
            while (e < n && (int) (ends[e] >>> 32) < firstUse[i]) {
                int j = (int) ends[e++];
                live -= ShardParts.length(number[j], shards.shardInfo(shard[j]).size(), partSize);
            }
            live += ShardParts.length(number[i], shards.shardInfo(shard[i]).size(), partSize);
            peak = Math.max(peak, live);
        }
        return peak;
    }

    /** The bytes of the samples that start in the parts the epoch reads, whether or not it uses them. */
    private static long availableBytes(ShardedDataset shards, int partSize, int[] base, int[] index) {
        long bytes = 0;
        for (int s = 0; s < base.length - 1; s++) {
            boolean touched = false;
            for (int g = base[s]; g < base[s + 1] && !touched; g++) {
                touched = index[g] >= 0;
            }
            if (!touched) {
                continue;
            }
            for (int i = shards.firstSample(s); i < shards.firstSample(s + 1); i++) {
                if (index[base[s] + ShardParts.partOf(shards.sampleStart(i), partSize)] >= 0) {
                    bytes += shards.sampleLength(i);
                }
            }
        }
        return bytes;
    }

    private static String mib(long bytes) {
        return bytes % (1 << 20) == 0
                ? (bytes >> 20) + " MiB"
                : String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }

    /** {@return whether the epoch reads its shards in parts} */
    boolean streams() {
        return streams;
    }

    /**
     * {@return whether the epoch's order was weighed} True when the loader streams shards and the dataset has them,
     * so that a refusal is the order's (worth telling the user once); false when streaming never applied.
     */
    boolean considered() {
        return partBase != null;
    }

    /** {@return why it does or does not, for the log} */
    String reason() {
        return reason;
    }

    int partSize() {
        return partSize;
    }

    /** {@return the first position the plan covers} */
    int from() {
        return from;
    }

    /** {@return the position after the last one the plan covers} */
    int to() {
        return to;
    }

    /** {@return the number of parts the epoch reads (each once): its origin requests when nothing is cached} */
    int partCount() {
        return shard.length;
    }

    /** {@return the shard of part {@code i} (in first-use order)} */
    int shard(int i) {
        return shard[i];
    }

    /** {@return the number of part {@code i} within its shard, for {@link ShardParts}} */
    int number(int i) {
        return number[i];
    }

    /** {@return the first position that uses part {@code i}} */
    int firstUse(int i) {
        return firstUse[i];
    }

    /** {@return the last position that uses part {@code i}: the part is released once it is decoded} */
    int lastUse(int i) {
        return lastUse[i];
    }

    /** {@return how many positions use part {@code i} (a sample crossing into it counts once)} */
    int uses(int i) {
        return uses[i];
    }

    /**
     * {@return the index in first-use order of part {@code number} of shard {@code shard}, or -1 if the epoch does
     * not use it}
     */
    int indexOf(int shard, int number) {
        return index[partBase[shard] + number];
    }

    /** {@return the most bytes of parts the order needs held at once} */
    long workingSet() {
        return workingSet;
    }

    /** {@return the bytes of all the parts read: the origin bytes of a cold epoch} */
    long partBytes() {
        return partBytes;
    }

    /** {@return the bytes of the samples the epoch reads (each position counted)} */
    long sampleBytes() {
        return sampleBytes;
    }

    @Override
    public String toString() {
        return "StreamPlan[" + (streams ? "streams: " : "per sample: ") + reason + "]";
    }
}
