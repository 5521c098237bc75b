// SPDX-License-Identifier: Apache-2.0
/**
 * The Google Cloud Storage origin. {@link dev.granary.origin.gcs.GcsOrigin} reads objects by ranged reads pinned to
 * the generation the cache learned ({@code ifGenerationMatch}), retries on its own with backoff and jitter, and lists
 * lazily, a page at a time.
 */
package dev.granary.origin.gcs;
