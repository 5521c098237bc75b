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
 * @param notStaged     objects not held by the staging tiers at the end for lack of room: the tiers filled up with
 *                      what this prestage staged (it never evicts its own pages to make room, and stops fetching once
 *                      they refuse one), or, in a directory other processes share, they evicted some of it
 * @param bytesNotStaged the bytes of those objects
 */
public record PrestageResult(
        long objects,
        long bytes,
        long alreadyCached,
        long bytesFetched,
        List<Failure> failed,
        long failedCount,
        boolean cancelled,
        Duration elapsed,
        long notStaged,
        long bytesNotStaged) {

    /** How many failures a result keeps by name: a prestage whose every object fails keeps bounded memory. */
    public static final int MAX_FAILURES_KEPT = 1000;

    /** Copies the failure list. */
    public PrestageResult {
        failed = List.copyOf(failed);
    }

    /**
     * {@return whether every object reached is held by the staging tiers: none failed, none was left out for lack of
     * room, and the prestage was not cancelled}
     */
    public boolean complete() {
        return failedCount == 0 && notStaged == 0 && !cancelled;
    }

    /**
     * An object that could not be staged.
     *
     * @param key    the object key
     * @param reason why, one line: the origin's error, or the tier that refused a page and why
     */
    public record Failure(String key, String reason) {}
}
