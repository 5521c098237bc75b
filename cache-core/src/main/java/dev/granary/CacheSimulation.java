// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import dev.granary.spi.PageKey;
import dev.granary.spi.TierSimulation;
import dev.granary.spi.Workload;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A dry run of a {@link TieredCache} under one loader's {@link EpochDriver}: what the loader's coming epochs would hit,
 * tier by tier, and what they would read from the origin — without reading anything and without changing the cache.
 * It starts from a copy of what every tier holds now ({@link dev.granary.spi.Tier#simulation()}) and of the cache's
 * epoch clock, and applies the cache's own rules: the workload the {@link EpochClock} would publish as this driver
 * starts and ends epochs (the very function the cache uses), and the driven part of the placement rule
 * ({@code Placement}, where the cache's own rule is): lookups in tier order, a hit below the first tier copied into the
 * first tier above that takes it while the epoch has not missed yet ({@code EpochClock.promoting()}), and a fill
 * offered to the tiers from the first until one takes it — which is what the cache does while a loader drives it.
 * Other drivers of the cache are taken as they are now (their epochs neither start nor end during the dry run).
 *
 * {@snippet :
 * CacheSimulation sim = cache.loaderSupport().simulation(driver);
 * sim.startEpoch();
 * for (PageKey page : pagesOfTheEpoch) {
 *     int tier = sim.read(page);    // the tier that serves it, or -1: read from the origin
 * }
 * sim.endEpoch();
 * }
 *
 * <p>Reads are simulated one after another; the real loader reads a window of samples concurrently, so at the edge of
 * a full tier the samples admitted may differ by a window's worth — not their number. Obtain one from
 * {@link LoaderSupport#simulation(EpochDriver)}.
 *
 * <p>Not thread-safe: one caller at a time. Holds no resource of the cache; drop it when done.
 */
public final class CacheSimulation {

    private final TieredCache cache;
    private final List<TierSimulation> tiers;
    private final List<String> names;
    private final List<EpochClock.DriverState> others;
    private long clock;
    private long previousStart;
    private long currentStart;
    private boolean inEpoch;
    private boolean promoting;
    private Workload workload;

    CacheSimulation(TieredCache cache, List<String> names, EpochClock.Snapshot snapshot) {
        this.cache = cache;
        this.names = List.copyOf(names);
        List<TierSimulation> sims = snapshot.tiers();
        for (int i = 0; i < sims.size(); i++) {
            if (sims.get(i) == null) {
                throw new IllegalStateException("tier '" + names.get(i) + "' of " + cache.originUri() + " offers no"
                        + " simulation (expected: tiers whose Tier.simulation() is present, such as MemoryTier and"
                        + " DiskTier)");
            }
        }
        this.tiers = new ArrayList<>(sims);
        this.others = snapshot.others();
        this.clock = snapshot.clock();
        this.previousStart = snapshot.mine().previousStart();
        this.currentStart = snapshot.mine().currentStart();
        this.inEpoch = snapshot.mine().inEpoch();
        this.promoting = snapshot.promoting();
        this.workload = publish();
    }

    /** {@return the tiers' names, in lookup order: the indexes {@link #read} returns} */
    public List<String> tierNames() {
        return names;
    }

    /** Starts the driver's next epoch, as {@link EpochDriver#startEpoch()} after ending an open one would. */
    public void startEpoch() {
        inEpoch = false;
        clock++;
        previousStart = currentStart;
        currentStart = clock;
        inEpoch = true;
        promoting = true;
        workload = publish();
    }

    /** Ends the driver's epoch, as {@link EpochDriver#endEpoch()}. Does nothing outside an epoch. */
    public void endEpoch() {
        if (inEpoch) {
            inEpoch = false;
            workload = publish();
        }
    }

    /** {@return the workload the tiers would be told now} */
    public Workload workload() {
        return workload;
    }

    /**
     * Reads one page (or extent) as the cache would: looked up in the tiers in order, the first that holds it serves
     * it (and, below the first tier, is copied into the first tier above that takes it while the epoch has not missed
     * yet); if none does, it is read from the origin and offered to the tiers from the first until one takes it.
     *
     * @param key the page, as {@link #pageKey} or {@link #extentKey} makes it
     * @return the index of the tier that serves it, or {@code -1} if the origin is read
     * @throws IllegalArgumentException if the key is null
     */
    public int read(PageKey key) {
        if (key == null) {
            throw new IllegalArgumentException("page key: null (expected: a key from pageKey or extentKey)");
        }
        int served = lookup(key);
        if (served >= 0) {
            return served;
        }
        if (workload.driven()) {
            promoting = false;
        }
        Placement.simulatedFill(tiers, key);
        return -1;
    }

    /** The tier that holds the page, or -1; a hit below the first tier is copied up as the cache copies it. */
    private int lookup(PageKey key) {
        return Placement.simulatedLookup(tiers, key, workload.driven() && promoting);
    }

    /**
     * Reads an extent as {@link LoaderSupport#readExtent(ObjectInfo, long, int)} does: the extent itself if a tier
     * holds
     * it; else, if tiers hold every one of the cache's pages that cover it (what {@link TieredCache#prestage} stages),
     * from those pages, each read as a hit; else from the origin, offered to the tiers as one unit ({@link #read}).
     *
     * <p>Where some pages are held and others not, the real cache probes them without effect first and reads the
     * extent from the origin; here the pages found before the first missing one are recorded as read — a difference in
     * their stamps only, which a partly staged object can show.
     *
     * @param object the object's key, size and version
     * @param offset the first byte
     * @param length the number of bytes, {@code > 0}
     * @return the index of the tier that serves it (of the slowest one, when pages in several tiers do), or {@code -1}
     *     if the origin is read
     * @throws IllegalArgumentException if the object is null or the range is empty or outside it
     */
    public int readExtent(ObjectInfo object, long offset, int length) {
        if (object == null || length <= 0 || offset < 0 || offset + length > object.size()) {
            throw new IllegalArgumentException("extent [" + offset + ", +" + length + ") of " + object
                    + " (expected: a non-empty range within the object)");
        }
        PageKey unit = extentKey(object, offset, length);
        int held = lookup(unit);
        if (held >= 0) {
            return held;
        }
        int slowest = -1;
        long first = offset / cache.pageSize();
        long last = (offset + length - 1) / cache.pageSize();
        for (long p = first; p <= last; p++) {
            PageKey page = pageKey(object, p);
            int served = lookup(page);
            if (served < 0) {
                return read(unit);
            }
            slowest = Math.max(slowest, served);
        }
        return slowest;
    }

    /**
     * {@return the version the cache knows of an object, without asking the origin} Empty if it knows none (a read
     * would ask the origin first, one metadata request).
     *
     * @param key the object key
     */
    public Optional<ObjectInfo> knownObject(String key) {
        MetadataCache.Peeked peeked = cache.metadata().peek(key);
        return peeked == null ? Optional.empty() : Optional.of(peeked.info());
    }

    /**
     * {@return whether a read of the object now would trust the known version without a metadata request}
     *
     * @param key the object key
     */
    public boolean versionFresh(String key) {
        MetadataCache.Peeked peeked = cache.metadata().peek(key);
        return peeked != null && peeked.fresh();
    }

    /** {@return how long a confirmed version is trusted ({@link TieredCache.Builder#metadataTtl})} */
    public Duration metadataTtl() {
        return Duration.ofNanos(cache.metadata().ttlNanos());
    }

    /** {@return the cache's page size: the unit {@link TieredCache#read(String)} caches objects in} */
    public int pageSize() {
        return cache.pageSize();
    }

    /**
     * {@return the key of page {@code index} of an object, as {@link TieredCache#read} cuts it}
     *
     * @param object the object's key, size and version
     * @param index  the page index, {@code 0 <= index < ceil(size / pageSize)}
     * @throws IllegalArgumentException if the index is out of range
     */
    public PageKey pageKey(ObjectInfo object, long index) {
        long offset = index * cache.pageSize();
        if (index < 0 || offset >= object.size()) {
            throw new IllegalArgumentException("page index of '" + object.key() + "': " + index + " (expected: 0.."
                    + (pages(object) - 1) + " for " + object.size() + " bytes)");
        }
        return new PageKey(cache.originUri().toString(), object.key(), object.version(), offset, (int)
                Math.min(cache.pageSize(), object.size() - offset));
    }

    /** {@return the number of pages {@link TieredCache#read} cuts an object into (0 for an empty one)} */
    public long pages(ObjectInfo object) {
        return (object.size() + cache.pageSize() - 1) / cache.pageSize();
    }

    /**
     * {@return the key of an extent cached as one unit ({@link LoaderSupport#readExtent})}
     *
     * @param object the object's key, size and version
     * @param offset the first byte
     * @param length the number of bytes
     */
    public PageKey extentKey(ObjectInfo object, long offset, int length) {
        return new PageKey(cache.originUri().toString(), object.key(), object.version(), offset, length);
    }

    private Workload publish() {
        List<EpochClock.DriverState> states = new ArrayList<>(others.size() + 1);
        states.add(new EpochClock.DriverState(previousStart, currentStart, inEpoch));
        states.addAll(others);
        Workload w = EpochClock.workload(clock, states);
        for (TierSimulation tier : tiers) {
            tier.workload(w);
        }
        return w;
    }

    @Override
    public String toString() {
        return "CacheSimulation[" + cache.originUri() + ", tiers=" + names + ", " + workload + "]";
    }
}
