// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.granary.loader.Sampler;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;

/**
 * A trace-driven hit-ratio simulator for epoch-shuffled training, in the manner of Caffeine's {@code simulator/}: it
 * replays the order in which Granary's loader visits a dataset against several replacement policies and prints each
 * policy's steady-state hit ratio next to its ratio to the ceiling {@code C/N} ({@code BENCHMARKS.md}, "The hit-ratio
 * ceiling for epoch-shuffled training").
 *
 * <h2>The trace</h2>
 * {@code N} items, {@code E} epochs; epoch {@code e} visits every item once, in the order
 * {@code Sampler.shuffled(N, seed).epoch(e)} — the loader's own sampler, so the simulated order is the one training
 * sees. Every access is one item and all items have the same size, so capacities are counted in items. Epoch 0 is
 * the cold epoch; the <em>steady-state hit ratio</em> is hits / accesses over epochs {@code 1 … E − 1} (0-based).
 * Since each item is read once per epoch, the hits in an epoch are at most the items cached when it began: the
 * ceiling is {@code C/N} for every policy. One row per {@code C/N} (10, 25, 50 and 75 % by default).
 *
 * <h2>The subjects</h2>
 * Each is a {@link Subject}, sized in items:
 * <ul>
 *   <li><b>LRU</b> ({@link LinkedHashMapLru}), <b>FIFO</b> ({@link ArrayFifo}) and <b>never-evict once full</b>
 *       ({@link FillOnce}: admit while there is room, then refuse).</li>
 *   <li><b>Caffeine W-TinyLFU</b> ({@link CaffeineWTinyLfu}): the real library, {@code maximumSize(C)},
 *       {@code executor(Runnable::run)}; a hit is {@code getIfPresent != null}, a miss is followed by {@code put} and
 *       {@code cleanUp()} so that evictions happen before the next access.</li>
 *   <li><b>Belady MIN</b> ({@link BeladyMin}): clairvoyant over the whole trace; evicts the resident item whose next
 *       use is farthest away and bypasses (does not admit) an item whose next use is no sooner than every resident's.
 *       It is the optimum, so every other column is at most this one; O(log C) per access (an indexed heap).</li>
 *   <li><b>Granary epoch-aware</b> ({@link EpochAwareTiers}): a model of the policy Granary is building, with two
 *       exclusive tiers, memory {@code M = C/3} and disk {@code D = C − M} (so its ceiling is {@code (M + D)/N = C/N}),
 *       and exactly these rules:
 *       <ol>
 *         <li>A stamp counter {@code clock} (a {@code long}, 0 at first). Each epoch start increments it. The loader's
 *             {@code keepFrom} is 0 in its first epoch and, in every later one, the {@code clock} value at which the
 *             loader's <em>previous</em> epoch started. An item is <em>dead</em> when its stamp is below
 *             {@code keepFrom}: neither the previous epoch nor this one has touched it.</li>
 *         <li>A hit, in either tier, counts and sets the item's stamp to {@code clock}; nothing moves between
 *             tiers (no promotion).</li>
 *         <li>A miss tries memory, then disk: a tier with free room takes the item; a full tier that holds a dead
 *             item evicts one (any: each tier's dead list is collected at the epoch start, and entries touched since
 *             are skipped) and takes the item in its place; otherwise the next tier is tried, and if none takes it
 *             the item is refused (not cached). An inserted item is stamped {@code clock}.</li>
 *       </ol>
 *       So the resident set stops changing once the cache is full, and every later epoch hits exactly {@code C/N}.
 *       The same subject also runs as <b>Granary, pre-filled with foreign pages</b>: before epoch 0 both tiers are
 *       full of items that never occur in the trace (ids {@code >= N}, stamp 0), as after another job or dataset.
 *       They are not dead in epoch 0 ({@code keepFrom = 0}), so epoch 0 caches nothing; they are dead from epoch 1 on
 *       and replaced by that epoch's first {@code C} misses; epoch 2 reaches the ceiling. Both scenarios are
 *       printed epoch by epoch, with the foreign pages still resident after each epoch; the pre-filled one is left
 *       out of the steady-state table (its epoch 1 is a second cold epoch) but has its JSON line.</li>
 * </ul>
 *
 * <h2>What it does not model</h2>
 * Items of different sizes (real samples and pages vary, so a tier holds a varying count and byte-weighted and
 * count-weighted ratios differ); fragmentation and the slab or segment granularity of real tiers (space freed by one
 * eviction may not fit the next item); concurrency (many readers, prefetching and asynchronous fills reorder accesses
 * and let the same item miss twice in flight); sharding across ranks and partial or restarted epochs; several
 * datasets or jobs sharing a cache; time and bandwidth (a hit in memory and one on disk count the same here, and
 * which tier hits is what throughput depends on). It counts hits, nothing else.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -o -pl cache-benchmarks -DskipTests package
 * ./mvnw -q -o -pl cache-benchmarks exec:exec@simulate
 * ./mvnw -q -o -pl cache-benchmarks exec:exec@simulate -Dsim.args="--items=20000 --epochs=8 --fractions=0.05,0.5"
 * </pre>
 * Options ({@code --name=value}): {@code items} (100000), {@code epochs} (5, at least 2), {@code seed} (1),
 * {@code fractions} ({@code 0.1,0.25,0.5,0.75}: each {@code C/N} in {@code (0, 1]}). Output: a Markdown table of
 * steady-state hit ratios (each cell {@code ratio (ratio ÷ ceiling)}), a per-epoch table for the two Granary
 * scenarios, the parameters and the command that reproduces the run, then one JSON line per subject (starting with
 * <code>{"subject":</code>) for scripts. Exit status 0, or 2 for bad arguments. The replay is single-threaded and,
 * apart from Caffeine's internals, deterministic for a given seed.
 */
