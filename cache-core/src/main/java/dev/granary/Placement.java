// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.spi.TierSimulation;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Which tier takes a page: the placement rule of a {@link TieredCache}, in one place. Lookups go through the tiers in
 * the order they were added (the cache does that); everything that decides where a page is <em>put</em> is here.
 *
 * <table class="striped">
 *   <caption>The rule</caption>
 *   <thead><tr><th>When</th><th>{@link Tiering#INCLUSIVE}, undriven</th><th>{@link Tiering#EXCLUSIVE}, undriven</th>
 *       <th>a loader drives (either tiering)</th></tr></thead>
 *   <tbody>
 *   <tr><td>fill from the origin ({@link #fill})</td><td>into memory the first tier that allocates gives (else the
 *       heap), then put into every tier</td><td colspan="2">the same memory; offered to the tiers from the first until
 *       one takes it ({@link #offer}); and put into a {@linkplain Tier#sharing() shared} tier as well</td></tr>
 *   <tr><td>hit in tier {@code i > 0} ({@link #promote})</td><td>copied into every tier above</td><td>moved into
 *       the first tier above that takes it (removed below, unless that tier is shared)</td><td>copied into the first
 *       tier above that takes it — only while the epoch has not missed yet ({@link EpochClock#promoting()}); the copy
 *       below stays</td></tr>
 *   <tr><td>a tier evicts a page</td><td>gone</td><td colspan="2">offered to the tiers below it (its
 *       {@linkplain Tier#eviction() eviction} view's listener; exclusive tiering only)</td></tr>
 *   <tr><td>prestage ({@link #stage})</td><td colspan="3">into the staging tiers ({@link #stagingFrom()}): copied
 *       from a tier above if one holds it, else read into memory a staging tier allocates; put into every staging tier
 *       (inclusive) or offered to them until one takes it (exclusive)</td></tr>
 *   <tr><td>close ({@link #carryOnClose})</td><td colspan="3">the pages of every tier that is not
 *       {@linkplain Tier.Durability#durable() durable} are carried into the free room of the durable tiers below —
 *       never evicting</td></tr>
 *   <tr><td>a dry run ({@link #simulatedLookup}, {@link #simulatedFill})</td><td colspan="3">the driven column, on the
 *       tiers' {@linkplain Tier#simulation() simulations}: a hit copied into the first tier above that takes it while
 *       promoting, a fill offered from the first tier until one takes it (shared tiers are not modelled)</td></tr>
 *   </tbody>
 * </table>
 *
 * <p>A {@linkplain Tier#sharing() shared} tier is asked before each origin read whether another process is filling the
 * page ({@link Tier.Sharing#awaitFill}), and told when the fill ends ({@link Tier.Sharing#fillDone}).
 *
 * <p>The tiers' optional views are asked for once, here and in {@link EpochClock}; a tier without one is left out of
 * that feature. Thread safety: every method may be called from any thread; the state is final.
 */
final class Placement {

    private static final System.Logger LOG = System.getLogger(TieredCache.class.getName());

    private final Tier[] tiers;
    private final boolean exclusive;
    private final EpochClock epochs;
    /** Per tier: whether it is shared (keeps its copy of a page moved up, for the other processes). */
    private final boolean[] shares;
    /** The first shared tier's index, or -1; only that one is asked before a fill. */
    private final int shared;
    /** The first shared tier's view, or null. */
    private final Tier.Sharing sharing;
    /** Per tier: its durability view, or null. */
    private final Tier.Durability[] durability;

    /** Reads a page's bytes from the origin into {@code page} and seals it; releases it if the read fails. */
    @FunctionalInterface
    interface Loader {
        Page load(Page page) throws IOException;
    }

    /**
     * Asks the tiers for the views placement needs and, under exclusive tiering, registers each tier's eviction
     * listener so what it evicts is offered to the tiers below.
     */
    Placement(Tier[] tiers, Tiering tiering, EpochClock epochs) {
        this.tiers = tiers;
        this.exclusive = tiering == Tiering.EXCLUSIVE;
        this.epochs = epochs;
        int firstShared = -1;
        Tier.Sharing firstSharing = null;
        this.shares = new boolean[tiers.length];
        this.durability = new Tier.Durability[tiers.length];
        for (int i = 0; i < tiers.length; i++) {
            Tier.Sharing s = tiers[i].sharing().orElse(null);
            shares[i] = s != null;
            if (s != null && firstShared < 0) {
                firstShared = i;
                firstSharing = s;
            }
            durability[i] = tiers[i].durability().orElse(null);
        }
        this.shared = firstShared;
        this.sharing = firstSharing;
        if (exclusive) {
            for (int i = 0; i < tiers.length - 1; i++) {
                int below = i + 1;
                tiers[i].eviction().ifPresent(e -> e.evictionListener(page -> offer(page, below)));
            }
        }
    }

    /**
     * Copies a page found in tier {@code i} into the tiers above, or moves it (see the class comment).
     *
     * @return the page; {@code null} if copying it faulted (its tier's file was damaged under it, {@link Tier#put}):
     *     that tier dropped it, and the page was released
     */
    Page promote(Page page, int i) {
        if (i == 0) {
            return page;
        }
        Tier[] tiers = this.tiers;
        boolean driven = epochs.driven();
        if (driven && !epochs.promoting()) {
            return page;
        }
        try {
            for (int j = 0; j < i; j++) {
                if (tiers[j].put(page) && (exclusive || driven)) {
                    if (exclusive && !driven && !shares[i]) {
                        tiers[i].remove(page.key());
                    }
                    break;
                }
            }
        } catch (UncheckedIOException e) {
            page.release();
            return null;
        }
        return page;
    }

    /**
     * Fills a page from the origin (see the class comment): a shared tier is asked first, and a page another process
     * filled meanwhile is taken instead (promoted as a hit in that tier); else the page is claimed, loaded into memory
     * the first willing tier allocates (no extra copy) or a heap page of its own, placed, and the claim ended. Runs on
     * a fill thread.
     *
     * @param deadline the caller's deadline for waiting on another process's fill, read only when there is one to ask
     */
    Page fill(PageKey key, LongSupplier deadline, Loader loader) throws IOException {
        Tier[] tiers = this.tiers;
        if (sharing != null) {
            Page filled = sharing.awaitFill(key, deadline.getAsLong());
            if (filled != null) {
                filled = promote(filled, shared);
                if (filled != null) {
                    return filled;
                }
            }
        }
        try {
            Page page = null;
            for (Tier tier : tiers) {
                page = tier.allocate(key);
                if (page != null) {
                    break;
                }
            }
            if (page == null) {
                page = new HeapPage(key);
            }
            loader.load(page);
            if (exclusive || epochs.driven()) {
                offer(page, 0);
                if (shared >= 0) {
                    tiers[shared].put(page); // for the other processes, also when the page went to another tier
                }
            } else {
                for (Tier tier : tiers) {
                    tier.put(page);
                }
            }
            return page;
        } finally {
            if (sharing != null) {
                sharing.fillDone(key);
            }
        }
    }

    /** Offers a page to the tiers from {@code from} down until one takes it. */
    private void offer(Page page, int from) {
        Tier[] tiers = this.tiers;
        for (int i = from; i < tiers.length; i++) {
            if (tiers[i].put(page)) {
                return;
            }
        }
    }

    // ------------------------------------------------------------------------------------------------- prestage

    /** {@return the first staging tier of a prestage: every tier below the first if there are several, else the one} */
    int stagingFrom() {
        return tiers.length > 1 ? 1 : 0;
    }

    /**
     * Fills a page into the staging tiers, from {@code from} down: copied from a tier above if one holds it (no origin
     * read), else read from the origin into memory a staging tier allocates; then put into every staging tier
     * (inclusive) or offered to them until one takes it (exclusive). Runs on the fill's thread.
     */
    Page stage(PageKey key, int from, Loader loader) throws IOException {
        Tier[] tiers = this.tiers;
        Page page = null;
        for (int i = 0; i < from && page == null; i++) {
            page = tiers[i].peek(key);
        }
        if (page == null) {
            for (int i = from; i < tiers.length && page == null; i++) {
                page = tiers[i].allocate(key);
            }
            if (page == null) {
                page = new HeapPage(key);
            }
            loader.load(page);
        }
        try {
            if (exclusive) {
                offer(page, from);
            } else {
                for (int i = from; i < tiers.length; i++) {
                    tiers[i].put(page);
                }
            }
        } catch (RuntimeException e) {
            page.release();
            throw e;
        }
        return page;
    }

    // ---------------------------------------------------------------------------------------------------- close

    /**
     * Writes the pages of every tier that is not durable into the free room of the durable tiers below it — the pages
     * exclusive tiering and a loader's epochs kept in memory only. Never evicts: a durable tier takes a page only while
     * its used bytes leave room for it, so what it held for the next process stays. Runs at close, once no read can
     * start; a failing or refusing tier is skipped for the page. A tier without a durability view neither gives nor
     * takes.
     */
    void carryOnClose(URI originUri) {
        long t0 = System.nanoTime();
        long[] carried = new long[2];
        for (int i = 0; i < tiers.length - 1; i++) {
            Tier.Durability upper = durability[i];
            if (upper == null || upper.durable()) {
                continue;
            }
            List<Tier> below = new ArrayList<>();
            for (int j = i + 1; j < tiers.length; j++) {
                if (durability[j] != null && durability[j].durable()) {
                    below.add(tiers[j]);
                }
            }
            if (below.isEmpty()) {
                continue;
            }
            try {
                upper.forEachPage(page -> {
                    if (carry(page, below)) {
                        carried[0]++;
                        carried[1] += page.length();
                    }
                });
            } catch (RuntimeException e) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "cache over " + originUri + ": carrying the pages of tier '"
                                + tiers[i].name() + "' to disk at close failed after " + carried[0]
                                + " pages; the rest are not"
                                + " kept: " + e,
                        e);
            }
        }
        long took = System.nanoTime() - t0;
        if (carried[0] > 0) {
            // Worth an operator's attention when close took noticeably long; routine otherwise.
            System.Logger.Level level = took >= 1_000_000_000L ? System.Logger.Level.INFO : System.Logger.Level.DEBUG;
            LOG.log(
                    level,
                    () -> String.format(
                            Locale.ROOT,
                            "cache over %s: carried %d"
                                    + " pages (%.1f MiB) held only in memory into durable tiers at close, in %.2f s",
                            originUri,
                            carried[0],
                            carried[1] / 1048576.0,
                            took / 1e9));
        }
    }

    /** Puts one page into the first durable tier that holds it already or has room for it; true if it moved now. */
    private static boolean carry(Page page, List<Tier> durable) {
        for (Tier tier : durable) {
            Page there = tier.peek(page.key());
            if (there != null) {
                there.release();
                return false;
            }
        }
        for (Tier tier : durable) {
            TierStats stats = tier.stats();
            if (stats.capacityBytes() - stats.usedBytes() < page.length()) {
                continue;
            }
            try {
                if (tier.put(page)) {
                    return true;
                }
            } catch (RuntimeException e) {
                // A page whose own memory faults, or a tier that fails: the page is simply not kept.
            }
        }
        return false;
    }

    // -------------------------------------------------------------------------------------------------- dry run

    /**
     * A dry run's lookup ({@link CacheSimulation}): the tiers in order, the first that holds the page serves it; a hit
     * below the first tier is copied into the first tier above that takes it if {@code copyUp} (driven and promoting,
     * as {@link #promote} does while a loader drives).
     *
     * @return the index of the tier that holds the page, or -1
     */
    static int simulatedLookup(List<TierSimulation> tiers, PageKey key, boolean copyUp) {
        for (int i = 0; i < tiers.size(); i++) {
            if (tiers.get(i).get(key)) {
                if (i > 0 && copyUp) {
                    for (int j = 0; j < i; j++) {
                        if (tiers.get(j).put(key)) {
                            break;
                        }
                    }
                }
                return i;
            }
        }
        return -1;
    }

    /** A dry run's fill ({@link CacheSimulation}): offered to the tiers from the first until one takes it. */
    static void simulatedFill(List<TierSimulation> tiers, PageKey key) {
        for (TierSimulation tier : tiers) {
            if (tier.put(key)) {
                break;
            }
        }
    }

    /** A page on the heap, for fills that no tier would allocate; garbage collected once released. */
    static final class HeapPage extends Page {
        HeapPage(PageKey key) {
            super(key, MemorySegment.ofArray(new byte[key.length()]));
        }

        @Override
        protected void deallocate() {}
    }
}
