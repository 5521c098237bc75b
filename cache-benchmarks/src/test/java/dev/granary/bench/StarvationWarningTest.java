// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.granary.TieredCache;
import dev.granary.loader.DataLoader;
import dev.granary.loader.Dataset;
import dev.granary.loader.Epoch;
import dev.granary.loader.Starvation;
import dev.granary.origin.posix.PosixOrigin;
import dev.granary.tier.MemoryTier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The starvation alarm of a real loader whose decoder is its bottleneck (one worker spending 50 ms a sample, a trainer
 * that does nothing): it logs one warning per rise naming decode as where the time goes, with its figures, and hands
 * the listener the same change. (Here because this module's tests can read the JDK logger; StarvationAlarmTest in
 * cache-loader drives the alarm itself with a fed clock.)
 */
@Timeout(120)
class StarvationWarningTest {

    @TempDir
    Path dir;

    @Test
    void aDecodeBoundLoaderWarnsOnceNamingDecode() throws Exception {
        for (int i = 0; i < 24; i++) {
            Files.write(dir.resolve(String.format("%02d.bin", i)), new byte[1000]);
        }
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                records.add(record);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        Logger logger = Logger.getLogger(DataLoader.class.getName());
        logger.addHandler(handler);
        List<Starvation> heard = new CopyOnWriteArrayList<>();
        try (TieredCache cache = TieredCache.builder(PosixOrigin.of(dir))
                        .tier(MemoryTier.builder().capacity(1 << 20).build())
                        .build();
                DataLoader<Integer> loader = DataLoader.<Integer>builder(Dataset.ofObjects(cache, ""), s -> {
                            try {
                                Thread.sleep(50); // the decoder's work: the loader's bottleneck, not a synchronisation
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                            return s.index();
                        })
                        .batchSize(1)
                        .workers(1)
                        .prefetch(1)
                        .starvationWindow(Duration.ofMillis(300))
                        .starvationThreshold(0.2)
                        .starvationListener(heard::add)
                        .build()) {
            try (Epoch<Integer> epoch = loader.epoch(0)) {
                epoch.forEach(b -> {});
            }
            List<Starvation> raised = heard.stream().filter(Starvation::starved).toList();
            assertFalse(raised.isEmpty(), "a trainer waiting on a 50 ms decoder is starved: " + heard);
            Starvation first = raised.getFirst();
            assertEquals(Starvation.Cause.DECODE, first.cause(), first.describe());
            assertTrue(first.dataWaitRatio() >= 0.2, first.describe());
            assertTrue(first.decodeBusy() >= 0.8, first.describe());
            List<String> warnings = records.stream()
                    .filter(r -> Level.WARNING.equals(r.getLevel()))
                    .map(LogRecord::getMessage)
                    .toList();
            assertEquals(raised.size(), warnings.size(), "one warning per rise, no more: " + warnings);
            String line = warnings.getFirst();
            assertTrue(line.startsWith("loader over Dataset[24 objects of " + dir.toUri()), line);
            assertTrue(line.contains(": starved: the trainer waited for data"), line);
            assertTrue(line.contains("the time goes to decode"), line);
            assertTrue(line.contains("decode workers busy"), line);
            assertEquals(heard.getLast().starved(), loader.starved(), "the state is the last change's: " + heard);
        } finally {
            logger.removeHandler(handler);
        }
    }
}
