// SPDX-License-Identifier: Apache-2.0
package dev.granary.testkit;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/** Runs one task on several threads at once and fails with the first task's failure. */
public final class Concurrently {

    /** The work of one thread, given its index. */
    @FunctionalInterface
    public interface Task {
        void run(int thread) throws Exception;
    }

    private Concurrently() {}

    public static void run(int threads, Task task) throws Exception {
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                futures.add(pool.submit(() -> {
                    task.run(thread);
                    return null;
                }));
            }
            for (Future<?> future : futures) {
                try {
                    future.get();
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof Exception cause) {
                        throw cause;
                    }
                    throw (Error) e.getCause();
                }
            }
        }
    }
}
