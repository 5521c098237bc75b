// SPDX-License-Identifier: Apache-2.0
/**
 * What Granary's own modules share and users do not code against: page-locking through {@code mlock}
 * ({@link dev.granary.internal.PageLocker}) for the memory tier and the loader's staging buffers, and the counters
 * every tier keeps ({@link dev.granary.internal.TierCounters}). Exported only to Granary's modules; no compatibility
 * promise.
 */
package dev.granary.internal;
