// SPDX-License-Identifier: Apache-2.0
package dev.granary.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * Page-locks memory with {@code mlock(2)} through an FFM downcall, so the OS never swaps it out and a device can DMA
 * from it. The OS may refuse (an unprivileged process past {@code RLIMIT_MEMLOCK}, {@code ulimit -l}); that is
 * reported as an {@link Outcome}, never thrown.
 *
 * <p>Used by the memory tier for {@code pinned(true)} and by the loader's pinned staging buffers. Thread-safe and
 * stateless. Needs {@code --enable-native-access=ALL-UNNAMED} (or {@code dev.granary.core} on the module path) to
 * run without a warning.
 */
@SuppressWarnings("restricted") // FFM downcall to mlock (runs with --enable-native-access)
public final class PageLocker {

    /**
     * What {@code mlock} said.
     *
     * @param locked  whether the pages are locked
     * @param errno   the C {@code errno} when refused, {@code -1} if the call was not possible, 0 when locked
     * @param message a human-readable account, naming the limit to raise when refused
     */
    public record Outcome(boolean locked, int errno, String message) {}

    private static final MethodHandle MLOCK;
    private static final VarHandle ERRNO;
    private static final StructLayout CAPTURE;
    private static final String UNAVAILABLE;

    static {
        MethodHandle mlock = null;
        VarHandle errno = null;
        StructLayout capture = null;
        String unavailable = null;
        try {
            Linker linker = Linker.nativeLinker();
            capture = Linker.Option.captureStateLayout();
            errno = capture.varHandle(MemoryLayout.PathElement.groupElement("errno"));
            SymbolLookup libc = linker.defaultLookup();
            MemorySegment symbol = libc.find("mlock").orElse(null);
            if (symbol == null) {
                unavailable = "this platform's C library has no mlock";
            } else {
                mlock = linker.downcallHandle(
                        symbol,
                        FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG),
                        Linker.Option.captureCallState("errno"));
            }
        } catch (RuntimeException | LinkageError e) {
            unavailable = "cannot link mlock: " + e;
        }
        MLOCK = mlock;
        ERRNO = errno;
        CAPTURE = capture;
        UNAVAILABLE = unavailable;
    }

    private PageLocker() {}

    /**
     * Locks the pages of a segment in RAM; reports rather than throws when the OS refuses.
     *
     * @param segment native memory
     * @return what the OS said
     */
    public static Outcome lock(MemorySegment segment) {
        if (MLOCK == null) {
            return new Outcome(false, -1, UNAVAILABLE);
        }
        try (var arena = Arena.ofConfined()) {
            MemorySegment state = arena.allocate(CAPTURE);
            int rc = (int) MLOCK.invokeExact(state, segment, segment.byteSize());
            if (rc == 0) {
                return new Outcome(true, 0, "locked");
            }
            int errno = (int) ERRNO.get(state, 0L);
            return new Outcome(false, errno, describe(errno, segment.byteSize()));
        } catch (Throwable t) {
            return new Outcome(false, -1, "mlock failed: " + t);
        }
    }

    private static String describe(int errno, long bytes) {
        String what = switch (errno) {
            case 1 -> "EPERM: not permitted (needs CAP_IPC_LOCK or a higher RLIMIT_MEMLOCK)";
            case 11 -> "EAGAIN: some pages could not be locked";
            case 12 -> "ENOMEM: over RLIMIT_MEMLOCK (raise 'ulimit -l', or the service's LimitMEMLOCK)";
            default -> "errno " + errno;
        };
        return "mlock of " + bytes + " bytes refused: " + what;
    }
}
