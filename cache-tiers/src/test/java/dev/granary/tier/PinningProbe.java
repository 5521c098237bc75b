// SPDX-License-Identifier: Apache-2.0
package dev.granary.tier;

import dev.granary.spi.Page;
import dev.granary.spi.PageKey;
import java.lang.foreign.MemorySegment;

/**
 * Run in a child JVM by {@link MemoryTierPinningTest}: builds a pinned tier, fills and reads back a page, and prints
 * what the tier reports about pinning. Exits 0 if the tier worked, whatever the OS said about mlock.
 */
public final class PinningProbe {

    private PinningProbe() {}

    public static void main(String[] args) {
        long capacity = Long.parseLong(args[0]);
        MemoryTier tier = MemoryTier.builder().capacity(capacity).pinned(true).build();
        PageKey key = new PageKey("probe://", "k", "v", 0, 4096);
        Page page = tier.allocate(key);
        byte[] bytes = new byte[4096];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) (i * 31);
        }
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, page.writableSegment(), 0, 4096);
        page.seal();
        tier.put(page);
        page.release();
        Page back = tier.get(key);
        boolean ok = back != null && back.segment().mismatch(MemorySegment.ofArray(bytes)) == -1;
        back.release();
        MemoryTier.Pinning pinning = tier.pinning();
        System.out.println("requested=" + pinning.requested() + " locked=" + pinning.lockedBytes() + " reserved="
                + pinning.reservedBytes() + " failure=" + pinning.failure().orElse("none") + " failures="
                + tier.stats().failures() + " bytes=" + (ok ? "ok" : "WRONG"));
        tier.close();
        System.exit(ok ? 0 : 1);
    }
}
