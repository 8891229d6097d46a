#!/usr/bin/env python3
"""bench/gate_bands.py AFTER [BEFORE]: how tight is `ridge compare`'s gate on identical code?

AFTER and BEFORE are output folders of bench/report_repeatability.sh (their compare/*.json; for an
older folder that kept only Markdown, its compare/pair-*.md and last-vs-others.md).
For every judged record: its median time, its noise band over the pairwise compares of identical
runs (median and largest, and the term that set the largest), the band against the pooled
baselines (last-vs-others), and the smallest slowdown the compare could have flagged (largest over
the pairs). With BEFORE, the same columns for it beside. Prints a Markdown table, widest band first.
"""
import glob
import json
import os
import re
import statistics
import sys


def value_text(v):
    return v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))


def key(row):
    params = ",".join(f"{k}={value_text(v)}" for k, v in sorted(row["params"].items()))
    return f"{row['name']} {row['method']} {row['dtype']} {params}".strip()


def rows_of_markdown(path):
    """The comparison rows of a `ridge compare --markdown` file, as far as its table says."""
    rows = []
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 13 or cells[0] in ("name", "---") or not cells[4].endswith("s"):
            continue
        number, unit = cells[4].split()
        band = re.match(r"([0-9.]+)% \((.*)\)", cells[10])
        params = dict(re.findall(r"(\w+)=(.*?)(?= \w+=|$)", cells[3]))
        rows.append({"name": cells[0], "method": cells[1], "dtype": cells[2], "params": params,
                     "base_median_ms": float(number) * {"s": 1e3, "ms": 1, "us": 1e-3, "ns": 1e-6}[unit],
                     "verdict": cells[11].replace(" ", "_"), "noise_band": float(band[1]) / 100 if band else 0,
                     "noise_band_source": band[2] if band else ""})
    return rows


def compare_rows(path):
    return json.load(open(path))["rows"] if path.endswith(".json") else rows_of_markdown(path)


def bands(folder):
    """{record: {...}} over the folder's pair-*.json and last-vs-others.json."""
    pairs = sorted(glob.glob(os.path.join(folder, "compare", "pair-*.json")))
    suffix = ".json"
    if not pairs:
        pairs, suffix = sorted(glob.glob(os.path.join(folder, "compare", "pair-*.md"))), ".md"
    if not pairs:
        sys.exit(f"gate_bands: no compare/pair-*.json or pair-*.md in {folder}")
    out = {}
    for path in pairs:
        for row in compare_rows(path):
            if row["verdict"] in ("informational", "missing_in_base", "missing_in_new") or row["noise_band"] <= 0:
                continue
            r = out.setdefault(key(row), {"median_us": [], "band": [], "source": [], "flagged": []})
            r["median_us"].append(row["base_median_ms"] * 1e3)
            r["band"].append(row["noise_band"])
            r["source"].append(row["noise_band_source"])
            r["flagged"].append(row.get("smallest_flagged_slowdown", row["noise_band"]))
    pooled = os.path.join(folder, "compare", "last-vs-others" + suffix)
    if os.path.exists(pooled):
        for row in compare_rows(pooled):
            if key(row) in out:
                out[key(row)]["pooled"] = row["noise_band"]
                out[key(row)]["pooled_source"] = row["noise_band_source"]
    return out, len(pairs)


def cells(r):
    if r is None:
        return ["-"] * 4
    widest = max(range(len(r["band"])), key=lambda i: r["band"][i])
    pooled = f"{100 * r['pooled']:.1f}% ({r['pooled_source']})" if "pooled" in r else "-"
    return [f"{100 * statistics.median(r['band']):.1f}%",
            f"{100 * r['band'][widest]:.1f}% ({r['source'][widest]})", pooled, f"{100 * max(r['flagged']):.1f}%"]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    after, n_after = bands(sys.argv[1])
    before, n_before = bands(sys.argv[2]) if len(sys.argv) == 3 else ({}, 0)
    head = ["record", "median", "band (median of pairs)", "widest band", "pooled band", "flags a slowdown of"]
    if before:
        head += ["before: median band", "before: widest", "before: pooled", "before: flags"]
    print(f"{n_after} pairwise compares" + (f" (before: {n_before})" if before else "") + "\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for k in sorted(after, key=lambda k: -max(after[k]["band"])):
        r = after[k]
        row = [k, f"{statistics.median(r['median_us']):.2f} us"] + cells(r)
        if before:
            row += cells(before.get(k))
        print("| " + " | ".join(row) + " |")
    over = [k for k in after if statistics.median(after[k]["median_us"]) >= 2 and max(after[k]["band"]) > 0.10]
    print(f"\nRecords of 2 us or more whose band exceeded 10% on identical code: {len(over)}")
    for k in over:
        print(f"- {k}")


if __name__ == "__main__":
    main()
