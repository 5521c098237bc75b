// SPDX-License-Identifier: Apache-2.0
package dev.granary.origin.gcs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.cloud.ReadChannel;
import com.google.cloud.WriteChannel;
import com.google.cloud.storage.BlobInfo;
import com.google.cloud.storage.Storage;
import com.google.cloud.storage.StorageException;
import com.google.cloud.storage.contrib.nio.testing.LocalStorageHelper;
import dev.granary.NoSuchObjectException;
import dev.granary.ObjectChangedException;
import dev.granary.ObjectInfo;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.ConnectException;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link GcsOrigin}'s retries and error mapping, driven through a fault-injecting {@link Storage}: the in-process fake
 * has no HTTP, so the failures GCS answers with — 429, 503, 403, 412, 404, a connection reset in the middle of a
 * body — are thrown by a wrapper around it, as the client library would throw them. What this does not cover is the
 * client library's own translation of HTTP into those exceptions.
 */
class GcsOriginFaultTest {

    private static final String BUCKET = "faults";

    private Storage fake;
    private final AtomicInteger failStats = new AtomicInteger();
    private final AtomicInteger failReaders = new AtomicInteger();
    private volatile int statusToThrow = 503;
    private volatile long resetReadAfter = -1;
    private volatile boolean bucketGone;
    /** Until this System.nanoTime(), every get and reader fails as a refused connection does: the store is down. */
    private volatile long downUntil; // 0: up

    private final List<Long> seeks = new ArrayList<>();
    private GcsOrigin origin;
    private byte[] bytes;

    @BeforeEach
    void setUp() throws IOException {
        fake = LocalStorageHelper.customOptions(false).getService();
        bytes = new byte[300_000];
        new SplittableRandom(3).nextBytes(bytes);
        try (WriteChannel writer =
                fake.writer(BlobInfo.newBuilder(BUCKET, "data/a.bin").build())) {
            writer.write(ByteBuffer.wrap(bytes));
        }
        origin = origin(4);
    }

    private GcsOrigin origin(int attempts) {
        return GcsOrigin.builder()
                .bucket(BUCKET)
                .prefix("data")
                .storage(faulty())
                .maxAttempts(attempts)
                .retryBackoff(Duration.ofMillis(1))
                .build();
    }

