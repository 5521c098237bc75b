// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.PageKey;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

/**
 * What the processes sharing one disk-tier directory coordinate through: the file {@code granary.shared}
 * ({@code docs/disk-format.md}, "Shared directories"). One instance per open {@link DiskTier} in shared mode; it owns
 * one descriptor of the file, and every lock below belongs to that descriptor — so the kernel drops all of them when
 * the process dies, however it dies, and two tiers in one process coordinate like two processes.
 *
 * <ul>
 *   <li><b>The directory lock</b> ({@code flock(LOCK_EX)} on the file): held, briefly, by whoever changes the set of
 *       segment files — creates one, evicts one, deletes a damaged one or a crash's leftover — and around opening
 *       (format upgrade, recovery).
 *   <li><b>A mapped page of counters</b>: the directory's generation (bumped, under the directory lock, whenever the
 *       set of segment files changes, so readers know when to list the directory again: one load per lookup), the
 *       next segment number (segment numbers are never reused), and the owner table.
 *   <li><b>Owners</b>: each tier takes a free owner slot by locking one byte of the file (an open-file-description
 *       lock) and writes a new owner id into the slot; the id goes into the header of every segment it creates. An
 *       owner is alive while its byte is locked; a dead process's byte is free at once.
 *   <li><b>Fill claims</b>: a process about to read a page from the origin locks the byte of the page's claim slot;
 *       another process missing the same page sees the lock and waits for the page to appear in the directory (or the
 *       lock to go) instead of reading the origin too.
 * </ul>
 *
 * <p>Thread-safe. The directory lock is also per descriptor: callers serialise its use within the tier (the tier's
 * allocation lock).
 */
final class SharedDirectory implements AutoCloseable {

    static final String FILE = "granary.shared";
    private static final long MAGIC = 0x31524853594E5247L; // "GRNYSHR1" little-endian
    private static final int SIZE = 64 << 10;
    private static final long GENERATION = 8;
    private static final long NEXT_SEGMENT = 16;
    private static final long INCARNATION = 24;
    private static final long OWNER_TABLE = 4096;
    static final int MAX_OWNERS = 4096;
    private static final long OWNER_LOCKS = 1L << 20;
    private static final long CLAIM_LOCKS = 2L << 20;
    static final int CLAIM_SLOTS = 1 << 16;
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final Path file;
    private final int fd;
    private final Arena arena;
    private final MemorySegment map;
    private final long owner;
    /** Claims this tier holds, by slot: how many of its fills hold each (keys that share a slot share the lock). */
    private final Map<Integer, Integer> claims = new HashMap<>();

    private boolean closed;

    private SharedDirectory(Path file, int fd, Arena arena, MemorySegment map, long owner) {
        this.file = file;
        this.fd = fd;
        this.arena = arena;
        this.map = map;
        this.owner = owner;
    }

