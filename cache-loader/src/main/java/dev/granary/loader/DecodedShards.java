// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

/**
 * The decoded bytes of a dataset's encoded shards ({@link EncodedShards}), held on the heap, least recently used
 * first out, within a byte budget: so that an epoch decodes each shard once whether it reads the shard in parts or
 * sample by sample, as long as the shards it reads at once fit (docs/decisions/0024-compressed-shards.md). The budget
 * is soft by one shard: the shard just decoded is always kept. Concurrent reads of a shard being decoded wait for that
 * one decode. Counted: decodes, reuses, bytes read and decoded, and the time spent decoding. Thread-safe.
 */
final class DecodedShards {

    /** Decodes one shard: reads its stored bytes and decodes them. */
    @FunctionalInterface
    interface Decode {
        ByteBuffer run() throws IOException;
    }

    private final long capacity;
    private final Map<Integer, CompletableFuture<ByteBuffer>> flights = new ConcurrentHashMap<>();

    // Guarded by this.
    private final LinkedHashMap<Integer, ByteBuffer> held = new LinkedHashMap<>(16, 0.75f, true);
    private long heldBytes;
    private long decodes;
    private long reuses;
    private long storedBytes;
    private long decodedBytes;
    private long decodeNanos;

    DecodedShards(long capacity) {
        if (capacity < 0) {
            throw new IllegalArgumentException(
                    "decoded shard budget: " + capacity + " bytes (expected: >= 0; 0 keeps only the last shard)");
        }
        this.capacity = capacity;
    }

    /**
     * {@return shard {@code shard}'s decoded bytes} (a duplicate: position 0, limit its size), decoding it by
     * {@code decode} unless held or being decoded
     */
    ByteBuffer get(int shard, Decode decode) throws IOException {
        synchronized (this) {
            ByteBuffer b = held.get(shard);
            if (b != null) {
                reuses++;
                return b.duplicate();
            }
        }
        CompletableFuture<ByteBuffer> mine = new CompletableFuture<>();
        CompletableFuture<ByteBuffer> flight = flights.putIfAbsent(shard, mine);
        if (flight != null) {
            ByteBuffer b = await(flight);
            synchronized (this) {
                reuses++;
            }
            return b.duplicate();
        }
        try {
            ByteBuffer b;
            synchronized (this) {
                b = held.get(shard); // decoded by a flight that ended between the look and the claim
                if (b != null) {
                    reuses++;
                }
            }
            if (b == null) {
                b = decode.run().asReadOnlyBuffer();
                keep(shard, b);
            }
            mine.complete(b);
            return b.duplicate();
        } catch (IOException | RuntimeException | Error e) {
            mine.completeExceptionally(e);
            throw e;
        } finally {
            flights.remove(shard, mine);
        }
    }

    /** Counts one decode: {@code stored} bytes read, {@code decoded} bytes made, in {@code nanos}. */
    synchronized void counted(long stored, long decoded, long nanos) {
        decodes++;
        storedBytes += stored;
        decodedBytes += decoded;
        decodeNanos += nanos;
    }

    private synchronized void keep(int shard, ByteBuffer b) {
        held.put(shard, b);
        heldBytes += b.capacity();
        Iterator<Map.Entry<Integer, ByteBuffer>> it = held.entrySet().iterator();
        while (heldBytes > capacity && held.size() > 1 && it.hasNext()) {
            Map.Entry<Integer, ByteBuffer> e = it.next();
            if (e.getKey() != shard) {
                heldBytes -= e.getValue().capacity();
                it.remove();
            }
        }
    }

    private static ByteBuffer await(CompletableFuture<ByteBuffer> flight) throws IOException {
        try {
            return flight.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for a shard being decoded");
        } catch (ExecutionException e) {
            switch (e.getCause()) {
                case IOException io -> throw io;
                case RuntimeException re -> throw re;
                case Error err -> throw err;
                default -> throw new IOException(e.getCause());
            }
        }
    }

    synchronized ShardedDataset.Decoding stats() {
        return new ShardedDataset.Decoding(decodes, reuses, storedBytes, decodedBytes, decodeNanos, heldBytes);
    }
}
