// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import dev.granary.TieredCache;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Fails a test that leaves a lease open or memory unreleased (Lucene's {@code MockDirectoryWrapper} "there are still
 * open files"). Register it with {@code @RegisterExtension final LeakCheck leaks = new LeakCheck();}, then
 * {@link #watch(TieredCache)} every cache the test builds and {@link #released(String, BooleanSupplier)} every
 * resource that must be returned once the cache is closed.
 *
 * <p>After each test: every watched cache must have zero open leases; then each cache is closed, and every
 * registered release condition must hold.
 */
public final class LeakCheck implements AfterEachCallback {

    private final Duration releaseWait;
    private final List<TieredCache> caches = new ArrayList<>();
    private final List<String> names = new ArrayList<>();
    private final List<BooleanSupplier> conditions = new ArrayList<>();

    /** Waits up to 10 s for resources to be released after close (origin reads interrupted by close finish first). */
    public LeakCheck() {
        this(Duration.ofSeconds(10));
    }

    public LeakCheck(Duration releaseWait) {
        this.releaseWait = releaseWait;
    }

    public <C extends TieredCache> C watch(C cache) {
        caches.add(cache);
        return cache;
    }

    /** Registers a condition that must hold once every watched cache is closed, e.g. a tier's memory is freed. */
    public void released(String what, BooleanSupplier condition) {
        names.add(what);
        conditions.add(condition);
    }

    @Override
    public void afterEach(ExtensionContext context) throws Exception {
        try {
            verify();
        } finally {
            caches.clear();
            names.clear();
            conditions.clear();
        }
    }

    /** Runs the checks now; public so a test can prove that a leak is caught. */
    public void verify() throws Exception {
        List<String> problems = new ArrayList<>();
        for (TieredCache cache : caches) {
            long open = cache.stats().openLeases();
            if (open != 0) {
                problems.add(open + " lease(s) still open on " + cache
                        + ": every Lease must be closed (try-with-resources)");
            }
        }
        for (TieredCache cache : caches) {
            cache.close();
        }
        for (int i = 0; i < conditions.size(); i++) {
            // Origin reads interrupted by close finish on their own threads and release their pages then: give
            // them a moment, but no more.
            try {
                Await.until(conditions.get(i), releaseWait, names.get(i)::toString);
            } catch (AssertionError e) {
                problems.add(names.get(i) + " not released after close: pages are still referenced");
            }
        }
        if (!problems.isEmpty()) {
            throw new AssertionError("leak check failed: " + String.join("; ", problems));
        }
    }
}
