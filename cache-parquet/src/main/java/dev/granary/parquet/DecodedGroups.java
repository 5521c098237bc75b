// SPDX-License-Identifier: Apache-2.0
package dev.granary.parquet;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The decoded row groups a {@link ParquetFormat} holds, so that a row group is decoded once for all its rows rather
 * than once per row: bounded in bytes, least recently used first out, and a group dropped as soon as all its rows have
 * been served (it is decoded again next epoch). Concurrent requests for one group wait for one decode. Always holds
 * the group being served, even if it alone exceeds the bound.
 *
 * <p>Thread-safe. Cost: the decoded groups' bytes (at most the bound, plus one group) and a map entry per group held.
 */
final class DecodedGroups {

    /** Decodes one row group from its extent. */
    @FunctionalInterface
    interface Decoder {
        ParquetFormat.DecodedGroup decode(ParquetIndex file, int group, ByteBuffer extent) throws IOException;
    }

    /** One group's place: decoded under its own lock, so that other groups are not held up. */
    private static final class Slot {
        ParquetFormat.DecodedGroup value;
        long bytes;
        int served;
        boolean counted;
    }

    /** A group of one file's index: indexes compare by identity, so one index's groups never mix with another's. */
    private record Key(ParquetIndex file, int group) {}

    private final long bound;
    private final Decoder decoder;
    private final LinkedHashMap<Key, Slot> slots = new LinkedHashMap<>(16, 0.75f, true);
    private long held;
    private long decodes;
    private long nanos;

    DecodedGroups(long bound, Decoder decoder) {
        this.bound = bound;
        this.decoder = decoder;
    }

    /** {@return group {@code group} of {@code file} decoded, from {@code extent} if it must be decoded now} */
    ParquetFormat.DecodedGroup get(ParquetIndex file, int group, ByteBuffer extent) throws IOException {
        Key key = new Key(file, group);
        Slot slot;
        synchronized (this) {
            slot = slots.computeIfAbsent(key, k -> new Slot());
        }
        ParquetFormat.DecodedGroup value;
        synchronized (slot) {
            if (slot.value == null) {
                long t0 = System.nanoTime();
                try {
                    slot.value = decoder.decode(file, group, extent);
                } catch (IOException | RuntimeException | Error e) {
                    synchronized (this) {
                        slots.remove(key, slot);
                    }
                    throw e;
                }
                slot.bytes = slot.value.bytes();
                synchronized (this) {
                    decodes++;
                    nanos += System.nanoTime() - t0;
                }
            }
            value = slot.value;
        }
        synchronized (this) {
            if (slots.get(key) == slot) {
                if (!slot.counted) {
                    slot.counted = true;
                    held += slot.bytes;
                    evict(slot);
                }
                if (++slot.served >= file.rows(group)) {
                    slots.remove(key);
                    held -= slot.bytes;
                }
            }
        }
        return value;
    }

    /** Drops the least recently used groups until the held ones fit the bound, never {@code keep}. */
    private void evict(Slot keep) {
        Iterator<Map.Entry<Key, Slot>> it = slots.entrySet().iterator();
        while (held > bound && it.hasNext()) {
            Slot s = it.next().getValue();
            if (s != keep && s.counted) {
                it.remove();
                held -= s.bytes;
            }
        }
    }

    synchronized long decodes() {
        return decodes;
    }

    synchronized long nanos() {
        return nanos;
    }

    synchronized long held() {
        return held;
    }
}
