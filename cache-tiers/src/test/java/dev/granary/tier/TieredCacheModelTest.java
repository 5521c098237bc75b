// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.CacheStats;
import dev.granary.LeakDetection;
import dev.granary.Lease;
import dev.granary.NoSuchObjectException;
import dev.granary.ObjectInfo;
import dev.granary.OriginStats;
import dev.granary.TierStats;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.Bytes;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.Transformer;
import org.junit.jupiter.api.function.Executable;

/**
 * A model-based test of {@link TieredCache} (jqwik's {@link ActionChain}): random chains of whole reads, range reads,
 * {@code readInto}, stats, invalidations, rewrites and deletions at the origin, held leases, and close-and-reopen over
 * the same disk directory, run against a cache of a {@link MemoryTier} and a {@link DiskTier} over a real
 * {@link PosixOrigin}. The reference is a map from key to the bytes the origin holds now.
 *
 * <p>Pages are 4 KiB and both tiers hold a few dozen of them, so reads cross pages and pages are evicted, demoted to
 * disk and refilled all the time. After every action: every byte read equals the reference, ranges past the end throw
 * {@link EOFException}, a deleted object throws {@link NoSuchObjectException}, the counters of one cache instance never
 * decrease, the open leases are exactly the ones the chain holds (zero once they are closed), held leases still show
 * their bytes, and no tier exceeds its capacity. When a chain fails, jqwik shrinks it to a short one.
 */
class TieredCacheModelTest {

    private static final int PAGE = 4096;
    private static final int MAX_SIZE = 40_000;
    private static final int MAX_HELD = 3;
    /**
     * The cache trusts a confirmed version for this long, on a manual clock ({@link TieredCache.Builder#ticker}). The
     * model advances the clock by the TTL after every change it makes at the origin, so the next read is guaranteed
     * to ask the origin and see the change; between changes the clock stands still, so reads also take the path
     * where the version is already known and the origin is not asked.
     */
    private static final Duration TTL = Duration.ofMinutes(1);

    private static final List<String> KEYS = List.of("m/a", "m/b", "m/c", "m/d", "m/e");
    private static final int[] INITIAL_SIZES = {0, PAGE - 1, PAGE + 1, 3 * PAGE + 1, 30_000};

    private final List<Model> models = new ArrayList<>();

    /** What all chains together exercised: checked once at the end so the chains cannot silently miss a path. */
    private static final Map<String, AtomicLong> COVERAGE = new ConcurrentHashMap<>();

    private static void covered(String what, long n) {
        COVERAGE.computeIfAbsent(what, k -> new AtomicLong()).addAndGet(n);
    }

    @AfterContainer
    static void everyPathWasExercised() {
        System.out.println("model chains exercised: " + new TreeMap<>(COVERAGE));
        for (String what : List.of(
                "memory evictions",
                "disk hits",
                "disk evictions",
                "reopens",
                "past the end",
                "no such object",
                "held across close")) {
            AtomicLong n = COVERAGE.get(what);
            if (n == null || n.get() == 0) {
                throw new AssertionError("the chains never exercised " + what + ": " + COVERAGE);
            }
        }
    }

    @Property(tries = 60, seed = "20261123")
    void everyReadAgreesWithTheOrigin(@ForAll("chains") ActionChain<Model> chain) throws Exception {
        try {
            chain.withInvariant("stats, leases and capacities", Model::checkInvariants)
                    .run();
        } finally {
            for (Model model : models) {
                model.destroy();
            }
            models.clear();
        }
    }

    @Provide
    Arbitrary<ActionChain<Model>> chains() {
        return ActionChain.<Model>startWith(this::newModel)
                .withAction(4, new ReadWhole())
                .withAction(6, new ReadRange())
                .withAction(3, new ReadInto())
                .withAction(2, new StatObject())
                .withAction(2, new Invalidate())
                .withAction(3, new Rewrite())
                .withAction(1, new Delete())
                .withAction(2, new HoldLease())
                .withAction(2, new CloseHeldLease())
                .withAction(1, new Reopen())
                .withMaxTransformations(40);
    }

