// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
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
 * ceiling is {@code C/N} for every policy that holds {@code C} items (for the real tiers, their measured capacity
 * over {@code N}; below). One row per {@code C/N} (10, 25, 50 and 75 % by default).
 *
 * <h2>The subjects</h2>
 * Each is a {@link Subject}, one file per policy, sized in items:
 * <ul>
 *   <li><b>LRU</b> ({@link LruSubject}), <b>FIFO</b> ({@link FifoSubject}) and <b>never-evict once full</b>
 *       ({@link FillOnceSubject}: admit while there is room, then refuse).</li>
 *   <li><b>Caffeine W-TinyLFU</b> ({@link CaffeineSubject}): the real library, {@code maximumSize(C)},
 *       {@code executor(Runnable::run)}; a hit is {@code getIfPresent != null}, a miss is followed by {@code put} and
 *       {@code cleanUp()} so that evictions happen before the next access.</li>
 *   <li><b>Belady MIN</b> ({@link BeladyMinSubject}): clairvoyant over the whole trace; evicts the resident item whose
 *       next use is farthest away and bypasses (does not admit) an item whose next use is no sooner than every
 *       resident's. It is the optimum, so every other column is at most this one; O(log C) per access.</li>
 *   <li><b>Granary (real tiers)</b> ({@link GranarySubject}): not a model but the shipped code — a {@code TieredCache}
 *       over a {@code MemoryTier} of {@code M = C/3} items' bytes and a {@code DiskTier} of {@code D = C − M} items'
 *       bytes (a temporary directory, deleted afterwards), over an in-process origin of 1 KiB objects, driven by
 *       {@code cache.loaderSupport().driver()} ({@code startEpoch()} before each epoch, {@code endEpoch()} after) and
 *       read with {@code cache.read(key)} as {@code ObjectDataset} does. A hit is a read that made no origin read.
 *       The real tiers hold fewer than {@code C} items (record and segment headers, whole segments), so this row's
 *       ceiling is their <em>measured</em> capacity in items: a fresh pair of tiers with the same settings, filled
 *       inside a driver's first epoch (which protects every page, so the tiers take pages only into free room) with
 *       items that are not in the trace until they refuse 16 in a row; the ceiling is how many they kept. Its cells
 *       are {@code ratio (ratio ÷ measured ceiling)}. It also runs as <b>pre-filled with foreign pages</b>: that same
 *       fill is done on the row's own tiers by another driver, then closed (as after another job or dataset). The
 *       loader's first epoch protects those pages, so epoch 0 caches nothing; from epoch 1 they are dead and
 *       replaced, and epoch 2 reaches the ceiling. Both scenarios are printed epoch by epoch with the measured ceiling
 *       and the foreign pages still resident after each epoch (looked up with {@code Tier.peek}, which neither stamps
 *       nor promotes); the pre-filled one is left out of the steady-state table (its epoch 1 is a second cold epoch).
 *       The real tiers cost about 70 µs an access on a loaded 2-core machine, so the Granary rows run a trace of their
 *       own of {@code --granary-items} items (default {@code min(N, 20 000)}), same seed, epochs and fractions.</li>
 * </ul>
 *
 * <h2>What it does not model</h2>
 * Items of different sizes (real samples vary, so a tier holds a varying count and byte-weighted and count-weighted
 * ratios differ); concurrency (many readers, prefetching and asynchronous fills reorder accesses and let the same
 * item miss twice in flight); sharding across ranks ({@link NodeCacheSimulator} does: a cache per node under each
 * partitioning) and partial or restarted epochs; time and bandwidth (a hit in
 * memory and one on disk count the same here, and which tier hits is what throughput depends on). It counts hits,
 * nothing else; only the Granary rows pay real tiers' per-page overheads.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@simulate
 * ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@simulate -Dsim.args="--items=20000 --epochs=8"
 * </pre>
 * Options ({@code --name=value}): {@code items} (100000), {@code epochs} (5, at least 2), {@code seed} (1),
 * {@code fractions} ({@code 0.1,0.25,0.5,0.75}: each {@code C/N} in {@code (0, 1]}), {@code granary-items}
 * ({@code min(items, 20000)}; the memory third must be at least 64 KiB, 64 items). Output: a Markdown table of
 * steady-state hit ratios (each cell {@code ratio (ratio ÷ ceiling)}), a per-epoch table for the two Granary
 * scenarios, the parameters and the command that reproduces the run, then one JSON line per subject (starting with
 * <code>{"subject":</code>) for scripts. Exit status 0, or 2 for bad arguments. The replay is single-threaded and,
 * apart from Caffeine's internals, deterministic for a given seed (the Granary rows' fills run on the cache's virtual
 * threads, but one at a time).
 */
public final class EpochTraceSimulator {

    private EpochTraceSimulator() {}

