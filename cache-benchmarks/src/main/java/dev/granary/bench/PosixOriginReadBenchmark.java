// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import dev.granary.ObjectInfo;
import dev.granary.origin.posix.PosixOrigin;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A warm (page-cached) whole-object read from {@link PosixOrigin}, against opening and reading the same file by path
 * with a {@link FileChannel} and no checks at all: what the origin's safety costs per read.
 *
 * <h2>Subjects ({@code @Param subject})</h2>
 * <ul>
 *   <li>{@code origin}: {@link PosixOrigin#read} of an object stat'ed in setup into a native segment: key check,
 *       {@code openat(O_NOFOLLOW)} from the root per path component, {@code statx} before and after, {@code pread}
 *       straight into the segment.</li>
 *   <li>{@code channel} (floor): {@code FileChannel.open(path)}, positional reads into the segment's buffer,
 * close.</li>
 * </ul>
 * 64 files per size, under two directories ({@code train/part-0/obj-N.bin}), read in random order; they are a few MiB,
 * so every read is a page-cache hit.
 *
 * <h2>Run</h2>
 * <pre>
 * ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@jmh -Djmh.args="PosixOriginReadBenchmark -t 1"
 * </pre>
 * To compare two versions of the origin, run the same benchmark jar with the other version's {@code PosixOrigin}
 * classes first on the class path, and quote {@code origin/channel} ratios from within one run.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 4, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(
        value = 2,
        jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-Xms512m", "-Xmx512m"})
@State(Scope.Thread)
public class PosixOriginReadBenchmark {

    private static final int FILES = 64;

    @Param({"4096", "131072"})
    public int size;

    @Param({"origin", "channel"})
    public String subject;

    private Path dir;
    private PosixOrigin origin;
    private ObjectInfo[] objects;
    private Path[] paths;
    private Arena arena;
    private MemorySegment dst;
    private final SplittableRandom random = new SplittableRandom(42);

    @Setup(Level.Trial)
    public void setUp() throws IOException {
        dir = Files.createTempDirectory("posix-origin-bench");
        origin = PosixOrigin.of(dir);
        objects = new ObjectInfo[FILES];
        paths = new Path[FILES];
        byte[] bytes = new byte[size];
        for (int i = 0; i < FILES; i++) {
            String key = "train/part-0/obj-" + i + ".bin";
            paths[i] = dir.resolve(key);
            Files.createDirectories(paths[i].getParent());
            bytes[0] = (byte) i;
            Files.write(paths[i], bytes);
            objects[i] = origin.stat(key);
        }
        arena = Arena.ofShared();
        dst = arena.allocate(size, 4096);
        for (int i = 0; i < FILES; i++) {
            origin.read(objects[i], 0, dst);
            if (dst.get(ValueLayout.JAVA_BYTE, 0) != (byte) i) {
                throw new IllegalStateException("object " + i + ": first byte " + dst.get(ValueLayout.JAVA_BYTE, 0)
                        + " (expected: " + (byte) i + ")");
            }
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        origin.close();
        arena.close();
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    @Benchmark
    public byte read() throws IOException {
        int i = random.nextInt(FILES);
        if (subject.equals("origin")) {
            origin.read(objects[i], 0, dst);
        } else {
            try (FileChannel channel = FileChannel.open(paths[i], StandardOpenOption.READ)) {
                ByteBuffer buffer = dst.asByteBuffer();
                long at = 0;
                while (buffer.hasRemaining()) {
                    int n = channel.read(buffer, at);
                    if (n < 0) {
                        throw new IOException(paths[i] + ": shorter than " + size + " bytes");
                    }
                    at += n;
                }
            }
        }
        return dst.get(ValueLayout.JAVA_BYTE, 0);
    }
}
