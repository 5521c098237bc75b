// SPDX-License-Identifier: Apache-2.0
/**
 * Tiers that keep pages close to the reader.
 *
 * <ul>
 *   <li>{@link dev.granary.tier.MemoryTier} — off-heap memory: slabs reserved from one FFM arena up to a hard
 *       capacity ({@code SlabAllocator}), optionally page-locked ({@code dev.granary.internal.PageLocker}, {@code
 * mlock} through an FFM
 *       downcall), indexed in primitive arrays ({@code MemorySlots}: no object per cached page), ordered by an
 *       eviction policy.</li>
 *   <li>{@link dev.granary.tier.WindowTinyLfuPolicy} — the default policy, W-TinyLFU weighted by bytes: run over slot
 *       ids inside the memory tier ({@code SlotPolicy}), or as a Caffeine cache of keys for anyone else.</li>
 *   <li>{@link dev.granary.tier.DiskTier} — local disk: pages appended into segment files
 *       ({@code Segment}, {@code SegmentFormat}), mapped with FFM, CRC32C-verified, recovered by a header scan after a
 *       restart or crash; one process per directory ({@code DirectoryLock}).</li>
 *   <li>{@link dev.granary.tier.SegmentLruPolicy} — the disk tier's default policy: the least recently read segment
 *       goes first.</li>
 * </ul>
 *
 * <p>The disk format: docs/disk-format.md.
 *
 * <p>Why FFM slabs and not Netty's pooled buffers: docs/decisions/0001-memory-allocator.md.
 */
package dev.granary.tier;
