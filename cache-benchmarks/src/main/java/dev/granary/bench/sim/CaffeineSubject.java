// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.sim;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;

/**
 * Caffeine's W-TinyLFU, the real library, {@code maximumSize(C)}, with maintenance run on the caller's thread: a hit
 * is {@code getIfPresent != null}, a miss is followed by {@code put} and {@code cleanUp()} so that evictions happen
 * before the next access. Not thread-safe (one simulation thread).
 */
final class CaffeineSubject implements Subject {
    private final int capacity;
    private final Cache<Integer, Boolean> cache;

    CaffeineSubject(int capacity) {
        this.capacity = Config.checkCapacity(capacity);
        cache = Caffeine.newBuilder()
                .maximumSize(capacity)
                .executor(Runnable::run)
                .build();
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

    @Override
    public int ceilingItems() {
        return capacity;
    }
}
