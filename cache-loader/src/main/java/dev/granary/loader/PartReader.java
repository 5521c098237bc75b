// SPDX-License-Identifier: Apache-2.0
package dev.granary.loader;

import dev.granary.Lease;
import dev.granary.LoaderSupport;
import dev.granary.ObjectInfo;
import java.io.EOFException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reads a shard for a {@link ShardFormat#scan} out of its parts: one cached extent per part, the next part fetched
 * while the current one is parsed. A range inside one part is a view of it; a range across a part boundary (a
 * header, a PAX record) is assembled by copying. Holds at most the current part and the next; not thread-safe.
 */
final class PartReader implements ShardReader, AutoCloseable {

    private final LoaderSupport support;
    private final ObjectInfo shard;
    private final int partSize;
    private final int parts;
    private final AtomicLong bytes;
    private int part = -1;
    private Lease lease;
    private ByteBuffer current;
    private CompletableFuture<Lease> next;
    private int nextPart = -1;

    PartReader(LoaderSupport support, ObjectInfo shard, int partSize, AtomicLong bytes) {
        this.support = support;
        this.shard = shard;
        this.partSize = partSize;
        this.parts = ShardParts.count(shard.size(), partSize);
        this.bytes = bytes;
    }

    @Override
    public long size() {
        return shard.size();
    }

    @Override
    public ByteBuffer read(long offset, int length) throws IOException {
        if (offset < 0 || length < 0 || offset > shard.size() - length) {
            throw new EOFException("range [" + offset + ", +" + length + ") of shard '" + shard.key() + "': past"
                    + " the end (expected: within its " + shard.size() + " bytes)");
        }
        int p = ShardParts.partOf(offset, partSize);
        ByteBuffer first = part(p);
        int within = (int) (offset - ShardParts.start(p, partSize));
        if (within + length <= first.remaining()) {
            return first.slice(first.position() + within, length);
        }
        byte[] out = new byte[length];
        int done = 0;
        long pos = offset;
        while (done < length) {
            int q = ShardParts.partOf(pos, partSize);
            ByteBuffer b = part(q);
            int at = (int) (pos - ShardParts.start(q, partSize));
            int n = Math.min(length - done, b.remaining() - at);
            b.get(b.position() + at, out, done, n);
            done += n;
            pos += n;
        }
        return ByteBuffer.wrap(out);
    }

    private ByteBuffer part(int p) throws IOException {
        if (p == part) {
            return current;
        }
        closeCurrent();
        Lease l;
        if (p == nextPart) {
            CompletableFuture<Lease> f = next;
            next = null;
            nextPart = -1;
            l = await(f);
        } else {
            cancelNext();
            l = fetch(p);
        }
        lease = l;
        current = l.bytes();
        part = p;
        if (p + 1 < parts) {
            int q = p + 1;
            nextPart = q;
            next = new CompletableFuture<>();
            CompletableFuture<Lease> f = next;
            Thread.ofVirtual().name("granary-shard-part").start(() -> {
                try {
                    f.complete(fetch(q));
                } catch (Throwable t) {
                    f.completeExceptionally(t);
                }
            });
        }
        return current;
    }

    private Lease fetch(int p) throws IOException {
        int n = ShardParts.length(p, shard.size(), partSize);
        Lease l = support.readExtent(shard, ShardParts.start(p, partSize), n);
        bytes.addAndGet(n);
        return l;
    }

    private static Lease await(CompletableFuture<Lease> f) throws IOException {
        try {
            return f.get();
        } catch (InterruptedException e) {
            // the part still arrives: release it then, whatever else happens to this reader
            var unused = f.thenAccept(Lease::close);
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while reading a shard part");
        } catch (java.util.concurrent.ExecutionException e) {
            switch (e.getCause()) {
                case IOException io -> throw io;
                case RuntimeException re -> throw re;
                case Error err -> throw err;
                default -> throw new IOException(e.getCause());
            }
        }
    }

    private void closeCurrent() {
        if (lease != null) {
            lease.close();
            lease = null;
            current = null;
            part = -1;
        }
    }

    /** Waits for a part read ahead but not needed, and releases it: no lease outlives the reader. */
    private void cancelNext() {
        if (next != null) {
            CompletableFuture<Lease> f = next;
            next = null;
            nextPart = -1;
            try {
                f.join().close();
            } catch (RuntimeException ignored) {
                // the read-ahead failed: nothing to release, and nobody needs its error
            }
        }
    }

    @Override
    public void close() {
        closeCurrent();
        cancelNext();
    }
}
