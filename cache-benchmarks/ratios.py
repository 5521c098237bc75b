#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Ratios between JMH subjects measured in the same run, summarised over several runs.

usage: ratios.py PARAM NUMERATOR DENOMINATOR [--metric cycles] RESULT.json...

Each JSON file is one JMH run (-rf json). Within a file, the score of every benchmark whose parameter PARAM equals
NUMERATOR is divided by the score of the benchmark with the same other parameters whose PARAM equals DENOMINATOR.
Prints, per combination of the other parameters, the median and the min-max of those per-run ratios.

--metric cycles uses the perfnorm secondary result "cycles" (per op) instead of the primary throughput; as cycles per
op is lower-is-better, the ratio is inverted (DENOMINATOR cycles / NUMERATOR cycles), so > 1 still means "faster".
"""
import collections
import json
import statistics
import sys


def main(argv):
    metric = None
    if "--metric" in argv:
        i = argv.index("--metric")
        metric = argv[i + 1]
        del argv[i:i + 2]
    param, num, den, files = argv[0], argv[1], argv[2], argv[3:]
    ratios = collections.defaultdict(list)
    for path in files:
        scores = {}
        for bench in json.load(open(path)):
            params = bench.get("params", {})
            rest = tuple(sorted((k, v) for k, v in params.items() if k != param))
            if metric:
                m = bench.get("secondaryMetrics", {}).get(metric)
                if m is None:
                    continue
                score = m["score"]
            else:
                score = bench["primaryMetric"]["score"]
            scores[(bench["benchmark"].rsplit(".", 1)[-1], rest, params.get(param))] = score
        for (name, rest, value), score in scores.items():
            if value == num and (name, rest, den) in scores:
                other = scores[(name, rest, den)]
                ratios[(name, rest)].append(other / score if metric else score / other)
    for (name, rest), r in sorted(ratios.items(), key=lambda kv: (kv[0][0], [int(v) if v.isdigit() else v for _, v in kv[0][1]])):
        label = ", ".join(f"{k}={v}" for k, v in rest)
        print(f"{name} [{label}] {num}/{den}{' by ' + metric if metric else ''}: median {statistics.median(r):.2f}"
              f" ({min(r):.2f}-{max(r):.2f}, {len(r)} runs)")


if __name__ == "__main__":
    main(sys.argv[1:])
