#!/usr/bin/env python3
"""bench/gate_resolution.py FOLDER [--under-us 10]: what each timing method resolves between processes.

FOLDER holds run-1 ... run-N, report folders (results.json) of one build taken back to back on one
GPU (bench/gate_issue40.sh writes them). For every record measured in each run (records carried
over from the ceilings cache are left out: extra.carried_over, or byte-identical samples), its N
run medians; per timing method, over the records shorter than --under-us:

- the standard deviation of a record's run medians (µs), median and 90th percentile over records;
- the same, robust: 1.4826 x the median absolute deviation of its run medians (µs);
- the largest one-off jump: the largest |median - median of medians| of any run (µs), and where;
- the relative spread (standard deviation / median), median over records.

This is the per-method resolution issue 40 asks for: what a change of one process must exceed to
be more than the method's own process-to-process noise. Prints Markdown.
"""
import argparse
import collections
import glob
import json
import os
import statistics


def key(r):
    return (r["name"], r["method"], r.get("dtype", ""), json.dumps(r["params"], sort_keys=True))


def load_runs(folder):
    runs = []
    for path in sorted(glob.glob(os.path.join(folder, "run-*", "results.json")),
                       key=lambda p: int(os.path.basename(os.path.dirname(p)).split("-")[1])):
        with open(path) as f:
            runs.append(json.load(f))
    if len(runs) < 3:
        raise SystemExit(f"gate_resolution: need at least 3 run-*/results.json in {folder}, found {len(runs)}")
    return runs


def measured_series(runs):
    """key -> [record per run] for records present once in every run and measured in each."""
    series = collections.OrderedDict()
    for run in runs:
        counts = collections.Counter(key(r) for r in run["records"])
        for r in run["records"]:
            if counts[key(r)] == 1:
                series.setdefault(key(r), []).append(r)
    kept = collections.OrderedDict()
    for k, records in series.items():
        if len(records) != len(runs) or not records[0].get("samples_ms"):
            continue
        if any((r.get("extra") or {}).get("carried_over") for r in records):
            continue
        if all(r["samples_ms"] == records[0]["samples_ms"] for r in records[1:]):
            continue
        kept[k] = records
    return kept


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder")
    ap.add_argument("--under-us", type=float, default=10.0, help="records shorter than this (µs) enter the table")
    args = ap.parse_args()
    runs = load_runs(args.folder)
    gpu = (runs[0]["context"].get("device") or {}).get("name", "?")
    by_method = collections.defaultdict(list)
    for k, records in measured_series(runs).items():
        medians_us = [r["median_ms"] * 1e3 for r in records]
        center = statistics.median(medians_us)
        if center >= args.under_us:
            continue
        sd = statistics.stdev(medians_us)
        mad = 1.4826 * statistics.median(abs(m - center) for m in medians_us)
        worst = max(range(len(medians_us)), key=lambda i: abs(medians_us[i] - center))
        by_method[k[1]].append({"key": k, "median_us": center, "sd_us": sd, "mad_us": mad,
                                "jump_us": abs(medians_us[worst] - center), "jump_run": worst + 1,
                                "relative": sd / center})
    print(f"# Resolution between processes per timing method: {gpu}, {len(runs)} runs, records under {args.under_us:g} us\n")
    print("| method | records | sd of run medians, median (us) | 90th pct (us) | robust sd, median (us) | 90th pct (us) "
          "| relative sd, median | largest one-off jump (us) | where |")
    print("|---|---|---|---|---|---|---|---|---|")
    for method, rows in sorted(by_method.items()):
        worst = max(rows, key=lambda r: r["jump_us"])
        where = f"{worst['key'][0]} {worst['key'][3]} at {worst['median_us']:.2f} us, run {worst['jump_run']}"
        print(f"| {method} | {len(rows)} | {statistics.median(r['sd_us'] for r in rows):.3f} | "
              f"{quantile([r['sd_us'] for r in rows], 0.9):.3f} | {statistics.median(r['mad_us'] for r in rows):.3f} | "
              f"{quantile([r['mad_us'] for r in rows], 0.9):.3f} | {100 * statistics.median(r['relative'] for r in rows):.2f}% | "
              f"{worst['jump_us']:.3f} | {where} |")


if __name__ == "__main__":
    main()
