// SPDX-License-Identifier: Apache-2.0
/**
 * Helpers for writing an {@link dev.granary.spi.Origin} over a remote store: validated builder settings and read
 * checks ({@link dev.granary.origin.support.OriginLimits}), key rules of flat namespaces
 * ({@link dev.granary.origin.support.Keys}), exponential backoff with full jitter
 * ({@link dev.granary.origin.support.Backoff}), and the retry loop every request runs in: attempts, a time budget,
 * counting, and the message that says what a failed request waited for ({@link dev.granary.origin.support.RetryLoop}).
 * Granary's S3 and GCS origins use them; a third-party origin may.
 * Contracts live in {@code dev.granary.spi}; this package holds only code that helps implement them.
 */
package dev.granary.origin.support;
