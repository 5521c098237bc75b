// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Slab memory straight from the kernel: an anonymous {@code mmap(2)} marked {@code MADV_HUGEPAGE}, unmapped when its
 * arena closes. {@link Arena#allocate} zeroes every byte it hands out, faulting the slab in 4 KiB pages and writing
 * it once more; a mapping is zero already and is faulted in on first write — by the fill from the origin — in 2 MiB
 * pages where transparent huge pages are on ({@code madvise} or {@code always}). Measured: the arena's zeroing was
 * 9.5 % of CPU samples of a cold loader epoch over S3 (docs/benchmarks.md).
 *
 * <p>Falls back to {@code null} (the caller allocates from its arena) where the calls are missing or native access is
 * not enabled.
 */
@SuppressWarnings("restricted") // FFM downcalls to mmap, munmap, madvise (runs with --enable-native-access)
final class NativeMemory {

    private static final int PROT_READ_WRITE = 0x1 | 0x2;
    private static final int MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20;
    private static final int MADV_HUGEPAGE = 14;
    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle MADVISE;

    static {
        MethodHandle mmap = null;
        MethodHandle munmap = null;
        MethodHandle madvise = null;
        try {
            if (System.getProperty("os.name", "").startsWith("Linux")) {
                Linker linker = Linker.nativeLinker();
                SymbolLookup libc = linker.defaultLookup();
                mmap = libc.find("mmap")
                        .map(s -> linker.downcallHandle(
                                s,
                                FunctionDescriptor.of(
                                        ValueLayout.ADDRESS,
                                        ValueLayout.ADDRESS,
                                        ValueLayout.JAVA_LONG,
                                        ValueLayout.JAVA_INT,
                                        ValueLayout.JAVA_INT,
                                        ValueLayout.JAVA_INT,
                                        ValueLayout.JAVA_LONG)))
                        .orElse(null);
                munmap = libc.find("munmap")
                        .map(s -> linker.downcallHandle(
                                s,
                                FunctionDescriptor.of(
                                        ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG)))
                        .orElse(null);
                madvise = libc.find("madvise")
                        .map(s -> linker.downcallHandle(
                                s,
                                FunctionDescriptor.of(
                                        ValueLayout.JAVA_INT,
                                        ValueLayout.ADDRESS,
                                        ValueLayout.JAVA_LONG,
                                        ValueLayout.JAVA_INT)))
                        .orElse(null);
            }
        } catch (RuntimeException | LinkageError e) {
            // no native access or no libc: the caller's arena allocates
        }
        MMAP = mmap != null && munmap != null ? mmap : null;
        MUNMAP = munmap;
        MADVISE = madvise;
    }

    private NativeMemory() {}

    /**
     * Maps {@code size} bytes of zeroed anonymous memory, freed when {@code arena} closes.
     *
     * @return the memory, or {@code null} if it cannot be mapped here (the caller allocates otherwise)
     */
    static MemorySegment map(long size, Arena arena) {
        if (MMAP == null) {
            return null;
        }
        try {
            MemorySegment address = (MemorySegment)
                    MMAP.invokeExact(MemorySegment.NULL, size, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0L);
            if (address.address() == -1L || address.address() == 0L) {
                return null; // MAP_FAILED: out of address space or memory
            }
            if (MADVISE != null) {
                int ignored = (int) MADVISE.invokeExact(address, size, MADV_HUGEPAGE); // a hint; failure is fine
            }
            long length = size;
            return address.reinterpret(length, arena, segment -> unmap(segment.address(), length));
        } catch (Throwable e) {
            return null;
        }
    }

    /**
     * Marks the 2 MiB-aligned part of {@code memory} {@code MADV_HUGEPAGE}, where transparent huge pages are on
     * {@code madvise}; a hint, so failure is ignored.
     */
    static void adviseHugePages(MemorySegment memory) {
        if (MADVISE == null) {
            return;
        }
        long huge = 2L << 20;
        long start = (memory.address() + huge - 1) & -huge;
        long end = (memory.address() + memory.byteSize()) & -huge;
        if (end > start) {
            try {
                int ignored = (int) MADVISE.invokeExact(MemorySegment.ofAddress(start), end - start, MADV_HUGEPAGE);
            } catch (Throwable e) {
                // a hint only
            }
        }
    }

    private static void unmap(long address, long size) {
        try {
            int ignored = (int) MUNMAP.invokeExact(MemorySegment.ofAddress(address), size);
        } catch (Throwable e) {
            // nothing more can be done for an address that will not unmap
        }
    }
}
