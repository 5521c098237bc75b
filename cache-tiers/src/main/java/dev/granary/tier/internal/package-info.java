// SPDX-License-Identifier: Apache-2.0
/**
 * Not API: the few package-private hooks of {@code dev.granary.tier} that Granary's own benchmarks
 * ({@code cache-benchmarks}) measure with, behind {@link dev.granary.tier.internal.TierInternals}. The module
 * {@code dev.granary.tiers} does not export this package, so code on the module path cannot see it; on the class
 * path, where the benchmarks run, it can, but nothing here is supported, documented for users or kept stable.
 */
package dev.granary.tier.internal;
