#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The disk tier's benchmarks (docs/benchmarks.md, "Disk tier"): ROUNDS rounds (default 3) of the warm JMH benchmark
# at 1 and 2 threads, then the cold-read, recovery and segment-size mains. Results: cache-benchmarks/target/disk-suite/.
# Files go to -Dgranary.bench.dir (default cache-benchmarks/target/disk-bench), which must be on a block device.
#   cache-benchmarks/disk-suite.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
out="$(pwd)/cache-benchmarks/target/disk-suite"
mkdir -p "$out"
./mvnw -q -DskipTests -pl cache-benchmarks -am package
run() { ./mvnw -q -DskipTests -pl cache-benchmarks -am package "$@"; }
common="-f 1 -wi 3 -w 1s -i 5 -r 2s"
for round in $(seq 1 "$rounds"); do
  for t in 1 2; do
    run exec:exec@jmh -Djmh.args="DiskTierReadBenchmark $common -t $t -rf json -rff $out/warm-t$t-$round.json" \
      > "$out/warm-t$t-$round.log"
  done
done
run exec:exec@cold > "$out/cold.log"
run exec:exec@recovery > "$out/recovery.log"
run exec:exec@segments > "$out/segments.log"
{ uname -r; findmnt -T cache-benchmarks/target; cat /sys/block/vda/queue/read_ahead_kb 2>/dev/null; uptime; } \
  > "$out/machine.txt"
for t in 1 2; do
  echo "== disk warm read, $t thread(s): granary / mmap"
  python3 cache-benchmarks/ratios.py subject granary mmap "$out"/warm-t$t-*.json
done | tee "$out/ratios.txt"
grep -A30 "median" "$out/cold.log" | tail -20 | tee -a "$out/ratios.txt"
