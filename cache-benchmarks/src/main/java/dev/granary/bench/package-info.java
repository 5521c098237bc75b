// SPDX-License-Identifier: Apache-2.0
/**
 * Granary's measurements and its demo; class-path only, not part of the published API.
 *
 * <ul>
 *   <li>{@link dev.granary.bench.Demo}: the README's first command — three training epochs of a
 *       {@code DataLoader} over WebDataset shards and small files in a real S3 server (S3Proxy) behind injected
 *       latency, every byte checked — over {@link dev.granary.bench.LoaderWorld}, which
 *       {@link dev.granary.bench.LoaderBenchmark} (cold epoch vs a plain client, hit ratio ÷ ceiling, stall) shares.
 *       {@link dev.granary.bench.S3ReadBenchmark} compares S3 clients. The trace simulator, which replays shuffled
 *       epochs against LRU, Caffeine, Belady MIN and Granary's real tiers, is in {@code dev.granary.bench.sim}.</li>
 *   <li>{@link dev.granary.bench.MemoryTierHitBenchmark}: warm memory-tier hits against a raw off-heap buffer and a
 *       Caffeine map of buffers, in the same run. {@link dev.granary.bench.MemoryTierGetLongBenchmark} (JMH) and
 *       {@link dev.granary.bench.LeaseReadCheck} (one JVM, subjects alternating) read each hit as a decoder does, a
 *       {@code getLong} loop (decision 0021). The allocator comparison lives in {@code dev.granary.bench.memory}
 *       ({@code AllocatorBenchmark}, {@code AllocatorFootprint}).</li>
 *   <li>Their origin: {@link dev.granary.bench.SyntheticOrigin} (computed, verifiable bytes, no disk).</li>
 *   <li>The disk tier, in {@code dev.granary.bench.disk}:
 *       {@code DiskTierReadBenchmark} (JMH: warm hits against a plain read-only mapping of the same bytes),
 *       {@code DiskColdReadBenchmark} (page cache dropped before every pass, against O_DIRECT reads) and
 *       {@code DiskRecoveryBenchmark} (how long reopening a directory takes), with {@code DiskBenchData} (their data
 *       set) and {@code PageCache} ({@code posix_fadvise} and {@code mincore} through FFM).</li>
 * </ul>
 * Every JMH class names its run command in its Javadoc; the Maven executions {@code demo}, {@code loader},
 * {@code simulate}, {@code s3}, {@code jmh}, {@code footprint}, {@code cold} and {@code recovery} of this module's
 * {@code pom.xml} fix the JVM flags (see
 * {@code BENCHMARKS.md}).
 */
package dev.granary.bench;