    /** The fake behind a dynamic proxy that throws what it is told to, on get (stat), reader and list. */
    private Storage faulty() {
        return (Storage) Proxy.newProxyInstance(
                Storage.class.getClassLoader(), new Class<?>[] {Storage.class}, (proxy, method, args) -> {
                    String name = method.getName();
                    if ((name.equals("get") || name.equals("reader"))
                            && downUntil != 0
                            && System.nanoTime() - downUntil < 0) {
                        throw new StorageException(
                                0,
                                "injected: the store is down",
                                new ConnectException("Connection refused (injected)"));
                    }
                    if ((name.equals("get") && failStats.getAndUpdate(n -> Math.max(0, n - 1)) > 0)
                            || (name.equals("reader") && failReaders.getAndUpdate(n -> Math.max(0, n - 1)) > 0)) {
                        throw new StorageException(statusToThrow, "injected " + statusToThrow);
                    }
                    if (name.equals("list") && bucketGone) {
                        throw new StorageException(404, "injected: the bucket does not exist");
                    }
                    Object result;
                    try {
                        result = method.invoke(fake, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                    return name.equals("reader") ? resetting((ReadChannel) result) : result;
                });
    }

    /** A ReadChannel that records seeks and, once armed, breaks off after a number of bytes with an IOException. */
    private ReadChannel resetting(ReadChannel real) {
        long[] delivered = {0};
        return (ReadChannel) Proxy.newProxyInstance(
                ReadChannel.class.getClassLoader(), new Class<?>[] {ReadChannel.class}, (proxy, method, args) -> {
                    if (method.getName().equals("seek")) {
                        synchronized (seeks) {
                            seeks.add((Long) args[0]);
                        }
                    }
                    if (method.getName().equals("read") && resetReadAfter >= 0) {
                        ByteBuffer dst = (ByteBuffer) args[0];
                        long room = resetReadAfter - delivered[0];
                        if (room <= 0) {
                            resetReadAfter = -1; // once
                            throw new SocketException("Connection reset (injected)");
                        }
                        if (dst.remaining() > room) {
                            ByteBuffer limited = dst.slice(dst.position(), (int) room);
                            int n = real.read(limited);
                            if (n > 0) {
                                dst.position(dst.position() + n);
                                delivered[0] += n;
                            }
                            return n;
                        }
                    }
                    try {
                        Object r = method.invoke(real, args);
                        if (method.getName().equals("read") && r instanceof Integer n && n > 0) {
                            delivered[0] += n;
                        }
                        return r;
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    private byte[] read(ObjectInfo info) throws IOException {
        byte[] out = new byte[(int) info.size()];
        origin.read(info, 0, MemorySegment.ofArray(out));
        return out;
    }

    @Test
    void serverErrorsAndThrottlingAreRetriedAndCounted() throws Exception {
        failStats.set(2);
        ObjectInfo info = origin.stat("a.bin");
        assertEquals(2, origin.retries());
        statusToThrow = 429;
        failReaders.set(3);
        assertArrayEquals(bytes, read(info));
        assertEquals(5, origin.retries());
    }

    @Test
    void aBodyThatBreaksOffResumesFromTheFirstMissingByte() throws Exception {
        ObjectInfo info = origin.stat("a.bin");
        resetReadAfter = 100_000;
        assertArrayEquals(bytes, read(info));
        assertEquals(1, origin.retries());
        assertEquals(2, seeks.size(), "one reader per attempt: " + seeks);
        assertEquals(0L, seeks.get(0));
        assertTrue(seeks.get(1) >= 100_000, "the retry starts after the bytes already received: " + seeks);
    }

    @Test
    void failuresThatOutlastTheAttemptsSaySo() throws Exception {
        ObjectInfo info = origin.stat("a.bin");
        try (GcsOrigin impatient = origin(3)) {
            failReaders.set(100);
            IOException e =
                    assertThrows(IOException.class, () -> impatient.read(info, 0, MemorySegment.ofArray(new byte[10])));
            assertTrue(
                    e.getMessage().contains("after 3 attempts")
                            && e.getMessage().contains("503"),
                    e.getMessage());
            assertEquals(2, impatient.retries());
        }
    }

    @Test
    void answersAreNotRetried() throws Exception {
        ObjectInfo info = origin.stat("a.bin");
        statusToThrow = 403;
        failReaders.set(1);
        IOException refused = assertThrows(IOException.class, () -> read(info));
        assertTrue(refused.getMessage().contains("check the credentials"), refused.getMessage());
        statusToThrow = 412;
        failReaders.set(1);
        ObjectChangedException changed = assertThrows(ObjectChangedException.class, () -> read(info));
        assertEquals(info.version(), changed.expectedVersion());
        assertEquals(0, origin.retries(), "403 and 412 are answers, not faults");
    }

    @Test
    void aMissingObjectAndAMissingBucketAreToldApart() throws Exception {
        NoSuchObjectException missing = assertThrows(NoSuchObjectException.class, () -> origin.stat("nope.bin"));
        assertEquals("nope.bin", missing.key());
        try (GcsOrigin noBucket = origin(2)) {
            bucketGone = true; // list answers 404 from now on
            IOException e = assertThrows(IOException.class, () -> noBucket.stat("nope.bin"));
            assertFalse(e instanceof NoSuchObjectException, e.toString());
            assertTrue(e.getMessage().contains("no such bucket: 'faults'"), e.getMessage());
        }
    }

    /**
     * The store is down for two seconds (every call refused) while a read and a stat are made: with the default retry
     * budget both wait it out and succeed, the wait counted in retries. With the old default of 5 attempts (backoff
     * ceilings 50 to 400 ms, at most 0.75 s of sleep in all), both failed well before the store came back.
     */
    @Test
    void withTheDefaultsAShortOutageIsRiddenOut() throws Exception {
        ObjectInfo info = origin.stat("a.bin");
        try (GcsOrigin patient = GcsOrigin.builder()
                .bucket(BUCKET)
                .prefix("data")
                .storage(faulty())
                .build()) {
            long start = System.nanoTime();
            downUntil = start + Duration.ofSeconds(2).toNanos();
            byte[] out = new byte[bytes.length];
            patient.read(info, 0, MemorySegment.ofArray(out));
            assertArrayEquals(bytes, out);
            assertTrue(System.nanoTime() - downUntil >= 0, "the read came back only once the store was");
            long retries = patient.retries();
            assertTrue(retries >= 2, "the outage was waited out in retries: " + retries);

            downUntil = System.nanoTime() + Duration.ofSeconds(1).toNanos();
            assertEquals(info, patient.stat("a.bin"));
            assertTrue(patient.retries() > retries, "stat retried too: " + patient.retries());
        }
    }

    /** A short retry budget gives up in about that time, and the message says what the request waited for. */
    @Test
    void aRequestGivenUpSaysHowManyAttemptsOverHowLong() throws Exception {
        ObjectInfo info = origin.stat("a.bin");
        try (GcsOrigin brief = GcsOrigin.builder()
                .bucket(BUCKET)
                .prefix("data")
                .storage(faulty())
                .retryBudget(Duration.ofMillis(600))
                .build()) {
            downUntil = System.nanoTime() + Duration.ofMinutes(5).toNanos();
            long start = System.nanoTime();
            IOException e =
                    assertThrows(IOException.class, () -> brief.read(info, 0, MemorySegment.ofArray(new byte[10])));
            double took = (System.nanoTime() - start) / 1e9;
            Matcher m = Pattern.compile("read of 'a\\.bin' in gs://faults/data/? failed"
                            + " after (\\d+) attempts over (\\d+\\.\\d) s: injected: the store is down")
                    .matcher(e.getMessage());
            assertTrue(m.matches(), e.getMessage());
            int attempts = Integer.parseInt(m.group(1));
            double over = Double.parseDouble(m.group(2));
            assertTrue(attempts >= 2, e.getMessage());
            assertEquals(attempts - 1, brief.retries(), "every attempt after the first is a counted retry");
            assertTrue(
                    over >= 0.6 && over <= took + 0.05,
                    "the budget was used, and reported: " + over + " s of " + took + " s");
            IllegalArgumentException bad = assertThrows(
                    IllegalArgumentException.class, () -> GcsOrigin.builder().retryBudget(Duration.ofSeconds(-1)));
            assertEquals("retry budget: PT-1S (expected: 0 .. 1 h)", bad.getMessage());
        } finally {
            downUntil = 0;
        }
    }
}
