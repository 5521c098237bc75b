/**
 * Granary's measurements and its demo; class-path only, not part of the published API.
 *
 * <ul>
 *   <li>{@link dev.granary.bench.Demo}: the README's first command, a cold and a warm epoch through a slow POSIX
 *       origin with every byte checked.</li>
 *   <li>{@link dev.granary.bench.MemoryTierHitBenchmark}: warm memory-tier hits against a raw off-heap buffer and a
 *       Caffeine map of buffers, in the same run. The allocator comparison lives in {@code dev.granary.tier}
 *       ({@code AllocatorBenchmark}, {@code AllocatorFootprint}) because it reaches the package-private
 *       {@code SlabAllocator}.</li>
 *   <li>Origins for both: {@link dev.granary.bench.SyntheticOrigin} (computed, verifiable bytes, no disk) and
 *       {@link dev.granary.bench.LatencyOrigin} (a fixed wait per request in front of any origin).</li>
 *   <li>The disk tier, also in {@code dev.granary.tier} (they reach package-private parts of it):
 *       {@code DiskTierReadBenchmark} (JMH: warm hits against a plain read-only mapping of the same bytes),
 *       {@code DiskColdReadBenchmark} (page cache dropped before every pass, against O_DIRECT reads) and
 *       {@code DiskRecoveryBenchmark} (how long reopening a directory takes), with {@code DiskBenchData} (their data
 *       set) and {@code PageCache} ({@code posix_fadvise} and {@code mincore} through FFM).</li>
 * </ul>
 * Every JMH class names its run command in its Javadoc; the Maven executions {@code demo}, {@code jmh},
 * {@code footprint}, {@code cold} and {@code recovery} of this module's {@code pom.xml} fix the JVM flags (see
 * {@code BENCHMARKS.md}).
 */
package dev.granary.bench;
