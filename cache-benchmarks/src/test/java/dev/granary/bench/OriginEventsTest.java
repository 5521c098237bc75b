// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.granary.Lease;
import dev.granary.ObjectInfo;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.origin.support.OriginLimits;
import dev.granary.origin.support.RetryLoop;
import dev.granary.spi.Origin;
import dev.granary.tier.MemoryTier;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The origin-side JFR events of a real cache over real files: a {@code dev.granary.CoalescedMiss} when a second
 * reader joins the origin read in flight for the same page (the read is held at the origin until the second reader
 * has joined), and the retries an origin's {@link RetryLoop} made, counted into that read's
 * {@code dev.granary.OriginRead}. (Here because this module's tests can read {@code jdk.jfr}.)
 */
@Timeout(60)
class OriginEventsTest {

    @TempDir
    Path dir;

    /** A POSIX origin whose reads wait at a gate, and fail their first {@code failures} attempts through RetryLoop. */
    private static final class GatedOrigin implements Origin {
        final Origin inner;
        final CountDownLatch gate;
        final AtomicInteger failures;
        final LongAdder retries = new LongAdder();
        final RetryLoop.Policy policy =
                new RetryLoop.Policy(5, Duration.ofSeconds(10), OriginLimits.backoff(Duration.ofMillis(1)));

        GatedOrigin(Path root, CountDownLatch gate, int failures) {
            this.inner = PosixOrigin.of(root);
            this.gate = gate;
            this.failures = new AtomicInteger(failures);
        }

        @Override
        public URI uri() {
            return inner.uri();
        }

        @Override
        public ObjectInfo stat(String key) throws IOException {
            return inner.stat(key);
        }

        @Override
        public void read(ObjectInfo object, long position, MemorySegment dst) throws IOException {
            try {
                gate.await();
            } catch (InterruptedException e) {
                throw new InterruptedIOException("interrupted at the gate");
            }
            RetryLoop loop = policy.start("read", object.key(), uri(), retries);
            while (true) {
                if (failures.getAndDecrement() > 0) {
                    loop.backOff("injected failure", new IOException("injected"), false);
                    continue;
                }
                inner.read(object, position, dst);
                return;
            }
        }

        @Override
        public Stream<ObjectInfo> list(String prefix) throws IOException {
            return inner.list(prefix);
        }

        @Override
        public long retries() {
            return retries.sum();
        }

        @Override
        public void close() throws IOException {
            inner.close();
        }
    }

    private List<RecordedEvent> record(ThrowingRunnable body) throws Exception {
        Path file = dir.resolve("rec.jfr");
        try (Recording recording = new Recording()) {
            recording.enable("dev.granary.OriginRead").withoutThreshold();
            recording.enable("dev.granary.CoalescedMiss").withoutThreshold();
            recording.start();
            body.run();
            recording.stop();
            recording.dump(file);
        }
        return RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().startsWith("dev.granary."))
                .toList();
    }

    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void aSecondMissOnTheSamePageJoinsTheReadInFlight() throws Exception {
        Path data = Files.createDirectories(dir.resolve("data"));
        byte[] bytes = new byte[10_000];
        new Random(1).nextBytes(bytes);
        Files.write(data.resolve("a.bin"), bytes);
        CountDownLatch gate = new CountDownLatch(1);
        List<RecordedEvent> events = record(() -> {
            try (TieredCache cache = TieredCache.builder(new GatedOrigin(data, gate, 0))
                    .tier(MemoryTier.builder().capacity(1 << 20).build())
                    .build()) {
                ObjectInfo info = cache.stat("a.bin");
                CompletableFuture<byte[]> first = read(cache, info);
                // The first reader's fill waits at the gate; the second misses and joins it.
                while (cache.stats().tiers().getFirst().misses() < 1) {
                    Thread.onSpinWait();
                }
                CompletableFuture<byte[]> joined = new CompletableFuture<>();
                Thread second = Thread.ofPlatform().start(() -> {
                    try {
                        joined.complete(readNow(cache, info));
                    } catch (Throwable t) {
                        joined.completeExceptionally(t);
                    }
                });
                // Joined: it has missed (the tier counted it) and waits on the flight (timed, the read timeout).
                while (cache.stats().tiers().getFirst().misses() < 2
                        || second.getState() != Thread.State.TIMED_WAITING) {
                    Thread.onSpinWait();
                }
                gate.countDown();
                assertArrayEquals(bytes, first.get());
                assertArrayEquals(bytes, joined.get());
                assertEquals(1, cache.stats().origin().reads(), "one origin read for both");
            }
        });
        List<RecordedEvent> coalesced = events.stream()
                .filter(e -> e.getEventType().getName().equals("dev.granary.CoalescedMiss"))
                .toList();
        assertEquals(1, coalesced.size(), events.toString());
        assertEquals("a.bin", coalesced.getFirst().getString("key"));
        assertEquals(bytes.length, coalesced.getFirst().getLong("bytes"));
        assertEquals(
                1,
                events.stream()
                        .filter(e -> e.getEventType().getName().equals("dev.granary.OriginRead"))
                        .count());
    }

    @Test
    void anOriginReadCountsTheRetriesItsOriginMade() throws Exception {
        Files.write(dir.resolve("b.bin"), new byte[3000]);
        CountDownLatch open = new CountDownLatch(0);
        List<RecordedEvent> events = record(() -> {
            try (TieredCache cache = TieredCache.builder(new GatedOrigin(dir, open, 2))
                    .tier(MemoryTier.builder().capacity(1 << 20).build())
                    .build()) {
                try (Lease lease = cache.read("b.bin")) {
                    assertEquals(3000, lease.length());
                }
                assertEquals(2, cache.stats().origin().retries());
            }
        });
        List<RecordedEvent> reads = events.stream()
                .filter(e -> e.getEventType().getName().equals("dev.granary.OriginRead"))
                .toList();
        assertEquals(1, reads.size());
        assertEquals(2, reads.getFirst().getInt("retries"));
        assertEquals("ok", reads.getFirst().getString("outcome"));
        assertEquals("b.bin", reads.getFirst().getString("key"));
    }

    private static CompletableFuture<byte[]> read(TieredCache cache, ObjectInfo info) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return readNow(cache, info);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
    }

    private static byte[] readNow(TieredCache cache, ObjectInfo info) throws IOException {
        try (Lease lease = cache.loaderSupport().readExtent(info, 0, (int) info.size())) {
            ByteBuffer b = lease.bytes();
            byte[] out = new byte[b.remaining()];
            b.get(out);
            return out;
        }
    }
}
