// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.state.Action;
import net.jqwik.api.state.ActionChain;
import net.jqwik.api.state.Transformer;

/**
 * A model-based test (jqwik's {@link ActionChain}) of {@link SlotPolicy}, the memory tier's slot-indexed W-TinyLFU,
 * against a reference written the plain way: three {@link LinkedHashSet}s of slot ids for window, probation and
 * protected, the same rules. Random chains of inserts (pages of 1-40 blocks into a capacity of 64 blocks, so the
 * window overflows and admission decides all the time), reads, removals and evictions for room; after every action
 * the three lists agree element by element and in order, the weights agree and stay within the capacity, and the
 * same slots were evicted. Frequencies are exact counts in both (the count-min sketch is {@link CountMinSketchTest}'s
 * matter), so every admission decision must be the same. Slot ids span more than one column chunk.
 */
class SlotPolicyModelTest {

    static final long CAPACITY = 64 * 512;
    /** Small chunks (8 slots) so lists cross chunks; slot ids go up to 40. */
    static final int SHIFT = 3;

    @Property(tries = 300, seed = "20261124")
    void thePolicyAgreesWithTheReference(@ForAll("chains") ActionChain<Model> chain) {
        chain.withInvariant("lists, weights and evictions agree", Model::check).run();
    }

    @Provide
    Arbitrary<ActionChain<Model>> chains() {
        return ActionChain.startWith(Model::new)
                .withAction(6, new Insert())
                .withAction(6, new Access())
                .withAction(1, new Remove())
                .withAction(1, new Evict())
                .withMaxTransformations(80);
    }

    /** The policy under test and the reference, fed the same actions. */
    static final class Model implements SlotPolicy.Slots {
        final Map<Integer, Long> weights = new HashMap<>();
        final Map<Long, Integer> counts = new HashMap<>();
        final List<Integer> evicted = new ArrayList<>();
        final SlotPolicy policy;
        final Reference reference = new Reference();

        Model() {
            SlotPolicy.Frequencies exact = new SlotPolicy.Frequencies() {
                @Override
                public void increment(long hash) {
                    counts.merge(hash, 1, Integer::sum);
                }

                @Override
                public int frequency(long hash) {
                    return counts.getOrDefault(hash, 0);
                }

                @Override
                public void ensureCapacity(int pages) {}
            };
            policy = new SlotPolicy(CAPACITY, SHIFT, this, exact);
            policy.grow(6);
        }

        @Override
        public long weight(int slot) {
            return weights.get(slot);
        }

        @Override
        public long hash(int slot) {
            return slot;
        }

        @Override
        public void evicted(int slot) {
            evicted.add(slot);
        }

        /** A slot id not held now (the tier reuses ids of pages that left: so does this). */
        boolean held(int slot) {
            return policy.region(slot) != SlotPolicy.NONE;
        }

        void insert(int slot, long weight) {
            if (held(slot)) {
                return;
            }
            weights.put(slot, weight);
            int before = evicted.size();
            policy.insert(slot);
            List<Integer> theirs = reference.insert(slot, weight);
            assertEquals(theirs, evicted.subList(before, evicted.size()), "evicted by inserting " + slot);
        }

        void access(int slot) {
            if (!weights.containsKey(slot)) {
                return;
            }
            policy.access(slot);
            reference.access(slot);
        }

        void remove(int slot) {
            if (!weights.containsKey(slot)) {
                return;
            }
            policy.remove(slot);
            reference.remove(slot);
        }

        void evict(long bytes) {
            int before = evicted.size();
            long went = policy.evict(bytes);
            List<Integer> theirs = reference.evict(bytes);
            assertEquals(theirs, evicted.subList(before, evicted.size()), "evicted for " + bytes + " bytes");
            long sum = 0;
            for (int s : theirs) {
                sum += weights.get(s);
            }
            assertEquals(sum, went);
        }

        void check() {
            assertEquals(List.copyOf(reference.lists.get(0)), toList(policy.list(SlotPolicy.WINDOW)), "window");
            assertEquals(List.copyOf(reference.lists.get(1)), toList(policy.list(SlotPolicy.PROBATION)), "probation");
            assertEquals(List.copyOf(reference.lists.get(2)), toList(policy.list(SlotPolicy.PROTECTED)), "protected");
            assertEquals(reference.weight(0), policy.weight(SlotPolicy.WINDOW));
            assertEquals(reference.weight(1), policy.weight(SlotPolicy.PROBATION));
            assertEquals(reference.weight(2), policy.weight(SlotPolicy.PROTECTED));
            assertTrue(policy.weight() <= CAPACITY, "total " + policy.weight() + " > " + CAPACITY);
            assertEquals(reference.size(), policy.size());
        }

