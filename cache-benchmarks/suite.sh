#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the JMH suite ROUNDS times (default 3), one fork per (parameters, subject) per round, so that every ratio in
# docs/benchmarks.md is taken within one round and summarised over rounds (median, min-max). Results: target/suite/.
#   cache-benchmarks/suite.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
out="$(pwd)/cache-benchmarks/target/suite"
mkdir -p "$out"
./mvnw -q -DskipTests -pl cache-benchmarks -am package
jmh() { ./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@jmh -Djmh.args="$*"; }
common="-f 1 -wi 3 -w 1s -i 5 -r 2s -prof perfnorm"
for round in $(seq 1 "$rounds"); do
  for t in 1 2; do
    jmh "MemoryTierHitBenchmark $common -t $t -rf json -rff $out/hit-t$t-$round.json" > "$out/hit-t$t-$round.log"
    jmh "AllocatorBenchmark $common -t $t -rf json -rff $out/alloc-t$t-$round.json" > "$out/alloc-t$t-$round.log"
  done
done
./mvnw -q -DskipTests -pl cache-benchmarks -am package exec:exec@footprint > "$out/footprint.log"
{ uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled; uptime; } > "$out/machine.txt"
r=cache-benchmarks/ratios.py
for t in 1 2; do
  echo "== memory-tier hit, $t thread(s)"
  for pair in "granary raw" "granary caffeine" "tier raw" "tier caffeine"; do
    python3 $r subject $pair "$out"/hit-t$t-*.json
    python3 $r subject $pair --metric cycles "$out"/hit-t$t-*.json
  done
  echo "== allocator churn, $t thread(s)"
  python3 $r allocator ffm-slab netty-pooled "$out"/alloc-t$t-*.json
done | tee "$out/ratios.txt"
