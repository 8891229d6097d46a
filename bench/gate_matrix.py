#!/usr/bin/env python3
"""bench/gate_matrix.py FOLDER: the injected-slowdown matrix of bench/gate_slowdown_matrix.sh.

FOLDER holds classes.txt (class|selector|amount), exit_codes.txt, one slowed report per class and
compare/<class>-vs-{one,pooled}.json. Prints a Markdown table: per record class, how many records
the testing aid slowed, how many of those the compare judges, how many it flagged against one
baseline and against the pooled baselines (with the exit codes), and any record outside the class
that was flagged. Then the slowed, judged records that were not flagged, with their band.
"""
import json
import os
import statistics
import sys

SLOWED = "deliberately slowed after measurement"


def key(r):
    params = ",".join(f"{k}={v}" for k, v in sorted(r["params"].items()))
    return f"{r['name']} {r['method']} {r['dtype']} {params}".strip()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    folder = sys.argv[1]
    classes = [line.split("|") for line in open(os.path.join(folder, "classes.txt")).read().splitlines() if line]
    codes = {}
    for line in open(os.path.join(folder, "exit_codes.txt")).read().splitlines():
        name, against, rc = line.split()
        codes[(name, against)] = int(rc)
    print("| class | selector | slowed by | records slowed (median) | judged | flagged vs one | flagged vs pooled "
          "| others flagged |")
    print("|---|---|---|---|---:|---|---|---|")
    missed = []
    for name, selector, amount in classes:
        results = os.path.join(folder, name, "results.json")
        if not os.path.exists(results):
            print(f"| {name} | `{selector}` | {amount} | (no report) | | | | |")
            continue
        slowed = {key(r): statistics.median(r["samples_ms"]) * 1e3 for r in json.load(open(results))["records"]
                  if any(SLOWED in w for w in r.get("warnings", []))}
        cells, others = [], set()
        judged = set()
        for against in ("one", "pooled"):
            rows = json.load(open(os.path.join(folder, "compare", f"{name}-vs-{against}.json")))["rows"]
            flagged = {key(r) for r in rows if r["verdict"] == "REGRESSION"}
            judged = {key(r) for r in rows if key(r) in slowed and r["verdict"] != "informational"}
            cells.append(f"{len(flagged & judged)}/{len(judged)} (exit {codes.get((name, against), '?')})")
            others |= flagged - set(slowed)
            missed += [f"{name} vs {against}: {key(r)}: {100 * (r['ratio'] - 1):+.1f}% against a band of "
                       f"{100 * r['noise_band']:.1f}% ({r['noise_band_source']})"
                       for r in rows if key(r) in judged and r["verdict"] != "REGRESSION"]
        medians = sorted(slowed.values())
        span = f"{medians[0]:.1f}-{medians[-1]:.1f} us" if medians else "-"
        print(f"| {name} | `{selector}` | {amount} | {len(slowed)} ({span}) | {len(judged)} | {cells[0]} | {cells[1]} "
              f"| {', '.join(sorted(others)) or '-'} |")
    print()
    print(f"Slowed, judged records not flagged: {len(missed)}")
    for line in missed:
        print(f"- {line}")


if __name__ == "__main__":
    main()
