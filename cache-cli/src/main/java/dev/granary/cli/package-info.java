// SPDX-License-Identifier: Apache-2.0
/**
 * The {@code granary} command line. {@link dev.granary.cli.Main} runs {@code GranaryCommand}, which wires one class
 * per subcommand ({@code PrestageCommand}, {@code PackCommand}, {@code IndexCommand}, {@code InspectCommand},
 * {@code VerifyCommand}, {@code ClearCommand}, {@code BenchCommand}, {@code PlanCommand}) and maps failures to one
 * line and an exit code ({@code ExitCodes}). {@code Origins} turns an origin URI and its options into an
 * {@link dev.granary.spi.Origin}; {@code Sizes} parses {@code 64M}-style sizes; {@code DelayedOrigin} injects the
 * latency of {@code bench}'s second sweep. Each command is a thin layer over public API: {@code TieredCache.prestage},
 * {@code ShardWriter}, {@code WebDataset.writeIndex}, {@code DiskTierInspection}, {@code DataLoader.plan}.
 * Guide: {@code docs/operations.md}.
 */
package dev.granary.cli;
