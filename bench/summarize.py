"""Medians and ratios over benchmark rounds (see bench/lib.sh).

usage: summarize.py OUT_PREFIX BASELINE_NAME
Reads OUT_PREFIX.*.json (hyperfine --export-json, one per round) and prints a markdown table.
Also writes OUT_PREFIX.summary.json: {name: {"median_ms", "ratio", "ratio_low", "ratio_high"}}.
"""

import glob
import json
import statistics
import sys

prefix, baseline = sys.argv[1], sys.argv[2]
rounds = []
for path in sorted(glob.glob(prefix + ".*.json")):
    if path.endswith(".summary.json"):
        continue
    results = json.load(open(path))["results"]
    rounds.append({r["command"]: r["median"] * 1000 for r in results})
if not rounds:
    sys.exit(f"no rounds at {prefix}.*.json")

names = list(rounds[0])
summary = {}
for name in names:
    medians = [r[name] for r in rounds]
    ratios = sorted(r[name] / r[baseline] for r in rounds)
    summary[name] = {
        "median_ms": statistics.median(medians),
        "ratio": statistics.median(ratios),
        "ratio_low": ratios[0],
        "ratio_high": ratios[-1],
    }
json.dump(summary, open(prefix + ".summary.json", "w"), indent=1)

print(f"| command | median | ratio to {baseline} (lowest–highest round) |")
print("|---|---:|---:|")
for name in names:
    s = summary[name]
    print(
        f"| {name} | {s['median_ms']:.2f} ms | {s['ratio']:.2f}× "
        f"({s['ratio_low']:.2f}–{s['ratio_high']:.2f}) |"
    )
