// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import java.util.LinkedHashMap;
import java.util.Map;

/** Least recently used, by a {@link LinkedHashMap} in access order. Not thread-safe. */
final class LruSubject implements Subject {
    private final int capacity;
    private final Map<Integer, Boolean> map;

    LruSubject(int capacity) {
        this.capacity = Config.checkCapacity(capacity);
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

    @Override
    public int ceilingItems() {
        return capacity;
    }
}