    private Model newModel() {
        try {
            Model model = new Model(Files.createTempDirectory("granary-model"));
            models.add(model);
            return model;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // ------------------------------------------------------------------------------------------------ actions

    record Range(long offset, long length) {}

    static Arbitrary<String> keys() {
        return Arbitraries.of(KEYS);
    }

    /** Ranges of an object of {@code size} bytes: inside, across page boundaries, at the end, and past the end. */
    static Arbitrary<Range> ranges(int size) {
        Arbitrary<Range> inside = Arbitraries.integers()
                .between(0, size)
                .flatMap(offset ->
                        Arbitraries.integers().between(0, size - offset).map(length -> new Range(offset, length)));
        Arbitrary<Range> atTheEnd = Arbitraries.integers()
                .between(0, Math.min(size, 2 * PAGE))
                .map(length -> new Range(size - length, length));
        Arbitrary<Range> pastTheEnd = Arbitraries.integers()
                .between(0, size + PAGE)
                .flatMap(offset -> {
                    long min = offset > size ? 0 : size - offset + 1L;
                    return Arbitraries.longs().between(min, min + PAGE).map(length -> new Range(offset, length));
                });
        if (size <= PAGE) {
            return Arbitraries.frequencyOf(Tuple.of(5, inside), Tuple.of(2, atTheEnd), Tuple.of(2, pastTheEnd));
        }
        // Starts just before a page boundary and ends after it.
        Arbitrary<Range> crossing = Arbitraries.integers()
                .between(1, (size - 1) / PAGE)
                .flatMap(page -> {
                    int boundary = page * PAGE;
                    return Arbitraries.integers()
                            .between(Math.max(0, boundary - 100), boundary - 1)
                            .flatMap(offset -> Arbitraries.integers()
                                    .between(boundary - offset + 1, size - offset)
                                    .map(length -> new Range(offset, length)));
                });
        return Arbitraries.frequencyOf(
                Tuple.of(4, inside), Tuple.of(3, crossing), Tuple.of(2, atTheEnd), Tuple.of(2, pastTheEnd));
    }

    /** A range of the key's current size, or of a size the absent object might have had. */
    static Arbitrary<Tuple.Tuple2<String, Range>> keyAndRange(Model m) {
        return keys().flatMap(key -> {
            byte[] bytes = m.reference.get(key);
            return ranges(bytes == null ? 10_000 : bytes.length).map(r -> Tuple.of(key, r));
        });
    }

    static Arbitrary<byte[]> contents() {
        Arbitrary<Integer> sizes = Arbitraries.frequencyOf(
                Tuple.of(2, Arbitraries.of(0, 1, PAGE - 1, PAGE, PAGE + 1, 2 * PAGE, 3 * PAGE + 1)),
                Tuple.of(3, Arbitraries.integers().between(0, MAX_SIZE)));
        return Combinators.combine(sizes, Arbitraries.longs()).as((size, seed) -> {
            byte[] bytes = new byte[size];
            new SplittableRandom(seed).nextBytes(bytes);
            return bytes;
        });
    }

    static final class ReadWhole implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return keys().map(key -> Transformer.mutate("read " + key, m -> m.readWhole(key)));
        }
    }

