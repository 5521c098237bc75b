// SPDX-License-Identifier: Apache-2.0
package dev.granary.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A page over part of a read-only region (what the memory tier makes per hit, decision 0021): its views are slices of
 * the region, read-only, each {@link Page#slice(int, int)} the caller's own; it is sealed at once; its reference count
 * frees it exactly once; and its views still check their memory's lifetime.
 */
class PageRegionTest {

    private static final PageKey KEY = new PageKey("test://o/", "k", "v1", 4096, 4096);

    static final class RegionPage extends Page {
        final AtomicInteger deallocations = new AtomicInteger();

        RegionPage(PageKey key, ByteBuffer region, int offset) {
            super(key, region, offset);
        }

        @Override
        protected void deallocate() {
            deallocations.incrementAndGet();
        }
    }

    @Test
    void viewsAreReadOnlySlicesOfTheRegionEachSliceTheCallersOwn() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment slab = arena.allocate(3 * 4096);
            for (long i = 0; i < slab.byteSize(); i++) {
                slab.set(java.lang.foreign.ValueLayout.JAVA_BYTE, i, (byte) (i / 4096 + 1));
            }
            RegionPage page = new RegionPage(KEY, slab.asReadOnly().asByteBuffer(), 4096);
            assertTrue(page.isSealed(), "a page over a read-only region is sealed at once");
            ByteBuffer a = page.slice(0, 4096);
            ByteBuffer b = page.slice(0, 4096);
            assertNotSame(a, b);
            a.position(100);
            assertEquals(0, b.position(), "each slice has its own position");
            assertTrue(a.isReadOnly() && page.buffer().isReadOnly());
            assertThrows(ReadOnlyBufferException.class, () -> b.put(0, (byte) 7));
            assertEquals(2, b.get(0));
            assertEquals(2, b.get(4095), "the page's bytes, not its neighbours'");
            assertEquals(20, page.slice(10, 20).capacity());
            assertEquals(2, page.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 4095));
            assertTrue(page.segment().isReadOnly());
            assertEquals(4096, page.segment().byteSize());
            assertThrows(IndexOutOfBoundsException.class, () -> page.slice(4000, 100));
            assertThrows(IllegalStateException.class, page::writableSegment);
            assertTrue(page.release());
            assertEquals(1, page.deallocations.get());
        }
    }

    @Test
    void aViewOfMemoryThatWasFreedThrowsInsteadOfReading() {
        Arena arena = Arena.ofShared();
        RegionPage page = new RegionPage(KEY, arena.allocate(8192).asReadOnly().asByteBuffer(), 0);
        ByteBuffer kept = page.slice(0, 4096);
        arena.close();
        assertThrows(IllegalStateException.class, () -> kept.getLong(0));
    }

    @Test
    void aWritableOrTooSmallRegionIsRefused() {
        ByteBuffer writable = ByteBuffer.allocateDirect(8192);
        assertThrows(IllegalArgumentException.class, () -> new RegionPage(KEY, writable, 0));
        ByteBuffer readOnly = writable.asReadOnlyBuffer();
        assertThrows(IllegalArgumentException.class, () -> new RegionPage(KEY, readOnly, 4097));
        assertThrows(IllegalArgumentException.class, () -> new RegionPage(KEY, readOnly, -1));
        assertThrows(
                IllegalArgumentException.class,
                () -> new RegionPage(KEY, ByteBuffer.allocate(8192).asReadOnlyBuffer(), 0),
                "not direct");
    }
}
