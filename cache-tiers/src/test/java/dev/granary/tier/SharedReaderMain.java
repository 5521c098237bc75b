// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.testkit.FaultyOrigin;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * Child JVM of {@link SharedDirectoryProcessTest}: a cache over a directory of objects with one shared disk tier.
 * Prints {@code ready} once open and waits for a line on stdin before it reads, so the parent starts several at once.
 * Every byte read is checked against the object's file; a mismatch exits with status 3.
 *
 * <ul>
 *   <li>{@code all}: reads every object once, whole, with four threads in an order of its seed, then prints
 *       {@code done reads=<origin data reads> peer=<pages another process filled> timeouts=<waits that timed out>
 *       corruptions=<pages that failed their checksum> direct=<pages written with O_DIRECT>}.
 *   <li>{@code forever}: reads random ranges with four threads until killed, printing {@code filled} after each.
 * </ul>
 * Arguments: data directory, disk directory, mode, seed, capacity, segment size, page size.
 */
public final class SharedReaderMain {

    private SharedReaderMain() {}

    public static void main(String[] args) throws Exception {
        Path data = Path.of(args[0]);
        Path dir = Path.of(args[1]);
        String mode = args[2];
        long seed = Long.parseLong(args[3]);
        long capacity = Long.parseLong(args[4]);
        long segment = Long.parseLong(args[5]);
        int pageSize = Integer.parseInt(args[6]);
        List<String> keys;
        try (Stream<Path> files = Files.list(data)) {
            keys = new ArrayList<>(
                    files.map(f -> f.getFileName().toString()).sorted().toList());
        }
        // Pages of 4 KiB or more in aligned memory go O_DIRECT (decision 0015): the others' mappings must see them.
        DiskTier disk = DiskTier.builder()
                .directory(dir)
                .capacity(capacity)
                .segmentSize(segment)
                .shared(true)
                .fillWait(Duration.ofSeconds(60))
                .directWrites(true)
                .directWriteMin(4096)
                .build();
        FaultyOrigin origin = new FaultyOrigin(PosixOrigin.of(data));
        // A small memory tier above it, so fills land in native, page-aligned memory that can go direct.
        TieredCache cache = TieredCache.builder(origin)
                .tier(MemoryTier.builder().capacity(128 << 10).build())
                .tier(disk)
                .pageSize(pageSize)
                .build();
        System.out.println("ready " + disk.recovery());
        System.out.flush();
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        Collections.shuffle(keys, new Random(seed));
        AtomicInteger next = new AtomicInteger();
        Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            long threadSeed = seed * 31 + t;
            threads[t] = Thread.ofPlatform().start(() -> {
                SplittableRandom random = new SplittableRandom(threadSeed);
                try {
                    while (true) {
                        String key;
                        long offset;
                        long length;
                        if (mode.equals("all")) {
                            int i = next.getAndIncrement();
                            if (i >= keys.size()) {
                                return;
                            }
                            key = keys.get(i);
                            offset = 0;
                            length = cache.stat(key).size();
                        } else {
                            key = keys.get(random.nextInt(keys.size()));
                            long size = cache.stat(key).size();
                            offset = random.nextLong(size);
                            length = random.nextLong(size - offset) + 1;
                        }
                        byte[] expected = Files.readAllBytes(data.resolve(key));
                        try (Lease lease = cache.read(key, offset, length)) {
                            ByteBuffer bytes = lease.bytes();
                            for (int i = 0; i < length; i++) {
                                if (bytes.get(i) != expected[(int) offset + i]) {
                                    System.out.println("WRONG BYTE " + key + " at " + (offset + i));
                                    System.out.flush();
                                    System.exit(3);
                                }
                            }
                        }
                        if (!mode.equals("all")) {
                            synchronized (System.out) {
                                System.out.println("filled");
                                System.out.flush();
                            }
                        }
                    }
                } catch (Throwable e) {
                    synchronized (System.out) {
                        e.printStackTrace(System.out);
                        // What every other thread was doing, for a failure seen once in CI and not reproduced (an
                        // interrupt of a reader thread that nothing in this process sends; see the session notes).
                        for (var other : Thread.getAllStackTraces().entrySet()) {
                            Thread thread = other.getKey();
                            System.out.println("thread " + thread.getName() + " " + thread.getState()
                                    + (thread.isInterrupted() ? " interrupted" : ""));
                            for (StackTraceElement frame : other.getValue()) {
                                System.out.println("    at " + frame);
                            }
                        }
                        System.out.flush();
                    }
                    System.exit(5);
                }
            });
        }
        for (Thread thread : threads) {
            thread.join();
        }
        long[] sharing = disk.sharingCounts();
        System.out.println("done reads=" + origin.reads() + " peer=" + sharing[0] + " timeouts=" + sharing[1]
                + " corruptions=" + disk.stats().corruptions() + " direct=" + disk.directWrites());
        System.out.flush();
        cache.close();
    }
}
