/**
 * Tiers that keep pages close to the reader.
 *
 * <ul>
 *   <li>{@link dev.granary.tier.MemoryTier} — off-heap memory: slabs reserved from one FFM arena up to a hard
 *       capacity ({@code SlabAllocator}), optionally page-locked ({@code PageLocker}, {@code mlock} through an FFM
 *       downcall), indexed by a {@link java.util.concurrent.ConcurrentHashMap}, ordered by an eviction policy.</li>
 *   <li>{@link dev.granary.tier.WindowTinyLfuPolicy} — the default policy, Caffeine's W-TinyLFU weighted by bytes.</li>
 * </ul>
 *
 * <p>Why FFM slabs and not Netty's pooled buffers: docs/decisions/0001-memory-allocator.md.
 */
package dev.granary.tier;
