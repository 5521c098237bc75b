// SPDX-License-Identifier: Apache-2.0
package dev.granary;

import java.time.Duration;
import java.util.List;

/**
 * What a {@link TieredCache#prestage(String, java.util.function.Consumer) prestage} did. Immutable and thread-safe.
 *
 * @param objects       objects held by the staging tiers at the end: staged now or found there already
 * @param bytes         the bytes of those objects
 * @param alreadyCached objects found wholly in the staging tiers, so not read from the origin (a resumed prestage)
 * @param bytesFetched  bytes this prestage brought into the staging tiers (read from the origin, or copied from a
 *                      tier above that held them)
 * @param failed        the objects that could not be staged, with the reason, at most {@link #MAX_FAILURES_KEPT} of
 *                      them (the first ones); {@link #failedCount()} counts all
 * @param failedCount   the number of objects that could not be staged
 * @param cancelled     whether the prestage was cancelled ({@link Progress#cancel()} or an interrupt) before the end;
 *                      the objects not reached count nowhere
 * @param elapsed       the prestage's wall-clock time
 */
public record PrestageResult(long objects, long bytes, long alreadyCached, long bytesFetched, List<Failure> failed,
        long failedCount, boolean cancelled, Duration elapsed) {

    /** How many failures a result keeps by name: a prestage whose every object fails keeps bounded memory. */
    public static final int MAX_FAILURES_KEPT = 1000;

    /** Copies the failure list. */
    public PrestageResult {
        failed = List.copyOf(failed);
    }

    /** {@return whether every object reached was staged: none failed and the prestage was not cancelled} */
    public boolean complete() {
        return failedCount == 0 && !cancelled;
    }

    /**
     * An object that could not be staged.
     *
     * @param key    the object key
     * @param reason why, one line: the origin's error, or the tier that refused a page and why
     */
    public record Failure(String key, String reason) {}
}
