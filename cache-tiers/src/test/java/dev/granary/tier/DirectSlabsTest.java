// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Slabs as plain direct buffers (decision 0021): taken only within half the JVM's direct-memory limit, aligned, and
 * read and written alike whichever kind a slab is.
 */
@Timeout(60)
class DirectSlabsTest {

    @Test
    void aSlabIsTakenOnlyWithinHalfTheDirectMemoryLimit() {
        long mib = 1L << 20;
        ByteBuffer fits = DirectSlabs.allocate(4 * mib, 100 * mib, 256 * mib);
        assertNotNull(fits, "100 + 4 MiB of 256: within half");
        assertTrue(fits.isDirect() && !fits.isReadOnly());
        assertEquals(4 * mib, fits.capacity());
        assertEquals(0, MemorySegment.ofBuffer(fits).address() % 4096, "aligned to 4 KiB");
        for (long odd : new long[] {512, 4096 + 512, 66 << 10, 4 * mib - 512}) { // not whole 4 KiB pages
            ByteBuffer slab = DirectSlabs.allocate(odd, 0, 256 * mib);
            assertNotNull(slab, odd + " bytes");
            assertEquals(odd, slab.capacity(), "a slab of " + odd + " bytes");
            assertEquals(0, MemorySegment.ofBuffer(slab).address() % 4096, "aligned to 4 KiB");
        }
        assertNull(DirectSlabs.allocate(4 * mib, 125 * mib, 256 * mib), "125 + 4 MiB of 256: past half");
        assertNull(DirectSlabs.allocate((1L << 30) + 512, 0, Long.MAX_VALUE), "over 1 GiB: no buffer that big");
        assertNull(DirectSlabs.allocate(0, 0, Long.MAX_VALUE));
    }

    @Test
    void jvmSizeFlagsAreReadAsTheJvmReadsThem() {
        assertEquals(1L << 30, DirectSlabs.parseSize("1g"));
        assertEquals(1L << 30, DirectSlabs.parseSize("1G"));
        assertEquals(512L << 20, DirectSlabs.parseSize("512m"));
        assertEquals(64L << 10, DirectSlabs.parseSize("64k"));
        assertEquals(1048576, DirectSlabs.parseSize("1048576"));
        assertEquals(-1, DirectSlabs.parseSize(""));
        assertEquals(-1, DirectSlabs.parseSize("lots"));
        assertEquals(-1, DirectSlabs.parseSize("-5m"));
        assertEquals(-1, DirectSlabs.parseSize("99999999999999t"), "overflow");
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void bothKindsOfSlabHoldWhatWasWrittenAndServeItReadOnly(boolean direct) {
        long slab = 1L << 20;
        SlabAllocator allocator = new SlabAllocator(
                4 * slab, slab, s -> {}, bytes -> direct ? DirectSlabs.allocate(bytes, 0, Long.MAX_VALUE) : null);
        SplittableRandom random = new SplittableRandom(direct ? 1 : 2);
        long[] starts = new long[12];
        byte[][] written = new byte[starts.length][];
        for (int i = 0; i < starts.length; i++) {
            int length = 1 + random.nextInt(300_000);
            starts[i] = allocator.allocate(length);
            assertTrue(starts[i] >= 0, "allocation " + i + " of " + length + " bytes");
            written[i] = new byte[length];
            random.nextBytes(written[i]);
            MemorySegment.copy(written[i], 0, allocator.segment(starts[i], length), ValueLayout.JAVA_BYTE, 0, length);
        }
        if (direct) {
            assertTrue(allocator.directSlabs() > 0, "slabs taken as direct buffers");
        } else {
            assertEquals(0, allocator.directSlabs());
        }
        for (int i = 0; i < starts.length; i++) {
            ByteBuffer view = allocator.readOnlyBuffer(starts[i]);
            assertTrue(view.isReadOnly() && view.isDirect());
            byte[] read = new byte[written[i].length];
            view.get(allocator.offsetInSlab(starts[i]), read);
            assertArrayEquals(written[i], read, "allocation " + i);
            allocator.free(starts[i], written[i].length);
        }
        allocator.close();
        assertTrue(allocator.isReleased());
    }
}
