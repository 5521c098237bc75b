// SPDX-License-Identifier: Apache-2.0
/**
 * The epoch trace simulator ({@link dev.granary.bench.sim.EpochTraceSimulator}, Maven execution {@code simulate}):
 * hit ratios of replacement policies on the loader's own shuffled epoch order, one class per policy behind
 * {@code Subject}. The Granary rows run the shipped {@code TieredCache}, {@code MemoryTier} and {@code DiskTier}
 * driven by an {@code EpochDriver}, not a model of them. Class-path only, not part of the published API.
 */
package dev.granary.bench.sim;