public final class EpochTraceSimulator {

    private EpochTraceSimulator() {}

    /**
     * A replacement policy under simulation, sized in items. Not thread-safe: a simulation drives one instance from
     * one thread, calling {@link #startEpoch} before each epoch's accesses.
     */
    interface Subject {

        /** {@return the column name} */
        String name();

        /** Called before the first access of epoch {@code epoch} (0, 1, 2, …). */
        void startEpoch(int epoch);

        /** Accesses {@code item}; on a miss the subject may cache it. {@return whether it was a hit} */
        boolean access(int item);
    }

    /** The simulation's settings, validated. */
    record Config(int items, int epochs, long seed, List<Double> fractions) {

        Config {
            require(items >= 1, "items: " + items + " (expected: >= 1)");
            require(epochs >= 2, "epochs: " + epochs + " (expected: >= 2; epoch 0 is cold)");
            require((long) items * epochs < Integer.MAX_VALUE,
                    "trace: " + items + " x " + epochs + " accesses (expected: fewer than 2^31 - 1)");
            require(!fractions.isEmpty(), "fractions: none (expected: at least one C/N)");
            for (double f : fractions) {
                require(f > 0 && f <= 1, "fraction: " + f + " (expected: 0 < C/N <= 1)");
                require(Math.round(f * items) >= 1, "fraction: " + f + " of " + items + " items (expected: >= 1 item)");
            }
            fractions = List.copyOf(fractions);
        }

        /** {@return the capacity {@code C} for a {@code C/N} of {@code fraction}, in items} */
        int capacity(double fraction) {
            return (int) Math.round(fraction * items);
        }

        static Config parse(String[] args) {
            String items = "100000";
            String epochs = "5";
            String seed = "1";
            String fractions = "0.1,0.25,0.5,0.75";
            for (String arg : args) {
                if (arg.isBlank()) {
                    continue;
                }
                int eq = arg.indexOf('=');
                String name = arg.startsWith("--") && eq > 2 ? arg.substring(2, eq) : "";
                String value = arg.substring(eq + 1);
                switch (name) {
                    case "items" -> items = value;
                    case "epochs" -> epochs = value;
                    case "seed" -> seed = value;
                    case "fractions" -> fractions = value;
                    default -> throw new IllegalArgumentException("argument: '" + arg + "' (expected: --items=N,"
                            + " --epochs=E, --seed=S or --fractions=F,F,...)");
                }
            }
            List<Double> parsed = new ArrayList<>();
            for (String f : fractions.split(",")) {
                try {
                    parsed.add(Double.parseDouble(f.strip()));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("fraction: '" + f + "' (expected: a number in (0, 1])", e);
                }
            }
            return new Config(integer(items, "items"), integer(epochs, "epochs"), longInteger(seed, "seed"), parsed);
        }