    /**
     * What one subject did at one capacity.
     *
     * @param subject       the subject's name
     * @param capacity      {@code C}, in items
     * @param ceilingItems  the most items the subject can hold: {@code C}, or the real tiers' measured capacity
     * @param items         {@code N}, the accesses per epoch
     * @param hitsPerEpoch  hits in each epoch
     * @param foreignAfter  foreign items still resident after each epoch (Granary rows), else {@code null}
     * @param seconds       wall time of building the subject and replaying the trace
     */
    record Outcome(
            String subject,
            int capacity,
            int ceilingItems,
            int items,
            long[] hitsPerEpoch,
            long[] foreignAfter,
            double seconds) {

        /** {@return the hit-ratio ceiling: the items the subject can hold over {@code N}} */
        double ceiling() {
            return (double) ceilingItems / items;
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
     * steady-state table (the pre-filled scenario's epoch 1 is a second cold epoch, so it is shown per epoch only);
     * {@code granary} if it runs the real tiers (its per-epoch hits and foreign pages get a table of their own).
     */
    record Column(String name, boolean steady, boolean granary, SubjectFactory factory) {}

    /** Builds a subject for capacity {@code capacity} (items) over {@code trace} (one array per epoch). */
    @FunctionalInterface
    interface SubjectFactory {
        Subject create(int capacity, int[][] trace) throws IOException;
    }

    static final String GRANARY = GranarySubject.NAME;
    static final String GRANARY_PREFILLED = GranarySubject.NAME_PREFILLED;

    static final List<Column> COLUMNS = List.of(
            new Column("LRU", true, false, (c, t) -> new LruSubject(c)),
            new Column("FIFO", true, false, FifoSubject::new),
            new Column("Caffeine W-TinyLFU", true, false, (c, t) -> new CaffeineSubject(c)),
            new Column("never-evict once full", true, false, FillOnceSubject::new),
            new Column(GRANARY, true, true, (c, t) -> GranarySubject.splitThirds(c, t, false)),
            new Column(GRANARY_PREFILLED, false, true, (c, t) -> GranarySubject.splitThirds(c, t, true)),
            new Column("Belady MIN", true, false, BeladyMinSubject::new));

    /**
     * Builds the subject of {@code column} for {@code capacity}, replays the trace and closes the subject.
     *
     * @throws IOException if a subject on real tiers fails to read or to clean up
     */
    static Outcome simulate(Column column, int capacity, int[][] trace) throws IOException {
        long start = System.nanoTime();
        long[] hits = new long[trace.length];
        long[] foreign = column.granary() ? new long[trace.length] : null;
        int ceiling;
        try (Subject subject = column.factory().create(capacity, trace)) {
            ceiling = subject.ceilingItems();
            for (int e = 0; e < trace.length; e++) {
                hits[e] = Trace.replayEpoch(subject, trace, e);
                if (foreign != null) {
                    foreign[e] = subject.foreignResident();
                }
            }
        }
        return new Outcome(
                column.name(), capacity, ceiling, trace[0].length, hits, foreign, (System.nanoTime() - start) / 1e9);
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
        int[][] trace = Trace.shuffled(config.items(), config.epochs(), config.seed());
        int[][] granaryTrace = config.granaryItems() == config.items()
                ? trace
                : Trace.shuffled(config.granaryItems(), config.epochs(), config.seed());
        double traceSeconds = (System.nanoTime() - t0) / 1e9;

        // outcomes[row][column]
        List<Outcome[]> rows = new ArrayList<>();
        for (double fraction : config.fractions()) {
            Outcome[] row = new Outcome[COLUMNS.size()];
            for (int c = 0; c < row.length; c++) {
                try {
                    Column column = COLUMNS.get(c);
                    row[c] = column.granary()
                            ? simulate(column, Config.capacity(fraction, config.granaryItems()), granaryTrace)
                            : simulate(column, config.capacity(fraction), trace);
                } catch (IllegalArgumentException e) { // settings the real tiers cannot take (too small a tier)
                    System.err.println("granary simulate: " + e.getMessage());
                    System.exit(2);
                    return;
                } catch (IOException e) {
                    throw new UncheckedIOException(COLUMNS.get(c).name() + " at C/N " + fraction + ": " + e, e);
                }
            }
            rows.add(row);
        }
        print(config, rows, traceSeconds, (System.nanoTime() - t0) / 1e9);
    }

    private static void print(Config config, List<Outcome[]> rows, double traceSeconds, double totalSeconds) {
        int epochs = config.epochs();
        System.out.printf(
                "# Epoch-shuffled trace: steady-state hit ratio (epochs 1..%d of 0..%d), cell = ratio"
                        + " (ratio / ceiling)%n%n",
                epochs - 1, epochs - 1);
        StringBuilder header = new StringBuilder("| C/N | ceiling |");
        StringBuilder rule = new StringBuilder("|---|---|");
        for (Column c : COLUMNS) {
            if (c.steady()) {
                header.append(' ').append(c.name());
                if (c.granary() && config.granaryItems() != config.items()) {
                    header.append(", N = ").append(config.granaryItems());
                }
                header.append(" |");
                rule.append("---|");
            }
        }
        System.out.println(header);
        System.out.println(rule);
        for (Outcome[] row : rows) {
            StringBuilder line = new StringBuilder(
                    String.format("| %s | %.3f |", percent(row[0]), (double) row[0].capacity() / row[0].items()));
            for (int c = 0; c < row.length; c++) {
                if (COLUMNS.get(c).steady()) {
                    Outcome o = row[c];
                    line.append(String.format(" %.3f (%.2f) |", o.steadyState(), o.steadyState() / o.ceiling()));
                }
            }
            System.out.println(line);
        }

        System.out.printf("%n# Granary on real tiers (MemoryTier M = C/3 items' bytes, DiskTier D = C - M items'"
                + " bytes),"
                + " driven by an EpochDriver: hit ratio per epoch (ratio / the tiers' measured ceiling)%n%n"
                + "| C/N | scenario | measured ceiling, items (of C) |");
        for (int e = 0; e < epochs; e++) {
            System.out.printf(" epoch %d |", e);
        }
        System.out.printf(" foreign pages resident after each epoch |%n|---|---|---|%s---|%n", "---|".repeat(epochs));
        for (Outcome[] row : rows) {
            for (Outcome o : row) {
                if (o.foreignAfter() == null) {
                    continue;
                }
                StringBuilder line = new StringBuilder(String.format(
                        "| %s | %s | %d (%.3f) |",
                        percent(o),
                        o.subject().equals(GRANARY) ? "empty at start" : "pre-filled with foreign pages",
                        o.ceilingItems(),
                        (double) o.ceilingItems() / o.capacity()));
                for (int e = 0; e < epochs; e++) {
                    line.append(String.format(" %.3f (%.2f) |", o.epoch(e), o.epoch(e) / o.ceiling()));
                }
                StringJoiner foreign = new StringJoiner(", ", " ", " |");
                Arrays.stream(o.foreignAfter()).forEach(f -> foreign.add(Long.toString(f)));
                System.out.println(line.append(foreign));
            }
        }

        Outcome[] first = rows.getFirst();
        System.out.printf(
                "%nparameters: N = %d items, E = %d epochs, seed = %d, order = Sampler.shuffled(N, seed)"
                        + ".epoch(e), equal-size items; capacities C = %s items; Granary rows: N = %d, M:D = C/3 :"
                        + " C - C/3 (%s) items of %d bytes, disk segments of %d bytes%n",
                config.items(),
                epochs,
                config.seed(),
                capacities(config),
                config.granaryItems(),
                splits(config),
                GranarySubject.ITEM_BYTES,
                GranarySubject.SEGMENT_BYTES);
        StringJoiner seconds = new StringJoiner(", ");
        for (int c = 0; c < first.length; c++) {
            double s = 0;
            for (Outcome[] row : rows) {
                s += row[c].seconds();
            }
            seconds.add(String.format("%s %.2f s", first[c].subject(), s));
        }
        System.out.printf(
                "time: trace %.2f s; replays (all rows) %s; total %.2f s; Java %s%n",
                traceSeconds, seconds, totalSeconds, Runtime.version());
        System.out.printf(
                "command: ./mvnw -q -o -DskipTests -pl cache-benchmarks -am package exec:exec@simulate"
                        + " -Dsim.args=\"%s\"%n%n",
                config.toArgs());

        for (int c = 0; c < first.length; c++) {
            StringJoiner json = new StringJoiner(",", "{", "}");
            json.add("\"subject\":\"" + first[c].subject() + "\"")
                    .add("\"items\":" + first[c].items())
                    .add("\"epochs\":" + epochs)
                    .add("\"seed\":" + config.seed());
            StringJoiner list = new StringJoiner(",", "\"rows\":[", "]");
            for (Outcome[] row : rows) {
                Outcome o = row[c];
                StringJoiner perEpoch = new StringJoiner(",", "[", "]");
                for (int e = 0; e < epochs; e++) {
                    perEpoch.add(String.format("%.6f", o.epoch(e)));
                }
                list.add(String.format(
                        "{\"fraction\":%s,\"capacity\":%d,\"ceilingItems\":%d,\"ceiling\":%.6f,"
                                + "\"hitRatio\":%.6f,\"ofCeiling\":%.6f,\"perEpoch\":%s,\"seconds\":%.3f}",
                        (double) o.capacity() / o.items(),
                        o.capacity(),
                        o.ceilingItems(),
                        o.ceiling(),
                        o.steadyState(),
                        o.steadyState() / o.ceiling(),
                        perEpoch,
                        o.seconds()));
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
            int c = Config.capacity(f, config.granaryItems());
            j.add(c / 3 + " + " + (c - c / 3));
        }
        return j.toString();
    }
}
