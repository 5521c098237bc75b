// SPDX-License-Identifier: Apache-2.0
/**
 * Measurements of the loader's epoch orders: what a rank pays to compute its order
 * ({@link dev.granary.bench.order.SamplerCostBenchmark}, Maven execution {@code order-cost}) and how well each shuffle
 * mixes ({@link dev.granary.bench.order.ShuffleQualityBenchmark}, execution {@code shuffle-quality}). Class-path only,
 * not part of the published API.
 */
package dev.granary.bench.order;