        /** {@return the options, every one explicit, that reproduce this configuration} */
        String toArgs() {
            StringJoiner f = new StringJoiner(",");
            fractions.forEach(x -> f.add(Double.toString(x)));
            return "--items=" + items + " --epochs=" + epochs + " --seed=" + seed + " --fractions=" + f;
        }

        private static int integer(String value, String name) {
            long v = longInteger(value, name);
            if (v != (int) v) {
                throw new IllegalArgumentException(name + ": " + value + " (expected: an int)");
            }
            return (int) v;
        }

        private static long longInteger(String value, String name) {
            try {
                return Long.parseLong(value.strip().replace("_", ""));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(name + ": '" + value + "' (expected: an integer)", e);
            }
        }
    }

    /**
     * What one subject did at one capacity.
     *
     * @param subject       the subject's name
     * @param capacity      {@code C}, in items
     * @param items         {@code N}, the accesses per epoch
     * @param hitsPerEpoch  hits in each epoch
     * @param foreignAfter  foreign items still resident after each epoch (pre-filled scenario), else {@code null}
     * @param seconds       wall time of the replay
     */
    record Outcome(String subject, int capacity, int items, long[] hitsPerEpoch, long[] foreignAfter,
                   double seconds) {

        double ceiling() {
            return (double) capacity / items;
        }

        /** {@return hits / accesses over epochs {@code 1 … E − 1}} */
        double steadyState() {
            long hits = 0;
            for (int e = 1; e < hitsPerEpoch.length; e++) {
                hits += hitsPerEpoch[e];
            }
            return (double) hits / ((long) items * (hitsPerEpoch.length - 1));
        }

        double epoch(int e) {
            return (double) hitsPerEpoch[e] / items;
        }
    }

    /**
     * A subject as the output lists it, built for a capacity and the whole trace; {@code steady} if it belongs in the
     * steady-state table (the pre-filled scenario's epoch 1 is a second cold epoch, so it is shown per epoch only).
     */
    record Column(String name, boolean steady, SubjectFactory factory) {}

    /** Builds a subject for capacity {@code capacity} (items) over {@code trace} (one array per epoch). */
    @FunctionalInterface
    interface SubjectFactory {
        Subject create(int capacity, int[][] trace);
    }

    static final String GRANARY = "Granary epoch-aware";
    static final String GRANARY_PREFILLED = "Granary, pre-filled with foreign pages";

    static final List<Column> COLUMNS = List.of(
            new Column("LRU", true, (c, t) -> new LinkedHashMapLru(c)),
            new Column("FIFO", true, (c, t) -> new ArrayFifo(c, t)),
            new Column("Caffeine W-TinyLFU", true, (c, t) -> new CaffeineWTinyLfu(c)),
            new Column("never-evict once full", true, (c, t) -> new FillOnce(c, t)),
            new Column(GRANARY, true, (c, t) -> EpochAwareTiers.splitThirds(c, t, false)),
            new Column(GRANARY_PREFILLED, false, (c, t) -> EpochAwareTiers.splitThirds(c, t, true)),
            new Column("Belady MIN", true, BeladyMin::new));

    /** {@return the trace: epoch {@code e} is {@code Sampler.shuffled(items, seed).epoch(e)}} */
    static int[][] trace(int items, int epochs, long seed) {
        Sampler sampler = Sampler.shuffled(items, seed);
        int[][] trace = new int[epochs][];
        for (int e = 0; e < epochs; e++) {
            trace[e] = sampler.epoch(e);
        }
        return trace;
    }

    /** Replays {@code trace} against {@code subject}. {@return the hits of each epoch} */
    static long[] replay(Subject subject, int[][] trace) {
        long[] hits = new long[trace.length];
        for (int e = 0; e < trace.length; e++) {
            hits[e] = replayEpoch(subject, trace, e);
        }
        return hits;
    }

    /** Starts epoch {@code epoch} of {@code subject} and replays it. {@return its hits} */
    static long replayEpoch(Subject subject, int[][] trace, int epoch) {
        subject.startEpoch(epoch);
        long hits = 0;
        for (int item : trace[epoch]) {
            if (subject.access(item)) {
                hits++;
            }
        }
        return hits;
    }

