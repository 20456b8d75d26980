#!/usr/bin/env python3
"""What a Prometheus endpoint counted between two scrapes.

Prints, for every sample whose metric name starts with one of the PREFIXES, its increase from
BEFORE to AFTER (two saved `/metrics` bodies), skipping histogram buckets and samples that did
not move; for a `_sum`/`_count` pair it also prints the mean. Used by e2e/run.sh's burst
benchmark to show what kube-scheduler did during the burst (attempts by result, cycle time).
Usage: prom-delta.py BEFORE AFTER PREFIX [PREFIX ...]
"""

import sys


def samples(path):
    out = {}
    for line in open(path):
        if not line.strip() or line.startswith("#"):
            continue
        key, _, value = line.rstrip().rpartition(" ")
        try:
            out[key] = float(value)
        except ValueError:
            continue
    return out


def main():
    before, after, prefixes = samples(sys.argv[1]), samples(sys.argv[2]), tuple(sys.argv[3:])
    delta = {
        k: v - before.get(k, 0.0)
        for k, v in after.items()
        if k.startswith(prefixes) and "_bucket" not in k and v != before.get(k, 0.0)
    }
    for k in sorted(delta):
        line = f"{k} +{delta[k]:g}"
        if "_sum" in k:
            count_key = k.replace("_sum", "_count", 1)
            count = after.get(count_key, 0.0) - before.get(count_key, 0.0)
            if count:
                line += f" in {count:g}"
            if count:
                line += f" (mean {delta[k] / count * 1000:.2f} ms)" if "seconds" in k else f" (mean {delta[k] / count:.2f})"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
