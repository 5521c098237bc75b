// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.Transformer;

/**
 * A model-based test (jqwik's {@link ActionChain}) of the memory tier's slot table ({@link MemorySlots}) with its
 * default policy, against a plain map from page key to bytes. Random chains of fills, lookups, hinted lookups, held
 * and released leases, removals, invalidations and evictions for room, over 24 pages of 1-16 KiB in a 64 KiB tier of
 * 64 KiB slabs: slots are reused all the time. The eviction listener reports what the policy evicts, and the model
 * drops it. After every action: a lookup finds a page exactly when the model holds it, with the model's bytes; the tier
 * holds as many pages as the model; used bytes stay within the capacity; held pages keep their bytes; a hint made
 * before its page left never reaches another page. At the end, once the tier is closed and every lease released, all
 * memory is returned and no object name is left.
 */
class MemoryTierModelTest {

    static final int CAPACITY = 64 << 10;
    static final int PAGES = 24;

    @Property(tries = 150, seed = "20261124")
    void theTierHoldsExactlyWhatTheModelSays(@ForAll("chains") ActionChain<Model> chain) {
        Model[] last = new Model[1];
        try {
            chain.withInvariant("the tier agrees with the model", m -> {
                        last[0] = m;
                        m.check();
                    })
                    .run();
        } finally {
            if (last[0] != null) {
                last[0].closeAndCheckReleased();
            }
        }
    }

    @Provide
    Arbitrary<ActionChain<Model>> chains() {
        return ActionChain.startWith(Model::new)
                .withAction(6, new Fill())
                .withAction(6, new Get())
                .withAction(2, new Touch())
                .withAction(2, new Hold())
                .withAction(2, new ReleaseHeld())
                .withAction(1, new Remove())
                .withAction(1, new Invalidate())
                .withMaxTransformations(60);
    }

    static PageKey key(int page) {
        // Pages 0-11 belong to object "a" (several pages of one object), the others each to an object of its own.
        String object = page < 12 ? "a" : "o" + page;
        int length = 1024 + (page * 2503) % (15 * 1024);
        return new PageKey("t://", object, "v1", page < 12 ? page * 16384L : 0, length);
    }

    static byte[] bytes(int page) {
        byte[] b = new byte[key(page).length()];
        new SplittableRandom(page).nextBytes(b);
        return b;
    }

    static final class Model {
        final MemoryTier tier =
                MemoryTier.builder().capacity(CAPACITY).slabSize(CAPACITY).build();
        final Map<PageKey, Integer> reference = new HashMap<>();
        final List<Page> leases = new ArrayList<>();
        final List<byte[]> leaseBytes = new ArrayList<>();
        final List<PageKey> evicted = new ArrayList<>();
        /** A hint per page, kept after the page leaves, as a cache's metadata may keep one. */
        final Map<Integer, Object> hints = new HashMap<>();

        Model() {
            tier.evictionListener(page -> {
                evicted.add(page.key());
                assertEquals(page.key().length(), page.length());
            });
        }

        void fill(int page) {
            PageKey key = key(page);
            evicted.clear();
            boolean stored;
            Page p = tier.allocate(key); // may evict for room: those left before this page came
            dropEvicted();
            if (p == null) {
                stored = false;
            } else {
                MemorySegment.copy(MemorySegment.ofArray(bytes(page)), 0, p.writableSegment(), 0, key.length());
                p.seal();
                stored = tier.put(p);
                p.release();
            }
            if (stored) {
                reference.put(key, page);
            }
            dropEvicted(); // the policy may evict at the insert, this very page included
        }

        private void dropEvicted() {
            for (PageKey gone : evicted) {
                assertTrue(reference.remove(gone) != null, "evicted " + gone + ", which the model did not hold");
            }
            evicted.clear();
        }

        void get(int page) {
            PageKey key = key(page);
            Page p = tier.get(key);
            if (reference.containsKey(key)) {
                assertNotNull(p, key + " is in the model");
                try {
                    assertArrayEquals(bytes(page), p.segment().toArray(ValueLayout.JAVA_BYTE), "bytes of " + key);
                    assertEquals(key, p.key());
                    hints.put(page, tier.hint(p));
                } finally {
                    p.release();
                }
            } else {
                assertNull(p, key + " is not in the model");
            }
        }

        void touch(int page) {
            Object hint = hints.get(page);
            if (hint == null) {
                return;
            }
            Page p = tier.touch(hint);
            if (p != null) {
                try {
                    assertTrue(reference.containsKey(key(page)), "a hint reached " + key(page) + ", not in the model");
                    assertEquals(key(page), p.key());
                    assertArrayEquals(bytes(page), p.segment().toArray(ValueLayout.JAVA_BYTE), "bytes by hint");
                } finally {
                    p.release();
                }
            }
        }

        void hold(int page) {
            Page p = tier.get(key(page));
            if (p != null && leases.size() < 3) {
                leases.add(p);
                leaseBytes.add(bytes(page));
            } else if (p != null) {
                p.release();
            }
        }

        void releaseHeld() {
            if (!leases.isEmpty()) {
                leases.removeFirst().release();
                leaseBytes.removeFirst();
            }
        }

        void remove(int page) {
            boolean removed = tier.remove(key(page));
            assertEquals(reference.remove(key(page)) != null, removed, "remove " + key(page));
        }

        void invalidate(int page) {
            PageKey key = key(page);
            tier.invalidate(key.origin(), key.key());
            reference.keySet().removeIf(k -> k.key().equals(key.key()));
        }

        void check() {
            assertEquals(reference.size(), tier.pageCount(), "pages held: " + reference.keySet());
            assertTrue(tier.stats().usedBytes() <= CAPACITY, tier.stats().toString());
            for (int i = 0; i < leases.size(); i++) {
                assertArrayEquals(
                        leaseBytes.get(i),
                        leases.get(i).segment().toArray(ValueLayout.JAVA_BYTE),
                        "a held page keeps its bytes");
            }
            assertTrue(
                    tier.slots().nameCount() <= reference.size() + leases.size(),
                    "names: " + tier.slots().nameCount());
        }

        void closeAndCheckReleased() {
            tier.close();
            leases.forEach(Page::release);
            leases.clear();
            assertTrue(tier.isReleased(), "every byte returned once every lease is released");
            assertEquals(0, tier.slots().nameCount(), "no name outlives its pages");
        }

        @Override
        public String toString() {
            return "Model" + reference.values() + " " + tier;
        }
    }

    static Arbitrary<Integer> pages() {
        return Arbitraries.integers().between(0, PAGES - 1);
    }

    static final class Fill implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return pages().map(p -> Transformer.mutate("fill " + p, m -> m.fill(p)));
        }
    }

    static final class Get implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return pages().map(p -> Transformer.mutate("get " + p, m -> m.get(p)));
        }
    }

    static final class Touch implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return pages().map(p -> Transformer.mutate("touch " + p, m -> m.touch(p)));
        }
    }

    static final class Hold implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return pages().map(p -> Transformer.mutate("hold " + p, m -> m.hold(p)));
        }
    }

    static final class ReleaseHeld implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return Arbitraries.just(Transformer.mutate("release a held page", Model::releaseHeld));
        }
    }

    static final class Remove implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return pages().map(p -> Transformer.mutate("remove " + p, m -> m.remove(p)));
        }
    }

    static final class Invalidate implements Action.Independent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer() {
            return pages().map(p -> Transformer.mutate("invalidate the object of " + p, m -> m.invalidate(p)));
        }
    }
}