    /** Builds the subject of {@code column} for {@code capacity} and replays the trace. */
    static Outcome simulate(Column column, int capacity, int[][] trace) {
        long start = System.nanoTime();
        Subject subject = column.factory().create(capacity, trace);
        long[] hits = new long[trace.length];
        long[] foreign = subject instanceof EpochAwareTiers ? new long[trace.length] : null;
        for (int e = 0; e < trace.length; e++) {
            hits[e] = replayEpoch(subject, trace, e);
            if (subject instanceof EpochAwareTiers tiers) {
                foreign[e] = tiers.foreignResident();
            }
        }
        return new Outcome(column.name(), capacity, trace[0].length, hits, foreign,
                (System.nanoTime() - start) / 1e9);
    }

    /**
     * Runs the simulation.
     *
     * @param args options, see the class comment
     */
    public static void main(String[] args) {
        Locale.setDefault(Locale.ROOT);
        Config config;
        try {
            config = Config.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("granary simulate: " + e.getMessage());
            System.exit(2);
            return;
        }
        long t0 = System.nanoTime();
        int[][] trace = trace(config.items(), config.epochs(), config.seed());
        double traceSeconds = (System.nanoTime() - t0) / 1e9;

        // outcomes[row][column]
        List<Outcome[]> rows = new ArrayList<>();
        for (double fraction : config.fractions()) {
            Outcome[] row = new Outcome[COLUMNS.size()];
            for (int c = 0; c < row.length; c++) {
                row[c] = simulate(COLUMNS.get(c), config.capacity(fraction), trace);
            }
            rows.add(row);
        }
        print(config, rows, traceSeconds, (System.nanoTime() - t0) / 1e9);
    }

    private static void print(Config config, List<Outcome[]> rows, double traceSeconds, double totalSeconds) {
        int epochs = config.epochs();
        System.out.printf("# Epoch-shuffled trace: steady-state hit ratio (epochs 1..%d of 0..%d), cell = ratio"
                + " (ratio / ceiling)%n%n", epochs - 1, epochs - 1);
        StringBuilder header = new StringBuilder("| C/N | ceiling |");
        StringBuilder rule = new StringBuilder("|---|---|");
        for (Column c : COLUMNS) {
            if (c.steady()) {
                header.append(' ').append(c.name()).append(" |");
                rule.append("---|");
            }
        }
        System.out.println(header);
        System.out.println(rule);
        for (Outcome[] row : rows) {
            StringBuilder line = new StringBuilder(String.format("| %s | %.3f |", percent(row[0]), row[0].ceiling()));
            for (int c = 0; c < row.length; c++) {
                if (COLUMNS.get(c).steady()) {
                    Outcome o = row[c];
                    line.append(String.format(" %.3f (%.2f) |", o.steadyState(), o.steadyState() / o.ceiling()));
                }
            }
            System.out.println(line);
        }

        System.out.printf("%n# Granary epoch-aware, hit ratio per epoch (memory M = C/3, disk D = C - M, exclusive)"
                + "%n%n| C/N | scenario |");
        for (int e = 0; e < epochs; e++) {
            System.out.printf(" epoch %d |", e);
        }
        System.out.printf(" foreign pages resident after each epoch |%n|---|---|%s---|%n", "---|".repeat(epochs));
        for (Outcome[] row : rows) {
            for (Outcome o : row) {
                if (o.foreignAfter() == null) {
                    continue;
                }
                StringBuilder line = new StringBuilder(String.format("| %s | %s |", percent(o),
                        o.subject().equals(GRANARY) ? "empty at start" : "pre-filled with foreign pages"));
                for (int e = 0; e < epochs; e++) {
                    line.append(String.format(" %.3f (%.2f) |", o.epoch(e), o.epoch(e) / o.ceiling()));
                }
                StringJoiner foreign = new StringJoiner(", ", " ", " |");
                Arrays.stream(o.foreignAfter()).forEach(f -> foreign.add(Long.toString(f)));
                System.out.println(line.append(foreign));
            }
        }

        Outcome[] first = rows.getFirst();
        System.out.printf("%nparameters: N = %d items, E = %d epochs, seed = %d, order = Sampler.shuffled(N, seed)"
                        + ".epoch(e), equal-size items; capacities C = %s items; Granary M:D = C/3 : C - C/3 (%s)%n",
                config.items(), epochs, config.seed(), capacities(config), splits(config));
        StringJoiner seconds = new StringJoiner(", ");
        for (int c = 0; c < first.length; c++) {
            double s = 0;
            for (Outcome[] row : rows) {
                s += row[c].seconds();
            }
            seconds.add(String.format("%s %.2f s", first[c].subject(), s));
        }
        System.out.printf("time: trace %.2f s; replays (all rows) %s; total %.2f s; Java %s%n", traceSeconds, seconds,
                totalSeconds, Runtime.version());
        System.out.printf("command: ./mvnw -q -o -pl cache-benchmarks exec:exec@simulate -Dsim.args=\"%s\"%n%n",
                config.toArgs());

        for (int c = 0; c < first.length; c++) {
            StringJoiner json = new StringJoiner(",", "{", "}");
            json.add("\"subject\":\"" + first[c].subject() + "\"").add("\"items\":" + config.items())
                    .add("\"epochs\":" + epochs).add("\"seed\":" + config.seed());
            StringJoiner list = new StringJoiner(",", "\"rows\":[", "]");
            for (Outcome[] row : rows) {
                Outcome o = row[c];
                StringJoiner perEpoch = new StringJoiner(",", "[", "]");
                for (int e = 0; e < epochs; e++) {
                    perEpoch.add(String.format("%.6f", o.epoch(e)));
                }
                list.add(String.format("{\"fraction\":%s,\"capacity\":%d,\"ceiling\":%.6f,\"hitRatio\":%.6f,"
                                + "\"ofCeiling\":%.6f,\"perEpoch\":%s,\"seconds\":%.3f}", o.ceiling(), o.capacity(),
                        o.ceiling(), o.steadyState(), o.steadyState() / o.ceiling(), perEpoch, o.seconds()));
            }
            System.out.println(json.add(list.toString()));
        }
    }

