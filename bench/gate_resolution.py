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

`--pairs FILE...` instead reads stored comparisons of two runs of one build (`ridge compare --json`
or `--markdown` files) and gives, per method, the change |new - base| of each short record between
the two processes (records whose ratio is exactly 1, cached ceilings, are left out): median,
90th percentile and largest, over all pairs. Weaker evidence than N runs (one difference per pair).
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


def pair_table(paths, under_us):
    """Per method, |new - base| (us) of each short record over the stored pairwise comparisons."""
    import gate_bands  # noqa: PLC0415 (its Markdown reader, beside this file)
    by_method = collections.defaultdict(list)
    for path in paths:
        for row in gate_bands.compare_rows(path) if path.endswith(".json") else markdown_rows(path):
            base_us = row["base_median_ms"] * 1e3
            if not (0 < base_us < under_us) or row.get("ratio", 0) in (0, 1.0):
                continue
            by_method[row["method"]].append((abs(row["ratio"] - 1) * base_us, base_us, row["name"], os.path.basename(path)))
    print(f"# Change of short records between two processes of one build, per timing method ({len(paths)} pairs, "
          f"records under {under_us:g} us)\n")
    print("| method | record-pairs | median change (us) | 90th pct (us) | largest (us) | where |")
    print("|---|---|---|---|---|---|")
    for method, rows in sorted(by_method.items()):
        worst = max(rows)
        print(f"| {method} | {len(rows)} | {statistics.median(r[0] for r in rows):.3f} | "
              f"{quantile([r[0] for r in rows], 0.9):.3f} | {worst[0]:.3f} | {worst[2]} at {worst[1]:.2f} us, {worst[3]} |")


def markdown_rows(path):
    """rows_of_markdown with the ratio column, which the band table does not need."""
    import gate_bands  # noqa: PLC0415
    rows = gate_bands.rows_of_markdown(path)
    ratios = []
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 13 and cells[0] not in ("name", "---") and cells[4].endswith("s"):
            ratios.append(float(cells[6]) if cells[6] != "-" else 0)
    for row, ratio in zip(rows, ratios):
        row["ratio"] = ratio
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", nargs="?")
    ap.add_argument("--under-us", type=float, default=10.0, help="records shorter than this (µs) enter the table")
    ap.add_argument("--pairs", nargs="+", help="stored pairwise comparisons (JSON or Markdown) instead of FOLDER")
    args = ap.parse_args()
    if args.pairs:
        pair_table(args.pairs, args.under_us)
        return
    if not args.folder:
        ap.error("give FOLDER or --pairs FILE...")
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
