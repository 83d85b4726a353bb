"""Medians and ratios over benchmark rounds (see bench/lib.sh).

usage: summarize.py OUT_PREFIX BASELINE_NAME [OTHER_BASELINE_NAME]
Reads OUT_PREFIX.*.json (hyperfine --export-json, one per round) and prints a markdown table:
each command's median and its ratio to BASELINE_NAME, and with OTHER_BASELINE_NAME a second
ratio column. Also writes OUT_PREFIX.summary.json: {name: {"median_ms", "ratio", "ratio_low",
"ratio_high"}}, and with a second baseline "other": {"ratio", "ratio_low", "ratio_high"}.
"""

import glob
import json
import statistics
import sys

prefix, baselines = sys.argv[1], sys.argv[2:]
rounds = []
for path in sorted(glob.glob(prefix + ".*.json")):
    if path.endswith(".summary.json"):
        continue
    results = json.load(open(path))["results"]
    rounds.append({r["command"]: r["median"] * 1000 for r in results})
if not rounds:
    sys.exit(f"no rounds at {prefix}.*.json")


def ratios(name, baseline):
    """The median, lowest and highest over the rounds of the per-round ratio."""
    per_round = sorted(r[name] / r[baseline] for r in rounds)
    return {
        "ratio": statistics.median(per_round),
        "ratio_low": per_round[0],
        "ratio_high": per_round[-1],
    }


def cell(r):
    return f"{r['ratio']:.2f}× ({r['ratio_low']:.2f}–{r['ratio_high']:.2f})"


names = list(rounds[0])
summary = {}
for name in names:
    summary[name] = {"median_ms": statistics.median(r[name] for r in rounds)}
    summary[name].update(ratios(name, baselines[0]))
    if len(baselines) > 1:
        summary[name]["other"] = ratios(name, baselines[1])
json.dump(summary, open(prefix + ".summary.json", "w"), indent=1)

columns = "".join(f" ratio to {b} (lowest–highest round) |" for b in baselines)
print(f"| command | median |{columns}")
print("|---|---:|" + "---:|" * len(baselines))
for name in names:
    s = summary[name]
    cells = cell(s) + (f" | {cell(s['other'])}" if "other" in s else "")
    print(f"| {name} | {s['median_ms']:.2f} ms | {cells} |")
