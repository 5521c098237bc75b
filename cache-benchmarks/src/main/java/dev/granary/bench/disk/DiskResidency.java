// SPDX-License-Identifier: Apache-2.0
package dev.granary.bench.disk;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * Puts a disk tier's segment files in a known page-cache state for the benchmarks outside this package, and says
 * which state they are in: {@link #warm} reads every byte (resident), {@link #pageOut} evicts them while the tier stays
 * open and keeps them mapped ({@code madvise(MADV_PAGEOUT)} over this process's mappings of them, then
 * {@code POSIX_FADV_DONTNEED}; see {@link PageCache#pageOut}), {@link #resident} measures the fraction in the page
 * cache with {@code mincore(2)}. Only segment files ({@code *.dat}) under the directory count.
 *
 * <p>Linux only; needs {@code --enable-native-access=ALL-UNNAMED}, and the files' owner or root (the kernel pages out
 * file pages through {@code madvise} only for a caller who could write the file). Stateless and thread-safe, but a
 * page-out while the tier is being read evicts pages under its readers: call it between measurements.
 */
public final class DiskResidency {

    private static final String SEGMENT_SUFFIX = ".dat";

    private DiskResidency() {}

    /**
     * Reads every byte of the segment files under {@code directory}, so the page cache holds them.
     *
     * @return the resident fraction afterwards, in [0, 1]
     * @throws IOException if a file cannot be read
     */
    public static double warm(Path directory) throws IOException {
        PageCache.readAll(PageCache.filesUnder(directory, SEGMENT_SUFFIX));
        return resident(directory);
    }

    /**
     * Evicts the segment files under {@code directory} from the page cache, including pages this process maps.
     *
     * @return a line saying what was advised and the resident fraction measured afterwards, e.g.
     *         {@code "MADV_PAGEOUT over 24 mappings (384 MiB) + FADV_DONTNEED on 24 files: resident 0.3 %"}
     * @throws IOException if the kernel refuses (older than 5.4, or the caller may not write the files)
     */
    public static String pageOut(Path directory) throws IOException {
        PageCache.PageOut done = PageCache.pageOut(directory, SEGMENT_SUFFIX);
        double resident = resident(directory);
        return String.format(
                Locale.ROOT,
                "MADV_PAGEOUT over %d mappings (%d MiB) + FADV_DONTNEED on %d files:" + " resident %.1f %%",
                done.mappings(),
                done.mappedBytes() >> 20,
                done.files(),
                100 * resident);
    }

    /**
     * {@return the fraction, in [0, 1], of the OS pages of the segment files under {@code directory} that are in the
     * page cache ({@code mincore}), 0 if there are none}
     *
     * @throws IOException if a file cannot be mapped
     */
    public static double resident(Path directory) throws IOException {
        List<Path> files = PageCache.filesUnder(directory, SEGMENT_SUFFIX);
        return PageCache.residency(files).fraction();
    }
}