    static final class ReadRange implements Action.Dependent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer(Model state) {
            return keyAndRange(state)
                    .map(t -> Transformer.mutate(
                            "read " + t.get1() + " " + t.get2(), m -> m.readRange(t.get1(), t.get2())));
        }
    }

    static final class ReadInto implements Action.Dependent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer(Model state) {
            return Combinators.combine(keyAndRange(state), Arbitraries.of(true, false))
                    .as((t, direct) -> Transformer.mutate(
                            "readInto " + t.get1() + " " + t.get2() + (direct ? " direct" : " heap"),
                            m -> m.readInto(t.get1(), t.get2(), direct)));
        }
    }

    static final class StatObject implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return keys().map(key -> Transformer.mutate("stat " + key, m -> m.stat(key)));
        }
    }

    static final class Invalidate implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return keys().map(key -> Transformer.mutate("invalidate " + key, m -> m.cache.invalidate(key)));
        }
    }

    static final class Rewrite implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return Combinators.combine(keys(), contents())
                    .as((key, bytes) -> Transformer.mutate(
                            "rewrite " + key + " with " + bytes.length + " bytes", m -> m.write(key, bytes)));
        }
    }

    static final class Delete implements Action.Dependent<Model> {
        @Override
        public boolean precondition(Model state) {
            return !state.reference.isEmpty();
        }

        @Override
        public Arbitrary<Transformer<Model>> transformer(Model state) {
            return Arbitraries.of(List.copyOf(state.reference.keySet()))
                    .map(key -> Transformer.mutate("delete " + key, m -> m.delete(key)));
        }
    }

    static final class HoldLease implements Action.Dependent<Model> {
        @Override
        public boolean precondition(Model state) {
            return state.held.size() < MAX_HELD && !state.reference.isEmpty();
        }

        @Override
        public Arbitrary<Transformer<Model>> transformer(Model state) {
            return Arbitraries.of(List.copyOf(state.reference.keySet())).flatMap(key -> {
                int size = state.reference.get(key).length;
                return ranges(size)
                        .filter(r -> r.offset() + r.length() <= size)
                        .map(r -> Transformer.mutate("hold " + key + " " + r, m -> m.hold(key, r)));
            });
        }
    }

    static final class CloseHeldLease implements Action.Dependent<Model> {
        @Override
        public boolean precondition(Model state) {
            return !state.held.isEmpty();
        }

        @Override
        public Arbitrary<Transformer<Model>> transformer(Model state) {
            return Arbitraries.integers()
                    .between(0, state.held.size() - 1)
                    .map(i -> Transformer.mutate("close held lease " + i, m -> m.closeHeld(i)));
        }
    }

    static final class Reopen extends Action.JustMutate<Model> {
        @Override
        public void mutate(Model m) {
            m.reopen();
        }

        @Override
        public String description() {
            return "close and reopen the cache";
        }
    }

    // ------------------------------------------------------------------------------------------------ the system

    /** A lease the chain keeps open across actions, with the bytes it must keep showing. */
    record Held(Lease lease, byte[] expected) {}

    /** The cache under test, its tiers and origin directory, and the reference model. */
    static final class Model {

        final Path dir;
        final Path data;
        final Path diskDir;
        /** What the origin holds now: the reference every read is compared with. */
        final Map<String, byte[]> reference = new HashMap<>();
        /** Every version the cache has reported for each key, and the one it reports for the current bytes. */
        final Map<String, Set<String>> versionsSeen = new HashMap<>();

        final Map<String, String> currentVersion = new HashMap<>();
        final List<Held> held = new ArrayList<>();
        final AtomicLong clock = new AtomicLong();
        /** Each write gets an mtime of its own, so every write is a new version even if the inode is reused. */
        long mtimeSeconds = 1_700_000_000L;

        int temps;
        MemoryTier memory;
        DiskTier disk;
        TieredCache cache;
        /** The counters after the previous action, of the current cache instance. */
        CacheStats last;

        Model(Path dir) throws IOException {
            this.dir = dir;
            this.data = Files.createDirectories(dir.resolve("data"));
            this.diskDir = Files.createDirectories(dir.resolve("disk"));
            SplittableRandom random = new SplittableRandom(7);
            for (int i = 0; i < KEYS.size(); i++) {
                byte[] bytes = new byte[INITIAL_SIZES[i]];
                random.nextBytes(bytes);
                write(KEYS.get(i), bytes);
            }
            open();
        }

        void open() {
            memory = MemoryTier.builder().capacity(64 << 10).slabSize(64 << 10).build();
            disk = DiskTier.builder()
                    .directory(diskDir)
                    .capacity(96 << 10)
                    .segmentSize(16 << 10)
                    .build();
            cache = TieredCache.builder(PosixOrigin.of(data))
                    .tier(memory)
                    .tier(disk)
                    .pageSize(PAGE)
                    .metadataTtl(TTL)
                    .ticker(clock::get)
                    .leakDetection(LeakDetection.PARANOID)
                    .build();
            last = null;
        }

        // ---------------------------------------------------------------------------------------- origin changes

        /** Replaces the object the way datasets are published: a new file moved over the old one atomically. */
        void write(String key, byte[] bytes) {
            try {
                Path file = data.resolve(key);
                Files.createDirectories(file.getParent());
                Path tmp = dir.resolve("tmp-" + temps++);
                Files.write(tmp, bytes);
                Files.setLastModifiedTime(tmp, FileTime.from(mtimeSeconds++, TimeUnit.SECONDS));
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            reference.put(key, bytes);
            currentVersion.remove(key);
            clock.addAndGet(TTL.toNanos());
        }

        void delete(String key) {
            try {
                Files.delete(data.resolve(key));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            reference.remove(key);
            currentVersion.remove(key);
            clock.addAndGet(TTL.toNanos());
        }

        // ---------------------------------------------------------------------------------------- reads

        void readWhole(String key) {
            byte[] expected = reference.get(key);
            if (expected == null) {
                assertNoSuchObject(key, () -> cache.read(key).close());
                return;
            }
            try (Lease lease = cache.read(key)) {
                assertEquals(key, lease.key());
                assertEquals(0, lease.offset());
                assertEquals(expected.length, lease.length());
                Bytes.assertSame(expected, lease.bytes(), "whole " + key);
                closedLeaseRefusesAccess(lease);
            } catch (IOException e) {
                throw new AssertionError("read of " + key + " failed", e);
            }
        }

        void readRange(String key, Range r) {
            byte[] expected = reference.get(key);
            if (expected == null) {
                assertNoSuchObject(
                        key, () -> cache.read(key, r.offset(), r.length()).close());
                return;
            }
            if (r.offset() + r.length() > expected.length) {
                EOFException e = assertThrows(
                        EOFException.class,
                        () -> cache.read(key, r.offset(), r.length()),
                        key + " " + r + " of " + expected.length + " bytes");
                covered("past the end", 1);
                assertTrue(e.getMessage().contains(key), e.getMessage());
                return;
            }
            try (Lease lease = cache.read(key, r.offset(), r.length())) {
                assertEquals(r.offset(), lease.offset());
                Bytes.assertSame(range(expected, r), lease.bytes(), key + " " + r);
                closedLeaseRefusesAccess(lease);
            } catch (IOException e) {
                throw new AssertionError("read of " + key + " " + r + " failed", e);
            }
        }

        /** Reads into the middle of a buffer with guard bytes either side: exactly the range is written, or nothing. */
        void readInto(String key, Range r, boolean direct) {
            int guard = 5;
            int length = (int) r.length();
            ByteBuffer dst =
                    direct ? ByteBuffer.allocateDirect(length + 2 * guard) : ByteBuffer.allocate(length + 2 * guard);
            byte[] before = new byte[dst.capacity()];
            Arrays.fill(before, (byte) 0x5A);
            dst.put(before).clear().position(guard).limit(guard + length);
            byte[] expected = reference.get(key);
            if (expected == null) {
                assertNoSuchObject(key, () -> cache.readInto(key, r.offset(), dst));
                assertUnchanged(before, dst, guard);
                return;
            }
            if (r.offset() + r.length() > expected.length) {
                assertThrows(
                        EOFException.class,
                        () -> cache.readInto(key, r.offset(), dst),
                        key + " " + r + " of " + expected.length + " bytes");
                assertUnchanged(before, dst, guard);
                return;
            }
            try {
                cache.readInto(key, r.offset(), dst);
            } catch (IOException e) {
                throw new AssertionError("readInto of " + key + " " + r + " failed", e);
            }
            assertEquals(guard + length, dst.position(), "position after readInto");
            byte[] all = Bytes.toArray(dst.clear());
            Bytes.assertSame(range(expected, r), Arrays.copyOfRange(all, guard, guard + length), key + " " + r);
            for (int i = 0; i < guard; i++) {
                assertEquals((byte) 0x5A, all[i], "guard byte before the range");
                assertEquals((byte) 0x5A, all[guard + length + i], "guard byte after the range");
            }
        }

        void stat(String key) {
            byte[] expected = reference.get(key);
            if (expected == null) {
                assertNoSuchObject(key, () -> cache.stat(key));
                return;
            }
            ObjectInfo info;
            try {
                info = cache.stat(key);
            } catch (IOException e) {
                throw new AssertionError("stat of " + key + " failed", e);
            }
            assertEquals(key, info.key());
            assertEquals(expected.length, info.size(), "size of " + key);
            String known = currentVersion.get(key);
            Set<String> seen = versionsSeen.computeIfAbsent(key, k -> new HashSet<>());
            if (known != null) {
                assertEquals(known, info.version(), "the version of unchanged bytes");
            } else {
                assertFalse(
                        seen.contains(info.version()),
                        "rewritten " + key + " reported an old version " + info.version());
                seen.add(info.version());
                currentVersion.put(key, info.version());
            }
        }

        // ---------------------------------------------------------------------------------------- leases

        void hold(String key, Range r) {
            try {
                Lease lease = cache.read(key, r.offset(), r.length());
                held.add(new Held(lease, range(reference.get(key), r)));
            } catch (IOException e) {
                throw new AssertionError("read of " + key + " " + r + " failed", e);
            }
        }

        void closeHeld(int i) {
            Held h = held.remove(i);
            Bytes.assertSame(h.expected(), h.lease().bytes(), "held " + h.lease());
            h.lease().close();
            closedLeaseRefusesAccess(h.lease());
        }

        /** Leases stay valid across close; the tiers give everything back once the last one is closed. */
        void reopen() {
            TieredCache old = cache;
            try {
                old.close();
                old.close();
            } catch (IOException e) {
                throw new AssertionError("close failed", e);
            }
            assertThrows(IllegalStateException.class, () -> old.read(KEYS.getFirst()));
            covered("reopens", 1);
            covered("held across close", counted());
            countCoverage(old.stats());
            for (Held h : held) {
                Bytes.assertSame(h.expected(), h.lease().bytes(), "held across close: " + h.lease());
            }
            assertEquals(counted(), old.stats().openLeases(), "open leases after close");
            while (!held.isEmpty()) {
                closeHeld(held.size() - 1);
            }
            assertEquals(0, old.stats().openLeases(), "open leases once all are closed");
            assertTrue(memory.isReleased(), "memory tier released after close and the last lease");
            assertTrue(disk.isReleased(), "disk tier released after close and the last lease");
            open();
        }

        // ---------------------------------------------------------------------------------------- invariants

        /** The held leases the cache counts: an empty lease holds nothing and is not counted. */
        long counted() {
            return held.stream().filter(h -> h.expected().length > 0).count();
        }

        void checkInvariants() {
            CacheStats now = cache.stats();
            assertEquals(counted(), now.openLeases(), "open leases (the chain holds " + held + ")");
            assertEquals(0, now.leakedLeases(), "leaked leases");
            for (Held h : held) {
                Bytes.assertSame(h.expected(), h.lease().bytes(), "held " + h.lease());
            }
            for (TierStats tier : now.tiers()) {
                assertTrue(tier.usedBytes() <= tier.capacityBytes(), "used bytes within capacity: " + tier);
                assertEquals(0, tier.corruptions(), "corruptions: " + tier);
            }
            if (last != null) {
                for (int i = 0; i < now.tiers().size(); i++) {
                    TierStats a = last.tiers().get(i);
                    TierStats b = now.tiers().get(i);
                    notDecreasing(b.name() + " hits", a.hits(), b.hits());
                    notDecreasing(b.name() + " misses", a.misses(), b.misses());
                    notDecreasing(b.name() + " hit bytes", a.hitBytes(), b.hitBytes());
                    notDecreasing(b.name() + " evictions", a.evictions(), b.evictions());
                    notDecreasing(b.name() + " rejections", a.rejections(), b.rejections());
                    notDecreasing(b.name() + " failures", a.failures(), b.failures());
                    notDecreasing(b.name() + " corruptions", a.corruptions(), b.corruptions());
                }
                OriginStats a = last.origin();
                OriginStats b = now.origin();
                notDecreasing("origin reads", a.reads(), b.reads());
                notDecreasing("origin bytes", a.bytes(), b.bytes());
                notDecreasing("metadata requests", a.metadataRequests(), b.metadataRequests());
                notDecreasing("origin errors", a.errors(), b.errors());
                notDecreasing("origin retries", a.retries(), b.retries());
                notDecreasing("leaked leases", last.leakedLeases(), now.leakedLeases());
                notDecreasing("stale serves", last.staleServes(), now.staleServes());
            }
            last = now;
        }

        void destroy() throws IOException {
            for (Held h : held) {
                h.lease().close();
            }
            held.clear();
            countCoverage(cache.stats());
            cache.close();
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
            assertTrue(memory.isReleased() && disk.isReleased(), "tiers released after the chain");
        }

        private static void countCoverage(CacheStats stats) {
            covered("memory evictions", stats.tiers().get(0).evictions());
            covered("disk hits", stats.tiers().get(1).hits());
            covered("disk evictions", stats.tiers().get(1).evictions());
        }

        private static void notDecreasing(String what, long before, long after) {
            if (after < before) {
                throw new AssertionError(what + " decreased from " + before + " to " + after);
            }
        }

        private static byte[] range(byte[] bytes, Range r) {
            return Arrays.copyOfRange(bytes, (int) r.offset(), (int) (r.offset() + r.length()));
        }

        private static void closedLeaseRefusesAccess(Lease lease) {
            lease.close();
            lease.close(); // idempotent
            assertTrue(lease.isClosed());
            assertThrows(IllegalStateException.class, lease::bytes);
        }

        private static void assertNoSuchObject(String key, Executable read) {
            NoSuchObjectException e = assertThrows(NoSuchObjectException.class, read, "deleted " + key);
            covered("no such object", 1);
            assertTrue(e.getMessage().contains(key), e.getMessage());
        }

        private static void assertUnchanged(byte[] before, ByteBuffer dst, int guard) {
            assertEquals(guard, dst.position(), "position of a buffer a failed readInto was given");
            Bytes.assertSame(before, Bytes.toArray(dst.duplicate().clear()), "buffer after a failed readInto");
        }

        @Override
        public String toString() {
            Map<String, Integer> sizes = new HashMap<>();
            reference.forEach((k, v) -> sizes.put(k, v.length));
            return "Model" + sizes + ", held " + held.size();
        }
    }
}
