// SPDX-License-Identifier: Apache-2.0
package dev.granary.cli;

import dev.granary.NoSuchObjectException;
import dev.granary.ObjectInfo;
import dev.granary.PrestageResult;
import dev.granary.Progress;
import dev.granary.TieredCache;
import dev.granary.spi.Origin;
import dev.granary.tier.DiskTier;
import dev.granary.tier.DiskTierInspection;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.stream.Stream;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code granary prestage}: {@link TieredCache#prestage} of an origin's prefix (or a list of keys) into a disk-tier
 * directory, with a progress bar on a terminal and plain lines otherwise. Ctrl-C cancels cleanly: pages in flight
 * finish, what was staged stays, and running the command again resumes.
 */
@Command(
        name = "prestage",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Pull a dataset from its origin into a disk-tier directory before a job starts, so the job's"
                    + " first epoch reads local disk. Objects already staged are skipped: run it again to resume.",
            "",
            "  granary prestage s3://train-data/imagenet/ --disk /nvme/granary --capacity 500G --prefix train/",
            "",
            "Objects are staged in pages of --page-size, which serve every read of the job's cache with the same"
                    + " page size: whole objects, and a loader's shard parts and samples. WebDataset shards are staged"
                    + " whole with their .gidx indexes (under a prefix, or beside shards named in --keys-from)."
        },
        footer = {"", ExitCodes.HELP})
final class PrestageCommand implements Callable<Integer> {

    @Parameters(
            index = "0",
            paramLabel = "<origin-uri>",
            description = "file:///dir, s3://bucket/prefix or gs://bucket/prefix.")
    String origin;

    @Option(
            names = "--disk",
            required = true,
            paramLabel = "<dir>",
            description = "The disk tier's directory (created if missing; must be empty or Granary's).")
    Path disk;

    @Option(
            names = "--capacity",
            required = true,
            paramLabel = "<size>",
            converter = Sizes.class,
            description = "The disk tier's capacity, such as 500G: the bound on its segment files.")
    long capacity;

    @Option(
            names = "--prefix",
            paramLabel = "<p>",
            defaultValue = "",
            description = "Stage only keys starting with this (relative to the origin URI). Default: everything.")
    String prefix;

    @Option(
            names = "--keys-from",
            paramLabel = "<file>",
            description = "Stage the keys listed in this file, one per line, instead of a prefix; the .gidx index"
                    + " beside each listed .tar shard is staged too.")
    Path keysFrom;

    @Option(
            names = "--page-size",
            paramLabel = "<size>",
            converter = Sizes.class,
            defaultValue = "1M",
            description =
                    "The cache's page size; the training job's cache must use the same. Default: ${DEFAULT-VALUE}.")
    long pageSize;

    @Option(
            names = "--progress",
            paramLabel = "<mode>",
            defaultValue = "auto",
            description = "auto (a bar on a terminal, else lines), bar, lines or none. Default: ${DEFAULT-VALUE}.")
    String progress;

    @Option(
            names = "--interval",
            paramLabel = "<seconds>",
            defaultValue = "5",
            description = "Seconds between progress lines (lines mode). Default: ${DEFAULT-VALUE}.")
    double interval;

    @Option(
            names = "--shared",
            description = "Open the directory shared (DiskTier shared(true)), as jobs that share one directory on"
                    + " the node do: stage while they run, their pages and these are one cache.")
    boolean shared;

    @Option(
            names = "--group",
            paramLabel = "<name>",
            description = "Give the directory to this group (2770, files 0660), for processes of different users"
                    + " sharing it; implies --shared.")
    String group;

