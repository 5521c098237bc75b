// SPDX-License-Identifier: Apache-2.0
/**
 * What Granary's own modules share and users do not code against: page-locking through {@code mlock}
 * ({@link dev.granary.internal.PageLocker}) for the memory tier and the loader's staging buffers; the counters every
 * tier keeps ({@link dev.granary.internal.TierCounters}); what one loader caused in a shared cache
 * ({@link dev.granary.internal.ReadAccount}); the JFR events the cache, tiers and loader emit
 * ({@link dev.granary.internal.FlightEvents}); and byte sizes as messages write them
 * ({@link dev.granary.internal.ByteSizes}). Exported only to Granary's modules; no compatibility promise.
 */
package dev.granary.internal;
