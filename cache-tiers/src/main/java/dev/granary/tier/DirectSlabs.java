// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Locale;

/**
 * Slabs as plain direct {@link ByteBuffer}s ({@link ByteBuffer#allocateDirect}), so that the buffer a memory-tier hit
 * hands out is a slice of a plain direct buffer, the very kind a user's decoder already reads, rather than a view of
 * a {@link java.lang.foreign.MemorySegment}.
 *
 * <h2>Why</h2>
 * A segment-backed buffer checks its segment's liveness on every access. The JIT hoists that check out of a loop
 * that only ever sees such buffers, but not out of a loop that also reads plain direct buffers: a decoder's
 * {@code getLong} loop then ran at 0.63–0.76 of the same loop over a plain buffer at 1 MiB per hit (decision 0021
 * has the measurements). A plain buffer has no such check, so a hit reads as fast as the user's own buffer.
 *
 * <h2>The budget</h2>
 * Direct buffers count against the JVM's direct-memory limit ({@code -XX:MaxDirectMemorySize}, by default the heap's
 * maximum), which the application's own NIO needs too (the JDK's temporary buffers for channel I/O, HTTP clients).
 * A slab is taken as a direct buffer only while all direct buffers together, with it, stay within half that limit;
 * beyond, the allocator maps its slabs as before ({@link NativeMemory#map}), whose hits are segment-backed and read a
 * little slower in a mixed loop, but which never compete with the application for direct memory. So
 * {@code -XX:MaxDirectMemorySize} of twice the memory tier's capacity gives every hit a plain buffer.
 *
 * <h2>Release</h2>
 * A direct buffer's memory is freed by the garbage collector once nothing refers to it: the allocator drops its
 * slabs when it closes and its last allocation is freed, and the JDK frees them (and collects first whenever a new
 * direct buffer would not fit the limit). Until then the memory is not the tier's any more, but still the process's.
 */
final class DirectSlabs {

    /** The JVM's direct-memory limit, as the JDK computes it: the flag if given, else the heap's maximum. */
    private static final long LIMIT = limit();

    private DirectSlabs() {}

    /**
     * Allocates a zeroed slab of {@code bytes} as a plain direct buffer, aligned to 4 KiB, if it fits the budget.
     *
     * @param bytes the slab's size, at most 1 GiB
     * @return the slab, position 0 and capacity {@code bytes}; or {@code null} if it does not fit (the caller maps
     *     one instead)
     */
    static ByteBuffer allocate(long bytes) {
        return allocate(bytes, directUsed(), LIMIT);
    }

    /**
     * As {@link #allocate(long)}, given the direct memory in use and the limit.
     *
     * @param bytes the slab's size, at most 1 GiB
     * @param used  the bytes all direct buffers hold now
     * @param limit the JVM's direct-memory limit
     * @return the slab, or {@code null} if it would take direct memory beyond half the limit
     */
    static ByteBuffer allocate(long bytes, long used, long limit) {
        if (bytes <= 0 || bytes > (1L << 30) || used + bytes + 8192 > limit / 2) {
            return null;
        }
        try {
            // alignedSlice rounds both ends to 4 KiB: room for a whole number of pages past the first aligned byte
            long pages = (bytes + 4095) & -4096L;
            ByteBuffer raw = ByteBuffer.allocateDirect(Math.toIntExact(pages + 4096));
            return raw.alignedSlice(4096).limit(Math.toIntExact(bytes)).slice();
        } catch (OutOfMemoryError e) {
            return null; // the limit was reached meanwhile by other buffers: map the slab instead
        }
    }

    /** {@return the bytes held by direct buffers now, by the JDK's own count} */
    private static long directUsed() {
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) {
                return pool.getMemoryUsed();
            }
        }
        return Long.MAX_VALUE / 2; // unknown: take no direct memory
    }

    private static long limit() {
        long limit = Runtime.getRuntime().maxMemory();
        List<String> args = ManagementFactory.getRuntimeMXBean().getInputArguments();
        for (String arg : args) { // the last one wins, as for the JVM
            if (arg.startsWith("-XX:MaxDirectMemorySize=")) {
                long parsed = parseSize(arg.substring("-XX:MaxDirectMemorySize=".length()));
                if (parsed > 0) {
                    limit = parsed;
                }
            }
        }
        return limit;
    }

    /** {@return a JVM size flag's value ({@code 512m}, {@code 2G}, {@code 1048576}) in bytes, or -1 if unreadable} */
    static long parseSize(String value) {
        String v = value.strip().toLowerCase(Locale.ROOT);
        if (v.isEmpty()) {
            return -1;
        }
        int shift = switch (v.charAt(v.length() - 1)) {
            case 'k' -> 10;
            case 'm' -> 20;
            case 'g' -> 30;
            case 't' -> 40;
            default -> 0;
        };
        String digits = shift == 0 ? v : v.substring(0, v.length() - 1);
        try {
            long n = Long.parseLong(digits);
            return n < 0 || n > (Long.MAX_VALUE >> shift) ? -1 : n << shift;
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