    private static String percent(Outcome o) {
        return String.format("%.4g %%", 100.0 * o.capacity() / o.items()).replaceAll("\\.?0+ %", " %");
    }

    private static String capacities(Config config) {
        StringJoiner j = new StringJoiner(", ");
        config.fractions().forEach(f -> j.add(Integer.toString(config.capacity(f))));
        return j.toString();
    }

    private static String splits(Config config) {
        StringJoiner j = new StringJoiner(", ");
        for (double f : config.fractions()) {
            int c = config.capacity(f);
            j.add(c / 3 + " + " + (c - c / 3));
        }
        return j.toString();
    }

    private static void require(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException(message);
        }
    }

    private static int checkCapacity(int capacity) {
        require(capacity >= 1, "capacity: " + capacity + " (expected: >= 1 item)");
        return capacity;
    }

    /** The largest item id in {@code trace}, plus one. */
    private static int idSpace(int[][] trace) {
        int max = -1;
        for (int[] epoch : trace) {
            for (int item : epoch) {
                require(item >= 0, "item: " + item + " (expected: >= 0)");
                max = Math.max(max, item);
            }
        }
        return max + 1;
    }

    /** Least recently used, by a {@link LinkedHashMap} in access order. */
    static final class LinkedHashMapLru implements Subject {
        private final Map<Integer, Boolean> map;

        LinkedHashMapLru(int capacity) {
            checkCapacity(capacity);
            map = new LinkedHashMap<>(2 * capacity, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(Map.Entry<Integer, Boolean> eldest) {
                    return size() > capacity;
                }
            };
        }

        @Override
        public String name() {
            return "LRU";
        }

        @Override
        public void startEpoch(int epoch) {}

        @Override
        public boolean access(int item) {
            if (map.get(item) != null) {
                return true;
            }
            map.put(item, Boolean.TRUE);
            return false;
        }
    }

    /** First in, first out: a hit does not reorder; a miss evicts the oldest insert. */
    static final class ArrayFifo implements Subject {
        private final int capacity;
        private final boolean[] resident;
        private final ArrayDeque<Integer> order = new ArrayDeque<>();

        ArrayFifo(int capacity, int[][] trace) {
            this.capacity = checkCapacity(capacity);
            this.resident = new boolean[idSpace(trace)];
        }

        @Override
        public String name() {
            return "FIFO";
        }

        @Override
        public void startEpoch(int epoch) {}

        @Override
        public boolean access(int item) {
            if (resident[item]) {
                return true;
            }
            if (order.size() == capacity) {
                resident[order.removeFirst()] = false;
            }
            order.addLast(item);
            resident[item] = true;
            return false;
        }
    }

    /** Admits while there is room, then refuses every miss: the resident set is the first {@code C} items seen. */
    static final class FillOnce implements Subject {
        private final int capacity;
        private final boolean[] resident;
        private int size;

        FillOnce(int capacity, int[][] trace) {
            this.capacity = checkCapacity(capacity);
            this.resident = new boolean[idSpace(trace)];
        }

        @Override
        public String name() {
            return "never-evict once full";
        }

        @Override
        public void startEpoch(int epoch) {}

        @Override
        public boolean access(int item) {
            if (resident[item]) {
                return true;
            }
            if (size < capacity) {
                resident[item] = true;
                size++;
            }
            return false;
        }
    }

    /** Caffeine's W-TinyLFU, the real library, with maintenance run on the caller's thread after every insert. */
    static final class CaffeineWTinyLfu implements Subject {
        private final Cache<Integer, Boolean> cache;

        CaffeineWTinyLfu(int capacity) {
            cache = Caffeine.newBuilder().maximumSize(checkCapacity(capacity)).executor(Runnable::run).build();
        }

        @Override
        public String name() {
            return "Caffeine W-TinyLFU";
        }

        @Override
        public void startEpoch(int epoch) {}

        @Override
        public boolean access(int item) {
            if (cache.getIfPresent(item) != null) {
                return true;
            }
            cache.put(item, Boolean.TRUE);
            cache.cleanUp();
            return false;
        }
    }

    /**
     * Belady's MIN over the whole trace. Residents sit in a binary max-heap keyed by their next use (a position in the
     * flattened trace; {@link #NEVER} if none), with each item's heap slot indexed so that a hit re-keys it in
     * O(log C). Invariant: {@code slot[heap[i]] == i} for {@code i < size}, and {@code slot[x] == -1} for every item
     * {@code x} not resident.
     */
    static final class BeladyMin implements Subject {
        private static final int NEVER = Integer.MAX_VALUE;

        private final int capacity;
        private final int[] flat;
        private final int[] nextUse;
        private final int[] heap;
        private final int[] key;
        private final int[] slot;
        private int size;
        private int position;

        BeladyMin(int capacity, int[][] trace) {
            this.capacity = checkCapacity(capacity);
            int ids = idSpace(trace);
            long length = 0;
            for (int[] epoch : trace) {
                length += epoch.length;
            }
            require(length < NEVER, "trace: " + length + " accesses (expected: fewer than 2^31 - 1)");
            flat = new int[(int) length];
            int p = 0;
            for (int[] epoch : trace) {
                System.arraycopy(epoch, 0, flat, p, epoch.length);
                p += epoch.length;
            }
            nextUse = new int[flat.length];
            int[] seen = new int[ids];
            Arrays.fill(seen, NEVER);
            for (int i = flat.length - 1; i >= 0; i--) {
                nextUse[i] = seen[flat[i]];
                seen[flat[i]] = i;
            }
            heap = new int[Math.min(capacity, ids)];
            key = new int[ids];
            slot = new int[ids];
            Arrays.fill(slot, -1);
        }

        @Override
        public String name() {
            return "Belady MIN";
        }

        @Override
        public void startEpoch(int epoch) {}

        @Override
        public boolean access(int item) {
            int p = position++;
            if (p >= flat.length || flat[p] != item) {
                throw new IllegalStateException("access " + p + ": item " + item + " (expected: the trace's "
                        + (p < flat.length ? "item " + flat[p] : "end") + ")");
            }
            int next = nextUse[p];
            int s = slot[item];
            if (s >= 0) {
                key[item] = next; // later than p, the old key: the item can only move up
                siftUp(s);
                return true;
            }
            if (size == heap.length) {
                int farthest = heap[0];
                if (next >= key[farthest]) {
                    return false; // bypass: every resident is needed no later than this item
                }
                slot[farthest] = -1;
                key[item] = next;
                heap[0] = item;
                slot[item] = 0;
                siftDown(0);
            } else {
                key[item] = next;
                heap[size] = item;
                slot[item] = size;
                siftUp(size++);
            }
            return false;
        }

        private void siftUp(int i) {
            int item = heap[i];
            while (i > 0) {
                int parent = (i - 1) >>> 1;
                if (key[heap[parent]] >= key[item]) {
                    break;
                }
                place(heap[parent], i);
                i = parent;
            }
            place(item, i);
        }

        private void siftDown(int i) {
            int item = heap[i];
            while (true) {
                int child = 2 * i + 1;
                if (child >= size) {
                    break;
                }
                if (child + 1 < size && key[heap[child + 1]] > key[heap[child]]) {
                    child++;
                }
                if (key[heap[child]] <= key[item]) {
                    break;
                }
                place(heap[child], i);
                i = child;
            }
            place(item, i);
        }

        private void place(int item, int i) {
            heap[i] = item;
            slot[item] = i;
        }
    }

    /**
     * The model of Granary's epoch-aware policy: two exclusive tiers (memory, then disk) with the stamp and
     * {@code keepFrom} rules of the class comment. Item ids {@code >= N} are the foreign pages of the pre-filled
     * scenario.
     */
    static final class EpochAwareTiers implements Subject {
        private static final byte NONE = 0;

        private final String name;
        private final int items;
        private final int[] capacity; // [0] unused; [1] memory, [2] disk
        private final int[] count = new int[3];
        private final byte[] tierOf; // NONE, 1 or 2: exclusive by construction
        private final long[] stamp;
        private final int[][] dead = new int[3][];
        private final int[] deadSize = new int[3];
        private final int[] deadNext = new int[3];
        private long clock;
        private long epochStart = -1; // the clock at which the current epoch started; -1 before the first
        private long keepFrom;

        /** Memory {@code C/3}, disk {@code C − C/3}; optionally both full of foreign pages. */
        static EpochAwareTiers splitThirds(int capacity, int[][] trace, boolean prefillForeign) {
            checkCapacity(capacity);
            return new EpochAwareTiers(capacity / 3, capacity - capacity / 3, idSpace(trace), prefillForeign);
        }

        EpochAwareTiers(int memory, int disk, int items, boolean prefillForeign) {
            require(memory >= 0 && disk >= 0 && memory + disk >= 1,
                    "tiers: memory " + memory + ", disk " + disk + " (expected: >= 0 each, >= 1 in all)");
            this.name = prefillForeign ? GRANARY_PREFILLED : GRANARY;
            this.items = items;
            this.capacity = new int[] {0, memory, disk};
            int ids = items + (prefillForeign ? memory + disk : 0);
            tierOf = new byte[ids];
            stamp = new long[ids];
            if (prefillForeign) {
                for (int id = items; id < ids; id++) {
                    int tier = id < items + memory ? 1 : 2;
                    tierOf[id] = (byte) tier;
                    count[tier]++;
                    // stamp 0, the clock before any epoch
                }
            }
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public void startEpoch(int epoch) {
            long previousStart = epochStart;
            clock++;
            epochStart = clock;
            keepFrom = previousStart < 0 ? 0 : previousStart;
            for (int tier = 1; tier <= 2; tier++) {
                int[] list = dead[tier] == null || dead[tier].length < count[tier] ? new int[count[tier]] : dead[tier];
                int n = 0;
                for (int id = 0; id < tierOf.length; id++) {
                    if (tierOf[id] == tier && stamp[id] < keepFrom) {
                        list[n++] = id;
                    }
                }
                dead[tier] = list;
                deadSize[tier] = n;
                deadNext[tier] = 0;
            }
        }

        @Override
        public boolean access(int item) {
            if (tierOf[item] != NONE) {
                stamp[item] = clock;
                return true;
            }
            for (int tier = 1; tier <= 2; tier++) {
                if (count[tier] < capacity[tier] || evictDead(tier)) {
                    tierOf[item] = (byte) tier;
                    stamp[item] = clock;
                    count[tier]++;
                    return false;
                }
            }
            return false; // refused
        }

        /** Evicts one item of {@code tier} that is still dead. {@return false if there is none} */
        private boolean evictDead(int tier) {
            int[] list = dead[tier];
            while (deadNext[tier] < deadSize[tier]) {
                int id = list[deadNext[tier]++];
                if (tierOf[id] == tier && stamp[id] < keepFrom) {
                    tierOf[id] = NONE;
                    count[tier]--;
                    return true;
                }
            }
            return false;
        }

        /** {@return the items resident in {@code tier} (1 memory, 2 disk)} */
        int resident(int tier) {
            return count[tier];
        }

        /** {@return how many foreign pages (ids {@code >= N}) are still resident} */
        long foreignResident() {
            long n = 0;
            for (int id = items; id < tierOf.length; id++) {
                if (tierOf[id] != NONE) {
                    n++;
                }
            }
            return n;
        }
    }
}
