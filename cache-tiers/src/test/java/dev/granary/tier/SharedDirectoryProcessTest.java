// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.Lease;
import dev.granary.TieredCache;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.Dataset;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * One disk-tier directory shared by real processes ({@link DiskTier.Builder#shared}): child JVMs reading overlapping
 * data at once with every byte checked and the origin read once per page; writers killed with SIGKILL at random
 * moments while this process keeps reading through the same directory without reopening it; the capacity bound held
 * across processes, checked under the directory's own lock while they write.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SharedDirectoryProcessTest {

    private static final int PAGE = 8 << 10;

    @TempDir
    Path root;

    private Dataset dataset(int objects, int maxSize, long seed) throws IOException {
        Dataset dataset = new Dataset(Files.createDirectories(root.resolve("data")), seed);
        SplittableRandom random = new SplittableRandom(seed);
        for (int i = 0; i < objects; i++) {
            dataset.put(String.format("obj-%03d", i), 1 + random.nextInt(maxSize));
        }
        return dataset;
    }

    private static long pages(Dataset dataset, int pageSize) {
        long pages = 0;
        for (byte[] bytes : dataset.objects().values()) {
            pages += (bytes.length + pageSize - 1) / pageSize;
        }
        return pages;
    }

    /** A child started with {@link SharedReaderMain}; its output read line by line. */
    private record Child(Process process, BufferedReader out, StringBuilder log) {

        static Child start(Path data, Path dir, String mode, long seed, long capacity, long segment, int page) {
            Process p = ChildJvm.start(
                    SharedReaderMain.class,
                    data.toString(),
                    dir.toString(),
                    mode,
                    Long.toString(seed),
                    Long.toString(capacity),
                    Long.toString(segment),
                    Integer.toString(page));
            return new Child(
                    p,
                    new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)),
                    new StringBuilder());
        }

        /** Reads lines until one starts with {@code prefix}; returns it. */
        String await(String prefix) throws IOException {
            String line;
            while ((line = out.readLine()) != null) {
                if (line.startsWith(prefix)) {
                    return line;
                }
                if (!line.equals("filled")) {
                    log.append(line).append('\n');
                }
            }
            throw new AssertionError("child ended before '" + prefix + "': " + log);
        }

        /** Waits for {@code n} more fills. */
        void fills(int n) throws IOException {
            for (int i = 0; i < n; i++) {
                await("filled");
            }
        }

        void go() throws IOException {
            OutputStream in = process.getOutputStream();
            in.write("go\n".getBytes(StandardCharsets.UTF_8));
            in.flush();
        }

        void kill() throws InterruptedException {
            process.destroyForcibly(); // SIGKILL on Linux: no shutdown hooks, no finally blocks
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), "the killed child must end");
        }
    }

    @Test
    void processesReadingOverlappingDataAtOnceReadTheOriginOncePerPage() throws Exception {
        Dataset dataset = dataset(80, 120_000, 11);
        Path dir = root.resolve("disk");
        int page = 16 << 10;
        List<Child> children = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            children.add(Child.start(dataset.root(), dir, "all", 100 + i, 64L << 20, 1L << 20, page));
        }
        for (Child child : children) {
            child.await("ready");
        }
        for (Child child : children) {
            child.go(); // all three read now, each in its own order
        }
        long reads = 0;
        long peer = 0;
        Pattern done =
                Pattern.compile("done reads=(\\d+) peer=(\\d+) timeouts=(\\d+) corruptions=(\\d+)" + " direct=(\\d+)");
        long direct = 0;
        for (Child child : children) {
            String line = child.await("done");
            Matcher m = done.matcher(line);
            assertTrue(m.matches(), line);
            reads += Long.parseLong(m.group(1));
            peer += Long.parseLong(m.group(2));
            direct += Long.parseLong(m.group(5));
            assertEquals("0", m.group(3), "no wait for another process timed out: " + line);
            assertEquals("0", m.group(4), line);
            assertTrue(child.process().waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, child.process().exitValue(), "every byte was checked in the child: " + child.log());
        }
        long pages = pages(dataset, page);
        System.out.println("3 processes over " + pages + " pages: " + reads + " origin reads, " + peer
                + " pages taken from another process's fill");
        assertEquals(pages, reads, "each page is read from the origin once, by one of the three processes");
        assertTrue(direct > 0, "pages went O_DIRECT, and the other processes read them (decision 0015)");
        try (DiskTier after = DiskTier.builder()
                .directory(dir)
                .capacity(64L << 20)
                .segmentSize(1L << 20)
                .build()) {
            assertEquals(pages, after.recovery().pages(), "no page was written twice");
        }
    }

    @Test
    void killedWritersNeverHurtAProcessStillUsingTheDirectory() throws Exception {
        Dataset dataset = dataset(60, 100_000, 17);
        Path dir = root.resolve("disk");
        long capacity = 1L << 20;
        long segment = 64 << 10;
        SplittableRandom random = new SplittableRandom(2026);
        long verified = 0;
        try (TieredCache mine = TieredCache.builder(PosixOrigin.of(dataset.root()))
                        .tier(DiskTier.builder()
                                .directory(dir)
                                .capacity(capacity)
                                .segmentSize(segment)
                                .shared(true)
                                .fillWait(Duration.ofSeconds(60))
                                .build())
                        .pageSize(PAGE)
                        .build();
                SharedDirectory lock = SharedDirectory.open(dir, 0600)) {
            List<String> keys = new ArrayList<>(dataset.objects().keySet());
            Child survivor = null;
            for (int iteration = 0; iteration < 10; iteration++) {
                Child victim = Child.start(dataset.root(), dir, "forever", iteration, capacity, segment, PAGE);
                if (survivor == null) {
                    survivor = Child.start(dataset.root(), dir, "forever", 1000 + iteration, capacity, segment, PAGE);
                    survivor.await("ready");
                    survivor.go();
                }
                victim.await("ready");
                victim.go();
                victim.fills(random.nextInt(200));
                victim.kill(); // at a random moment: mid-record, mid-claim, mid-creation or eviction of a segment
                for (int i = 0; i < 40; i++) { // this process goes on, without reopening anything
                    String key = keys.get(random.nextInt(keys.size()));
                    byte[] expected = dataset.bytes(key);
                    long offset = random.nextLong(expected.length);
                    int length = (int) (random.nextLong(expected.length - offset) + 1);
                    try (Lease lease = mine.read(key, offset, length)) {
                        Bytes.assertSame(
                                dataset.range(key, offset, length),
                                lease.bytes(),
                                "iteration " + iteration + ": " + key);
                    }
                    verified++;
                }
                lock.lock();
                try {
                    long onDisk = SharedDiskTierTest.segmentBytes(dir);
                    assertTrue(onDisk <= capacity, "iteration " + iteration + ": " + onDisk + " > " + capacity);
                } finally {
                    lock.unlock();
                }
                survivor.fills(1); // the other process is still reading too
                if (iteration % 3 == 2) {
                    survivor.kill();
                    survivor = null;
                }
            }
            if (survivor != null) {
                survivor.kill();
            }
        }
        // a new process recovers the directory: every page it holds is right
        long checked = 0;
        try (DiskTier fresh = DiskTier.builder()
                .directory(dir)
                .capacity(capacity)
                .segmentSize(segment)
                .shared(true)
                .build()) {
            for (PageKey key : fresh.keys()) {
                Page page = fresh.get(key);
                assertNotNull(page, "recovered page " + key);
                try {
                    Bytes.assertSame(
                            dataset.range(key.key(), key.offset(), key.length()), page.buffer(), key.toString());
                } finally {
                    page.release();
                }
                checked++;
            }
            assertTrue(fresh.stats().usedBytes() <= capacity);
        }
        assertTrue(checked > 0, "the recovered directory must hold pages to check");
        System.out.println("kill loop: 10 writers killed, " + verified + " reads verified by the surviving process, "
                + checked + " pages verified after recovery");
    }

    @Test
    void theCapacityBoundsTheDirectoryWhileThreeProcessesWriteIntoIt() throws Exception {
        Dataset dataset = dataset(120, 60_000, 23);
        Path dir = root.resolve("disk");
        long capacity = 512 << 10;
        long segment = 32 << 10;
        List<Child> children = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            children.add(Child.start(dataset.root(), dir, "forever", 300 + i, capacity, segment, PAGE));
        }
        for (Child child : children) {
            child.await("ready");
        }
        for (Child child : children) {
            child.go();
        }
        long most = 0;
        int samples = 0;
        try (SharedDirectory lock = SharedDirectory.open(dir, 0600)) {
            for (int round = 0; round < 60; round++) {
                for (Child child : children) {
                    child.fills(5);
                }
                lock.lock(); // the lock under which segment files are created and evicted: a consistent view
                try {
                    most = Math.max(most, SharedDiskTierTest.segmentBytes(dir));
                    samples++;
                } finally {
                    lock.unlock();
                }
            }
        }
        for (Child child : children) {
            child.kill();
        }
        System.out.println("3 writers, capacity " + capacity + ": at most " + most + " bytes of segments in " + samples
                + " samples");
        assertTrue(most <= capacity, most + " bytes of segments > capacity " + capacity);
        assertTrue(most > capacity / 2, "the writers must have filled the directory to test the bound: " + most);
    }

    @Test
    void aDirectoryIsUsableByProcessesOfDifferentUsersInOneGroup() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(
                ProcessHandle.current().info().user().orElse("").equals("root")
                        && Files.isExecutable(Path.of("/usr/bin/setpriv")),
                "needs root and setpriv to run children as" + " other users");
        Path shared = Files.createDirectories(root.resolve("open"));
        Files.setPosixFilePermissions(root, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        NativeFiles.chmod(shared, 01777); // like /tmp: anyone may create, only the owner may delete
        Path dir = shared.resolve("disk");
        // daemon (uid 1) and bin (uid 2), both in group tape (26): one writes, the other reads and writes
        ChildJvm.Result first = asUser(1, 26, SharedGroupMain.class, dir.toString(), "tape", "write", "a");
        assertEquals(0, first.exitCode(), first.output());
        ChildJvm.Result second = asUser(2, 26, SharedGroupMain.class, dir.toString(), "tape", "read", "a");
        assertEquals(0, second.exitCode(), second.output());
        ChildJvm.Result third = asUser(2, 26, SharedGroupMain.class, dir.toString(), "tape", "write", "b");
        assertEquals(0, third.exitCode(), third.output());
        ChildJvm.Result fourth = asUser(1, 26, SharedGroupMain.class, dir.toString(), "tape", "read", "b");
        assertEquals(0, fourth.exitCode(), fourth.output());
        // a user outside the group is refused with a clear error, and changes nothing
        ChildJvm.Result stranger = asUser(3, 3, SharedGroupMain.class, dir.toString(), "tape", "read", "a");
        assertEquals(4, stranger.exitCode(), stranger.output());
        assertTrue(stranger.output().contains("cannot open disk tier directory"), stranger.output());
        // the default is private: another user cannot open it
        Path own = shared.resolve("own");
        ChildJvm.Result owner = asUser(1, 26, SharedGroupMain.class, own.toString(), "-", "write", "a");
        assertEquals(0, owner.exitCode(), owner.output());
        ChildJvm.Result other = asUser(2, 26, SharedGroupMain.class, own.toString(), "-", "read", "a");
        assertEquals(4, other.exitCode(), other.output());
    }

    /**
     * Runs a main of the test classpath as another user, with only the project's own class directories, copied into a
     * directory that user can read: the checkout may live where other users cannot go (a clone in a home directory of
     * mode 700, or a {@code mktemp -d} folder), and the local repository under the home directory is no more readable.
     */
    private ChildJvm.Result asUser(int uid, int group, Class<?> main, String... args) throws Exception {
        List<String> classpath = new ArrayList<>();
        Path copies = Files.createDirectories(root.resolve("classpath"));
        int n = 0;
        for (String entry : System.getProperty("java.class.path").split(java.io.File.pathSeparator)) {
            Path from = Path.of(entry);
            boolean granarys = Files.isDirectory(from)
                    || entry.contains("/dev/granary/")
                    || !entry.startsWith(System.getProperty("user.home"));
            if (!granarys) {
                continue; // the child needs the project's classes only (directories, or Granary's jars in a build of
                // one module), never a dependency's jar
            }
            Path to = copies.resolve(n++ + (Files.isDirectory(from) ? "" : ".jar"));
            if (!Files.exists(to)) {
                copyReadable(from, to);
            }
            classpath.add(to.toString());
        }
        List<String> command = new ArrayList<>(List.of(
                "/usr/bin/setpriv",
                "--reuid=" + uid,
                "--regid=" + uid,
                "--groups=" + group,
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1",
                "-Xshare:auto",
                "-cp",
                String.join(java.io.File.pathSeparator, classpath),
                main.getName()));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command)
                .directory(copies.toFile())
                .redirectErrorStream(true)
                .start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), output);
        return new ChildJvm.Result(process.exitValue(), output);
    }

    /** Copies a class directory, every directory 0755 and file 0644, so that any user can read the copy. */
    private static void copyReadable(Path from, Path to) throws IOException {
        try (java.util.stream.Stream<Path> walk = Files.walk(from)) {
            for (Path source : walk.toList()) {
                Path target = to.resolve(from.relativize(source).toString());
                if (Files.isDirectory(source)) {
                    Files.createDirectories(target);
                    Files.setPosixFilePermissions(
                            target, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
                } else {
                    Files.copy(source, target);
                    Files.setPosixFilePermissions(
                            target, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
                }
            }
        }
    }
}
