// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import dev.granary.spi.Tier;
import dev.granary.testkit.Bytes;
import dev.granary.testkit.TierContractTest;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DiskTier} against the tier contract in every mode: one process (the defaults, with small segments, and with
 * segments so tiny pages barely fit), a shared directory ({@code shared(true)}), direct writes
 * ({@code directWrites(true)}, from 4 KiB, pages filled in page-aligned native memory as the memory tier's are), and
 * early writeback off ({@code writebackEvery(0)}).
 */
class DiskTierContractTest extends TierContractTest {

    @TempDir
    Path root;

    private final AtomicInteger directories = new AtomicInteger();

    @Override
    protected Tier createTier(long capacity) {
        return DiskTier.builder()
                .directory(root.resolve("d" + directories.incrementAndGet()))
                .capacity(capacity)
                .segmentSize(128 << 10)
                .build();
    }

    @Override
    protected boolean isReleased(Tier tier) {
        return ((DiskTier) tier).isReleased();
    }

    /** 72 KiB segments: one 64 KiB page per segment, most pages leave a remainder nothing else fits in. */
    @Nested
    class TinySegments extends TierContractTest {

        @TempDir
        Path root;

        @Override
        protected Tier createTier(long capacity) {
            return DiskTier.builder()
                    .directory(root.resolve("d" + directories.incrementAndGet()))
                    .capacity(capacity)
                    .segmentSize(72 << 10)
                    .build();
        }

        @Override
        protected boolean isReleased(Tier tier) {
            return ((DiskTier) tier).isReleased();
        }
    }

    /**
     * A shared directory: the tier takes an owner slot in {@code granary.shared}, creates and evicts segments under
     * the directory's change lock, follows the directory on lookups, stores headers in place order, and counts the
     * directory's files against the capacity.
     */
    @Nested
    class Shared extends TierContractTest {

        @TempDir
        Path root;

        @Override
        protected Tier createTier(long capacity) {
            return DiskTier.builder()
                    .directory(root.resolve("d" + directories.incrementAndGet()))
                    .capacity(capacity)
                    .segmentSize(128 << 10)
                    .shared(true)
                    .build();
        }

        @Override
        protected boolean isReleased(Tier tier) {
            return ((DiskTier) tier).isReleased();
        }

        @Test
        void theTierIsShared() throws Exception {
            Tier tier = tier(smallCapacity());
            assertTrue(tier.shared(), tier.toString());
            assertTrue(Files.exists(((DiskTier) tier).directory().resolve(SharedDirectory.FILE)));
        }
    }

    /**
     * Direct writes from 4 KiB: pages are filled in page-aligned native memory, as the memory tier holds them, so
     * every page of whole OS pages is written {@code O_DIRECT} (where the file system takes it), the others through the
     * page cache, interleaved in the same segments.
     */
    @Nested
    class DirectWrites extends TierContractTest {

        @TempDir
        Path root;

        @Override
        protected Tier createTier(long capacity) {
            return DiskTier.builder()
                    .directory(root.resolve("d" + directories.incrementAndGet()))
                    .capacity(capacity)
                    .segmentSize(128 << 10)
                    .directWrites(true)
                    .directWriteMin(4096)
                    .build();
        }

        @Override
        protected boolean isReleased(Tier tier) {
            return ((DiskTier) tier).isReleased();
        }

        @Override
        protected boolean fill(Tier tier, PageKey key, byte[] bytes) {
            Arena arena = Arena.ofShared();
            MemorySegment memory = arena.allocate(bytes.length, 4096);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, memory, 0, bytes.length);
            Page page = new Page(key, memory) {
                @Override
                protected void deallocate() {
                    arena.close();
                }
            };
            page.seal();
            try {
                return tier.put(page);
            } finally {
                page.release();
            }
        }

        @Test
        void pagesOfWholeOsPagesGoDirect() throws Exception {
            Assumptions.assumeTrue(directIoWorksIn(root), "this file system refuses O_DIRECT at open");
            DiskTier tier = (DiskTier) tier(smallCapacity());
            byte[] aligned = randomBytes(64 << 10);
            byte[] odd = randomBytes(5000);
            assertTrue(fill(tier, key("aligned", 0, aligned.length), aligned));
            assertTrue(fill(tier, key("odd", 0, odd.length), odd));
            assertEquals(1, tier.directWrites(), "the 64 KiB page went direct, the 5 000-byte one did not");
            Page page = tier.get(key("aligned", 0, aligned.length));
            assertNotNull(page);
            try {
                Bytes.assertSame(aligned, page.buffer(), "bytes of the page written direct");
            } finally {
                page.release();
            }
        }

        private static boolean directIoWorksIn(Path directory) throws IOException {
            Files.createDirectories(directory);
            Path probe = Files.createTempFile(directory, "probe", ".tmp");
            int fd = NativeFiles.openDirect(probe);
            NativeFiles.close(fd);
            Files.delete(probe);
            return fd >= 0;
        }
    }

    /** Early writeback off: nothing is handed to {@code sync_file_range}, the kernel's flusher writes it all. */
    @Nested
    class WritebackOff extends TierContractTest {

        @TempDir
        Path root;

        @Override
        protected Tier createTier(long capacity) {
            return DiskTier.builder()
                    .directory(root.resolve("d" + directories.incrementAndGet()))
                    .capacity(capacity)
                    .segmentSize(128 << 10)
                    .writebackEvery(0)
                    .build();
        }

        @Override
        protected boolean isReleased(Tier tier) {
            return ((DiskTier) tier).isReleased();
        }

        @Test
        void nothingIsHandedToWriteback() throws Exception {
            DiskTier tier = (DiskTier) tier(smallCapacity());
            for (int i = 0; i < 8; i++) { // several segments filled and left
                assertTrue(fill(tier, key("w" + i, 0, 60_000), randomBytes(60_000)));
            }
            assertEquals(0, tier.writebacks(), tier.stats().toString());
        }
    }
}