    @Mixin
    Origins origins;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if (pageSize < 16 || pageSize > (1 << 30)) {
            throw new IllegalArgumentException("page size: " + pageSize + " (expected: 16 bytes to 1G)");
        }
        String mode = progress.toLowerCase(Locale.ROOT);
        if (!List.of("auto", "bar", "lines", "none").contains(mode)) {
            throw new IllegalArgumentException("progress: '" + progress + "' (expected: auto, bar, lines or none)");
        }
        if (keysFrom != null && !prefix.isEmpty()) {
            throw new IllegalArgumentException("--prefix '" + prefix + "' with --keys-from " + keysFrom
                    + " (expected: one of them: a prefix to list, or a file of keys)");
        }
        List<String> keys = keysFrom == null ? null : readKeys(keysFrom);
        if (keys != null && keys.isEmpty()) {
            throw new IllegalArgumentException(
                    "--keys-from " + keysFrom + ": no key in it (expected: one object key" + " per line)");
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Origin source = origins.open(origin);
        boolean created = !Files.exists(disk);
        DiskTier tier;
        try {
            if (keys == null) {
                requireObjects(source, prefix); // before the directory exists: a typo leaves nothing behind
            }
            DiskTier.Builder builder =
                    DiskTier.builder().directory(disk).capacity(capacity).shared(shared || group != null);
            if (group != null) {
                builder.group(group);
            }
            tier = builder.build();
        } catch (IOException | RuntimeException e) {
            source.close();
            throw e;
        }
        TieredCache cache;
        try {
            cache = TieredCache.builder(source)
                    .tier(tier)
                    .pageSize((int) pageSize)
                    .build();
        } catch (RuntimeException e) {
            tier.close();
            source.close();
            throw e;
        }
        AtomicReference<Progress> last = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(1);
        // Ctrl-C: cancel, and let the JVM exit only once the cache closed (what was staged stays consistent).
        Thread hook = new Thread(
                () -> {
                    Progress p = last.get();
                    if (p != null) {
                        p.cancel();
                    }
                    try {
                        done.await(60, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                "granary-prestage-cancel");
        Runtime.getRuntime().addShutdownHook(hook);
        PrestageResult result;
        try (cache;
                Display display = display(mode, err)) {
            Consumer<Progress> listener = p -> {
                last.set(p);
                display.show(p);
            };
            result = keys != null
                    ? cache.prestage(withIndexes(cache, keys), listener)
                    : cache.prestage(prefix, listener);
        } finally {
            done.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // the JVM is shutting down (Ctrl-C): the hook is running
            }
        }
        if (created && result.objects() == 0 && !result.cancelled()) {
            DiskTierInspection.clear(disk); // this command made the directory and nothing is in it
        }
        report(
                out,
                cache.originUri()
                        + (keys != null
                                ? " (" + keys.size() + " keys from " + keysFrom + ")"
                                : prefix.isEmpty() ? "" : prefix),
                result,
                created && result.objects() == 0 ? null : tier);
        int shown = 0;
        for (PrestageResult.Failure f : result.failed()) {
            if (shown++ == 20) {
                out.println("  ... and " + (result.failedCount() - 20) + " more");
                break;
            }
            out.println("  failed: " + f.key() + ": " + f.reason());
        }
        out.flush();
        if (result.cancelled()) {
            return ExitCodes.CANCELLED;
        }
        return result.complete() ? ExitCodes.OK : ExitCodes.PROBLEMS;
    }

    /**
     * The summary: what is held now, what is not and why (room, with the capacity that would hold it all), what was
     * fetched and found. {@code tier} is null when the directory was removed again.
     */
    private void report(PrintWriter out, String what, PrestageResult result, DiskTier tier) {
        long reached = result.objects() + result.notStaged() + result.failedCount();
        out.printf(
                Locale.ROOT,
                "%s %d of %d objects (%s) from %s into %s in %.1f s%n",
                result.cancelled() ? "cancelled; holding" : "prestaged",
                result.objects(),
                reached,
                Sizes.format(result.bytes()),
                what,
                tier == null ? disk + " (removed: nothing staged)" : tier.directory(),
                result.elapsed().toMillis() / 1000.0);
        if (result.notStaged() > 0) {
            long total = result.bytes() + result.bytesNotStaged();
            // The tier was full holding result.bytes(): the same overhead per byte holds the whole set.
            long needed = result.bytes() == 0
                    ? total + total / 8
                    : (long) Math.ceil((double) capacity * total / result.bytes());
            out.printf(
                    Locale.ROOT,
                    "  not staged: %d objects (%s): the disk tier is full (--capacity %s holds %s of"
                            + " them); a capacity of about %s holds all %s%n",
                    result.notStaged(),
                    Sizes.format(result.bytesNotStaged()),
                    Sizes.format(capacity),
                    Sizes.format(result.bytes()),
                    Sizes.roundUp(needed),
                    Sizes.format(total));
        }
        double seconds = Math.max(1e-9, result.elapsed().toNanos() / 1e9);
        out.printf(
                Locale.ROOT,
                "  fetched %s (%s/s), already cached %d objects, failed %d%n",
                Sizes.format(result.bytesFetched()),
                Sizes.format((long) (result.bytesFetched() / seconds)),
                result.alreadyCached(),
                result.failedCount());
    }

    /** Refuses a prefix that lists nothing, naming it: one listing request. */
    private static void requireObjects(Origin source, String prefix) throws IOException {
        try (Stream<ObjectInfo> listed = source.list(prefix)) {
            if (listed.findAny().isEmpty()) {
                throw new IllegalArgumentException("--prefix '" + prefix + "': no object under it at " + source.uri()
                        + " (expected: a prefix that lists at least one object; nothing was created)");
            }
        }
    }

    /**
     * The keys, with the index file of every WebDataset shard among them that has one ({@code <shard>.gidx}, which
     * {@code WebDataset.of} reads whole before the first epoch) and is not listed already: a prefix stages indexes
     * anyway, a list of shards must too, or the job's indexing reads them from the origin. One metadata request per
     * shard; a shard without an index is staged alone (the job then indexes it by scanning its staged parts).
     */
    static List<String> withIndexes(TieredCache cache, List<String> keys) throws IOException {
        Set<String> listed = new HashSet<>(keys);
        List<String> all = new ArrayList<>(keys);
        for (String key : keys) {
            String index = key + INDEX_SUFFIX;
            if (!key.endsWith(".tar") || listed.contains(index)) {
                continue;
            }
            try {
                cache.stat(index);
                all.add(index);
                listed.add(index);
            } catch (NoSuchObjectException e) {
                // no index beside this shard
            } catch (IllegalArgumentException e) {
                // the shard's own key is invalid: prestage names it as a failure
            }
        }
        return all;
    }

    /** The index file beside a shard: {@code docs/shard-index.md}. */
    static final String INDEX_SUFFIX = ".gidx";

    private static List<String> readKeys(Path file) throws IOException {
        return Files.readAllLines(file, StandardCharsets.UTF_8).stream()
                .map(String::strip)
                .filter(s -> !s.isEmpty() && !s.startsWith("#"))
                .toList();
    }

    private Display display(String mode, PrintWriter err) {
        // JDK 22+: System.console() is non-null even off a terminal, so isTerminal() is what tells; the null check
        // stays because null is still possible (no console at all, e.g. -Djdk.console=java.base off a terminal).
        @SuppressWarnings("SystemConsoleNull")
        boolean terminal = System.console() != null && System.console().isTerminal();
        return switch (mode) {
            case "none" -> p -> {};
            case "bar" -> new Bar();
            case "lines" -> new Lines(err, interval);
            default -> terminal ? new Bar() : new Lines(err, interval);
        };
    }

    /** Shows progress; called on the prestaging thread only. */
    private interface Display extends AutoCloseable {
        void show(Progress p);

        @Override
        default void close() {}
    }

    /** A progress bar in MiB on the terminal (standard error), with rate and ETA. */
    private static final class Bar implements Display {
        private final ProgressBar bar = new ProgressBarBuilder()
                .setTaskName("prestage")
                .setUnit("MiB", 1 << 20)
                .setStyle(ProgressBarStyle.COLORFUL_UNICODE_BLOCK)
                .showSpeed()
                .setInitialMax(-1)
                .setUpdateIntervalMillis(200)
                .build();

        @Override
        public void show(Progress p) {
            if (p.bytesTotal() >= 0) {
                bar.maxHint(p.bytesTotal());
            }
            bar.stepTo(p.bytesDone());
            bar.setExtraMessage(p.objectsDone() + "/" + (p.objectsTotal() < 0 ? "?" : p.objectsTotal()) + " objects"
                    + (p.failed() > 0 ? ", " + p.failed() + " failed" : ""));
        }

        @Override
        public void close() {
            bar.close();
        }
    }

    /** Plain lines for logs (an init container, a Slurm prologue): one every {@code interval}, and the last. */
    private static final class Lines implements Display {
        private final PrintWriter err;
        private final long intervalNanos;
        private long next;
        private Progress last;

        Lines(PrintWriter err, double intervalSeconds) {
            this.err = err;
            this.intervalNanos = (long) (intervalSeconds * 1e9);
            this.next = System.nanoTime() + intervalNanos;
        }

        @Override
        public void show(Progress p) {
            last = p;
            if (System.nanoTime() - next >= 0) {
                next = System.nanoTime() + intervalNanos;
                print(p);
            }
        }

        private void print(Progress p) {
            String eta = p.eta().map(PrestageCommand::duration).orElse("?");
            err.printf(
                    Locale.ROOT,
                    "prestage: %d/%s objects, %s/%s, %s/s, ETA %s%s%n",
                    p.objectsDone(),
                    p.objectsTotal() < 0 ? "?" : Long.toString(p.objectsTotal()),
                    Sizes.format(p.bytesDone()),
                    p.bytesTotal() < 0 ? "?" : Sizes.format(p.bytesTotal()),
                    Sizes.format((long) p.bytesPerSecond()),
                    eta,
                    p.failed() > 0 ? ", " + p.failed() + " failed" : "");
            err.flush();
        }

        @Override
        public void close() {
            if (last != null) {
                print(last);
            }
        }
    }

    static String duration(Duration d) {
        long s = d.toSeconds();
        return s >= 3600
                ? String.format(Locale.ROOT, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60)
                : String.format(Locale.ROOT, "%d:%02d", s / 60, s % 60);
    }
}
