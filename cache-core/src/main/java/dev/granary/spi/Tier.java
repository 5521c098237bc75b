// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

import dev.granary.TierStats;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One level of the cache: off-heap memory, a local disk, or anything else that keeps pages closer than the origin.
 *
 * <p>A {@code TieredCache} consults its tiers in the order they were added. On a miss in every tier it fills the page
 * from the origin, preferably straight into memory the first tier {@linkplain #allocate(PageKey) allocates}, and then
 * {@linkplain #put(Page) offers} it to each tier; a hit in a lower tier is offered to the tiers above it.
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>A tier never returns bytes that differ from the bytes that were put under the same {@link PageKey}. A tier
 *       that detects damage (a checksum mismatch) reports a miss, never the damaged bytes.</li>
 *   <li>A miss is {@code null}, not an exception. Failures of the tier's own medium (a full or failing disk) are
 *       reported in {@link #stats()} and degrade to misses and refused puts; they do not reach the reader.</li>
 *   <li>Capacity is a bound the tier enforces itself, including on memory held by readers after eviction.</li>
 * </ul>
 *
 * <h2>Thread safety</h2>
 * Every method may be called concurrently from any number of threads. {@link #get(PageKey)} is the hot path: it must
 * not block on anything but the tier's own medium.
 *
 * <h2>Lifecycle</h2>
 * A tier belongs to one cache, which closes it. After {@link #close()}, {@code get} misses and {@code allocate} and
 * {@code put} refuse; pages handed out before stay valid until released.
 *
 * <h2>Required and optional</h2>
 * A tier implements {@link #name()}, {@link #get}, {@link #put}, {@link #invalidate}, {@link #stats()} and
 * {@link #close()}; {@link #peek}, {@link #allocate} and {@link #remove} have defaults that work (a look that counts,
 * no in-place fills, no single-page drops). What only some tiers have is asked for as a <em>capability view</em>, as
 * Caffeine's {@code Policy.eviction()} is: {@link #hints()}, {@link #eviction()}, {@link #durability()},
 * {@link #sharing()} and {@link #simulation()} return an empty {@link Optional} by default, and the cache leaves that
 * feature out for the tier. A view may be the tier itself or an object of its own. Whether a tier offers
 * {@code hints}, {@code eviction}, {@code durability} or {@code sharing} must not change over its life: the cache asks
 * once, when it is built, and keeps the view. {@code simulation} starts a new dry run on every call.
 */
public interface Tier extends AutoCloseable {

    /** {@return a short name for stats and logs, such as {@code "memory"} or {@code "disk"}} */
    String name();

    /**
     * Looks a page up.
     *
     * @param key the page's identity
     * @return the page, retained once for the caller (who must {@linkplain Page#release() release} it), or
     *     {@code null} on a miss
     */
    Page get(PageKey key);

    /**
     * Looks a page up like {@link #get(PageKey)}, but without counting a hit or miss and without telling the eviction
     * policy: the cache's own second look, made once a fill is registered, so that a fill that completed a moment
     * before is not repeated (and not counted twice).
     *
     * @param key the page's identity
     * @return the page, retained once for the caller, or {@code null}
     */
    default Page peek(PageKey key) {
        return get(key);
    }

    /**
     * Allocates an unsealed page in this tier's own storage, for the caller to fill and then {@linkplain #put(Page)
     * put} back, so a fill from the origin lands in place without an extra copy. The page is not visible to
     * {@link #get(PageKey)} until put.
     *
     * @param key the identity the page will have
     * @return a page with one reference owned by the caller, or {@code null} if the tier cannot or will not hold the
     *     page now (full of pages readers hold, admission refused, closed, or allocation not supported)
     */
    default Page allocate(PageKey key) {
        return null;
    }

    /**
     * Offers a sealed page for caching. If this tier allocated the page it keeps it as is; otherwise it copies the
     * bytes. The caller's reference is neither consumed nor transferred: the caller still releases it.
     *
     * @param page a sealed page
     * @return {@code true} if the tier now holds the page (or already held one with the same key); {@code false} if
     *     it refused (admission, capacity, a failing medium, closed)
     * @throws IllegalArgumentException if the page is not sealed
     * @throws java.io.UncheckedIOException if the page's own bytes cannot be read (its memory is a mapped file that
     *     was damaged under it); its tier has then dropped it, and the caller treats it as a miss
     */
    boolean put(Page page);

    /**
     * Drops one page, if this tier holds it: used by exclusive tiering when a page moves to a tier above. A reader
     * holding the page keeps it until released. Tiers that cannot drop single pages return {@code false}.
     *
     * @param key the page's identity
     * @return {@code true} if the tier held the page and dropped it now
     */
    default boolean remove(PageKey key) {
        return false;
    }

    /**
     * Drops every page of one object, in every version. Pages that readers hold stay valid until released.
     *
     * @param origin the origin's URI as a string
     * @param key    the object key
     */
    void invalidate(String origin, String key);

    /** {@return a snapshot of this tier's counters} */
    TierStats stats();

    /**
     * Drops every page from the tier's index and releases its resources once readers have released what they hold; a
     * persistent tier keeps its medium's contents for the next open. Idempotent.
     */
    @Override
    void close();

    // ------------------------------------------------------------------------------------ optional capabilities

    /**
     * {@return the fast path to a page by a token instead of a lookup, if this tier offers one} The cache asks only its
     * first tier, and uses it for the first page of every object version it reads. Default: empty.
     */
    default Optional<Hints> hints() {
        return Optional.empty();
    }

    /**
     * {@return the controls of this tier's own eviction policy, if it evicts single pages by one} Exclusive tiering
     * listens to it to demote evicted pages into the tier below, and a loader's epochs steer its admission through
     * it. Without it, a tier keeps its own policy under a loader, and what it drops under exclusive tiering is gone.
     * Default: empty.
     */
    default Optional<Eviction> eviction() {
        return Optional.empty();
    }

    /**
     * {@return how this tier takes part in carrying pages across a restart, if it does} At close, the cache carries the
     * pages of tiers that are not {@linkplain Durability#durable() durable} into the free room of durable tiers below,
     * so that the next process starts warm. Default: empty (neither gives nor takes pages at close).
     */
    default Optional<Durability> durability() {
        return Optional.empty();
    }

    /**
     * {@return the coordination of fills with other processes, if other processes see the pages put into this tier (a
     * disk tier whose directory several processes share)} The cache then puts every page it fills into this tier —
     * also under exclusive tiering and while a loader drives it, where a fill otherwise goes to one tier only — and
     * asks it before each origin read whether another process is filling the same page. Default: empty.
     */
    default Optional<Sharing> sharing() {
        return Optional.empty();
    }

    /**
     * Starts a dry run of this tier: a copy of what it holds now and of the bookkeeping its admission decides by, for
     * predicting what a loader's coming epochs will hit without reading anything (see {@link TierSimulation}). The
     * copy costs a few tens of bytes per page held; it does not change this tier, its counters or its policy's state.
     * Each call starts a new one. Tiers that cannot be predicted return empty (the default), and a loader's dry run
     * then refuses, naming the tier.
     *
     * @return a new simulation starting from this tier's current contents, or empty
     */
    default Optional<TierSimulation> simulation() {
        return Optional.empty();
    }

    /**
     * A fast path to pages this tier handed out: a token kept per object version by the cache ({@link Tier#hints()}).
     * Thread safety as the tier's.
     */
    interface Hints {

        /**
         * Returns a token by which {@link #touch(Object)} can later find this page without a lookup, or {@code null}.
         * A hint must not keep an evicted page's memory, or the page object, reachable.
         *
         * @param page a page this tier handed out (others get {@code null})
         * @return the hint, or {@code null}
         */
        Object hint(Page page);

        /**
         * Serves a hit through a hint from {@link #hint(Page)}: if the page is still in this tier, retains it once for
         * the caller and counts and records the hit exactly as {@link Tier#get(PageKey)} would, without looking its
         * key up.
         *
         * @param hint a hint this tier gave, or any other object (which finds nothing)
         * @return the page, retained once for the caller; {@code null} if it is no longer in this tier (nothing is
         *     counted then, and the caller falls back to {@code get})
         */
        Page touch(Object hint);
    }

    /**
     * The controls of a tier's own eviction policy ({@link Tier#eviction()}): what the cache listens to and tells it.
     * Thread safety as the tier's.
     */
    interface Eviction {

        /**
         * Registers a callback for pages the tier's policy evicts (not for invalidated or damaged ones): exclusive
         * tiering uses it to demote an evicted page into the tier below. The callback runs on the evicting thread,
         * with the page still valid for the duration of the call; it may {@linkplain Page#tryRetain() retain} it to
         * keep it longer, and must not call back into this tier.
         *
         * @param listener the callback, or {@code null} to remove it
         */
        void evictionListener(Consumer<Page> listener);

        /**
         * Tells the tier what a loader is doing (see {@link Workload}): from now on, stamp pages inserted or read with
         * {@link Workload#clock()}; while {@link Workload#driven()}, admit a page only into free room or in place of a
         * {@linkplain Workload#isDead(long) dead} page, and refuse it otherwise, so the resident set stays stable
         * across epochs. Called by the cache at every epoch start and end, from any thread; cheap tiers may scan their
         * pages here (once per epoch) to find the dead ones.
         *
         * @param workload the new state, never null
         */
        void workload(Workload workload);
    }

    /**
     * How a tier takes part in carry-on-close ({@link Tier#durability()}): a {@linkplain #durable() durable} tier
     * receives, into its free room, the pages that the tiers above it which are not durable
     * {@linkplain #forEachPage visit}. Thread safety as the tier's.
     */
    interface Durability {

        /**
         * {@return whether this tier's pages outlive the process (a disk tier): it then receives pages at close;
         * otherwise it gives its pages to a durable tier below}
         */
        boolean durable();

        /**
         * Visits the pages this tier holds, each retained for the duration of the call (the action must not keep it
         * without {@linkplain Page#tryRetain() retaining} it): the cache uses it at close to carry the pages of a tier
         * that is not durable into a durable one. Pages added or dropped meanwhile may or may not be visited. Default:
         * none (what a durable tier, which gives nothing, needs).
         *
         * @param action called once per page, on the calling thread
         */
        default void forEachPage(Consumer<Page> action) {}
    }

    /**
     * Fills coordinated with the other processes that see a shared tier's pages ({@link Tier#sharing()}), so that
     * processes missing the same page at once read it from the origin once. Thread safety as the tier's.
     */
    interface Sharing {

        /**
         * Called by a fill before it reads the page from the origin. Either another process is filling the page: wait
         * for it, bounded by {@code deadlineNanos} and the tier's own limit, and return it; or claim the page for this
         * process and return {@code null} — the cache then fills the page, puts it into this tier, and calls
         * {@link #fillDone}, whether the fill succeeded or not. A tier that gives up waiting returns {@code null}
         * without a claim.
         *
         * @param key           the page about to be read from the origin
         * @param deadlineNanos the caller's deadline, on the {@link System#nanoTime()} clock
         * @return the page, retained for the caller, if another process filled it meanwhile; else {@code null}
         */
        Page awaitFill(PageKey key, long deadlineNanos);

        /**
         * Ends the claim {@link #awaitFill} took for a page, after the fill put it into this tier (or failed); other
         * processes waiting for it look for it in this tier now. Does nothing if no claim is held.
         *
         * @param key the page
         */
        void fillDone(PageKey key);
    }
}