        private static List<Integer> toList(int[] slots) {
            List<Integer> out = new ArrayList<>();
            for (int s : slots) {
                out.add(s);
            }
            return out;
        }

        @Override
        public String toString() {
            return policy.toString();
        }

        /** W-TinyLFU the plain way: the rules of SlotPolicy's documentation, over LinkedHashSets (LRU first). */
        final class Reference {
            final List<LinkedHashSet<Integer>> lists =
                    List.of(new LinkedHashSet<>(), new LinkedHashSet<>(), new LinkedHashSet<>());
            final long windowMax = Math.max(1, CAPACITY / 100);
            final long protectedMax = (CAPACITY - windowMax) / 5 * 4;
            final Map<Long, Integer> freq = new HashMap<>();
            List<Integer> out;

            long weight(int list) {
                long sum = 0;
                for (int s : lists.get(list)) {
                    sum += weights.get(s);
                }
                return sum;
            }

            long total() {
                return weight(0) + weight(1) + weight(2);
            }

            int size() {
                return lists.get(0).size() + lists.get(1).size() + lists.get(2).size();
            }

            int listOf(int slot) {
                for (int i = 0; i < 3; i++) {
                    if (lists.get(i).contains(slot)) {
                        return i;
                    }
                }
                return -1;
            }

            int head(int list) {
                Set<Integer> l = lists.get(list);
                return l.isEmpty() ? -1 : l.iterator().next();
            }

            List<Integer> insert(int slot, long weight) {
                out = new ArrayList<>();
                freq.merge((long) slot, 1, Integer::sum);
                lists.get(0).add(slot);
                while (weight(0) > windowMax) {
                    int candidate = head(0);
                    lists.get(0).remove(candidate);
                    if (total() + weights.get(candidate) <= CAPACITY) {
                        lists.get(1).add(candidate);
                        continue;
                    }
                    int victim = head(1) >= 0 ? head(1) : head(2);
                    if (victim < 0) {
                        lists.get(1).add(candidate);
                    } else if (freq.getOrDefault((long) candidate, 0) > freq.getOrDefault((long) victim, 0)) {
                        lists.get(listOf(victim)).remove(victim);
                        out.add(victim);
                        lists.get(1).add(candidate);
                    } else {
                        out.add(candidate);
                    }
                }
                while (total() > CAPACITY) {
                    int s = coldest();
                    lists.get(listOf(s)).remove(s);
                    out.add(s);
                }
                return out;
            }

            int coldest() {
                return head(1) >= 0 ? head(1) : head(0) >= 0 ? head(0) : head(2);
            }

            void access(int slot) {
                int list = listOf(slot);
                if (list < 0) {
                    return;
                }
                freq.merge((long) slot, 1, Integer::sum);
                lists.get(list).remove(slot);
                if (list == 0) {
                    lists.get(0).add(slot);
                } else {
                    lists.get(2).add(slot);
                    while (list == 1 && weight(2) > protectedMax && head(2) != slot) {
                        int demoted = head(2);
                        lists.get(2).remove(demoted);
                        lists.get(1).add(demoted);
                    }
                }
            }

            void remove(int slot) {
                int list = listOf(slot);
                if (list >= 0) {
                    lists.get(list).remove(slot);
                }
            }

            List<Integer> evict(long bytes) {
                out = new ArrayList<>();
                long went = 0;
                while (went < bytes) {
                    int s = coldest();
                    if (s < 0) {
                        break;
                    }
                    went += weights.get(s);
                    lists.get(listOf(s)).remove(s);
                    out.add(s);
                }
                return out;
            }
        }
    }

    static final class Insert implements Action.Dependent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer(Model state) {
            return Arbitraries.integers()
                    .between(0, 40)
                    .flatMap(slot -> Arbitraries.integers()
                            .between(1, 40)
                            .map(blocks -> Transformer.mutate(
                                    "insert " + slot + " (" + blocks + " blocks)",
                                    m -> m.insert(slot, blocks * 512L))));
        }
    }

    static final class Access implements Action.Dependent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer(Model state) {
            return Arbitraries.integers()
                    .between(0, 40)
                    .map(slot -> Transformer.mutate("access " + slot, m -> m.access(slot)));
        }
    }

    static final class Remove implements Action.Dependent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer(Model state) {
            return Arbitraries.integers()
                    .between(0, 40)
                    .map(slot -> Transformer.mutate("remove " + slot, m -> m.remove(slot)));
        }
    }

    static final class Evict implements Action.Dependent<Model> {
        @Override
        public Arbitrary<Transformer<Model>> transformer(Model state) {
            return Arbitraries.longs()
                    .between(1, 20 * 512L)
                    .map(bytes -> Transformer.mutate("evict " + bytes, m -> m.evict(bytes)));
        }
    }
}