    /**
     * Opens (creating if needed) the directory's shared file and takes an owner slot.
     *
     * @param mode the file's mode when created ({@code 0600}, or {@code 0660} for a group)
     * @throws IllegalStateException if this platform has no open-file-description locks, or every owner slot is held
     * @throws IOException           if the file cannot be created, opened or mapped
     */
    static SharedDirectory open(Path directory, int mode) throws IOException {
        if (!NativeFiles.ofdLocks()) {
            throw new IllegalStateException("a shared disk tier directory needs Linux open-file-description locks"
                    + " (fcntl F_OFD_SETLK), which cannot be called here (expected: Linux 3.15 or later; or open the"
                    + " directory unshared)");
        }
        Path file = directory.resolve(FILE);
        if (!Files.exists(file)) {
            try {
                Files.createFile(file, DiskDirectory.FILE_PERMISSIONS);
                NativeFiles.chmod(file, mode);
            } catch (FileAlreadyExistsException raced) {
                // another process made it first: it is initialised under the lock below
            }
        }
        int fd = NativeFiles.openReadWrite(file);
        Arena arena = Arena.ofShared();
        try {
            NativeFiles.flock(fd, NativeFiles.LOCK_EX);
            try {
                MemorySegment map;
                try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                    if (channel.size() < SIZE) {
                        channel.truncate(0);
                        channel.write(ByteBuffer.allocate(SIZE), 0); // zeros, all blocks real
                    }
                    map = channel.map(FileChannel.MapMode.READ_WRITE, 0, SIZE, arena);
                }
                long magic = map.get(ValueLayout.JAVA_LONG, 0);
                if (magic == 0) {
                    map.set(ValueLayout.JAVA_LONG, 0, MAGIC);
                } else if (magic != MAGIC) {
                    throw new IllegalStateException("disk tier directory " + directory + ": " + FILE + " is damaged"
                            + " (no magic) (expected: a file Granary wrote; delete it while no process uses the"
                            + " directory)");
                }
                long owner = takeOwnerSlot(fd, map, directory);
                return new SharedDirectory(file, fd, arena, map, owner);
            } finally {
                NativeFiles.flock(fd, LOCK_UN);
            }
        } catch (IOException | RuntimeException | Error e) {
            arena.close();
            NativeFiles.close(fd);
            throw e;
        }
    }

    private static final int LOCK_UN = 8;

    /** Takes the first free owner slot; called under the directory lock. */
    private static long takeOwnerSlot(int fd, MemorySegment map, Path directory) throws IOException {
        for (int slot = 0; slot < MAX_OWNERS; slot++) {
            if (NativeFiles.ofdTryLock(fd, OWNER_LOCKS + slot, 1)) {
                long incarnation = (long) LONG.getAcquire(map, INCARNATION) + 1;
                LONG.setRelease(map, INCARNATION, incarnation);
                long id = incarnation << 12 | slot;
                LONG.setRelease(map, OWNER_TABLE + 8L * slot, id);
                return id;
            }
        }
        throw new IllegalStateException("disk tier directory " + directory + " is open in " + MAX_OWNERS
                + " tiers already (expected: fewer processes sharing one directory)");
    }

    /** {@return this tier's owner id, written into the header of every segment it creates} (never 0) */
    long owner() {
        return owner;
    }

    /**
     * {@return whether the tier with this owner id is still open, in some process} Owner 0 (a segment of format 1, or
     * of an unshared tier) has no owner. An owner whose slot was taken over by a later tier is dead.
     */
    boolean alive(long ownerId) throws IOException {
        if (ownerId == owner) {
            return true;
        }
        if (ownerId <= 0) {
            return false;
        }
        int slot = (int) (ownerId & (MAX_OWNERS - 1));
        if ((long) LONG.getAcquire(map, OWNER_TABLE + 8L * slot) != ownerId) {
            return false;
        }
        return NativeFiles.ofdLocked(fd, OWNER_LOCKS + slot, 1);
    }

    /** {@return the directory's generation: it changes whenever the set of segment files does} One load. */
    long generation() {
        return (long) LONG.getAcquire(map, GENERATION);
    }

    /** Records a change of the set of segment files. */
    void changed() {
        LONG.getAndAdd(map, GENERATION, 1L); // atomic across processes too (a locked add on the shared page)
    }

    /** {@return a segment number never used in this directory, at least {@code floor}}; under the directory lock */
    long nextSegment(long floor) {
        long next = Math.max(floor, (long) LONG.getAcquire(map, NEXT_SEGMENT));
        LONG.setRelease(map, NEXT_SEGMENT, next + 1);
        return next;
    }

    /**
     * Takes the directory lock, waiting for another process that holds it (it holds it for one segment's creation or
     * eviction, or while it opens the directory). The wait parks rather than blocking in the kernel, so a virtual
     * thread waiting here does not hold its carrier.
     */
    void lock() throws IOException {
        long pause = 20_000;
        while (!NativeFiles.flock(fd, NativeFiles.LOCK_EX | NativeFiles.LOCK_NB)) {
            LockSupport.parkNanos(pause);
            pause = Math.min(pause * 2, 1_000_000);
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted waiting for the lock of " + file);
            }
        }
    }

    void unlock() {
        try {
            NativeFiles.flock(fd, LOCK_UN);
        } catch (IOException e) {
            // closing the descriptor drops it in any case; a failed unlock of a held flock does not happen on Linux
        }
    }

    // ---- fill claims ----

    /** {@return the claim slot of a page}: the same in every process (a hash of the names and extent, not identity) */
    static int claimSlot(PageKey key) {
        long h = key.origin().hashCode();
        h = h * 0x9E3779B97F4A7C15L + key.key().hashCode();
        h = h * 0x9E3779B97F4A7C15L + key.version().hashCode();
        h = h * 0x9E3779B97F4A7C15L + key.offset();
        h = h * 0x9E3779B97F4A7C15L + key.length();
        h ^= h >>> 29;
        h *= 0xBF58476D1CE4E5B9L;
        h ^= h >>> 32;
        return (int) (h & (CLAIM_SLOTS - 1));
    }

    /** Claims a slot for one fill of this tier; false if another tier (in any process) holds it. */
    synchronized boolean tryClaim(int slot) throws IOException {
        if (closed) {
            return false;
        }
        Integer held = claims.get(slot);
        if (held != null) {
            claims.put(slot, held + 1);
            return true;
        }
        if (!NativeFiles.ofdTryLock(fd, CLAIM_LOCKS + slot, 1)) {
            return false;
        }
        claims.put(slot, 1);
        return true;
    }

    /** Ends one fill's claim of a slot; the lock goes when the last of this tier's fills on the slot ends. */
    synchronized void release(int slot) {
        Integer held = claims.get(slot);
        if (held == null) {
            return;
        }
        if (held > 1) {
            claims.put(slot, held - 1);
            return;
        }
        claims.remove(slot);
        if (!closed) {
            try {
                NativeFiles.ofdUnlock(fd, CLAIM_LOCKS + slot, 1);
            } catch (IOException e) {
                // the lock goes with the descriptor at close at the latest
            }
        }
    }

    /** {@return whether another tier (in any process) claims the slot} */
    boolean claimedElsewhere(int slot) throws IOException {
        return NativeFiles.ofdLocked(fd, CLAIM_LOCKS + slot, 1);
    }

    /** Gives up the owner slot and every claim: closing the descriptor drops its locks. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        claims.clear();
        arena.close();
        NativeFiles.close(fd);
    }
}
