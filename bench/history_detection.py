#!/usr/bin/env python3
"""Detection quality of `ridge history check` against Apache Otava and asv on the same histories.

Pinned peers (install into a venv, e.g. /tmp/hb_venv):
    pip install apache-otava==0.8.0 asv==0.6.6
Run from the repository root with that venv's python (numpy comes with the peers):
    /tmp/hb_venv/bin/python bench/history_detection.py --out results/cpu/history/detection \
        --work /tmp/history_detection --seeds 3

Synthetic histories of COMMITS commits (one run per commit, every record of a real H200 report in
each run) built from two back-to-back H200 reports of identical code (results/h200/gate/run-1 and
run-2; records carried over from the ceilings cache, byte-identical in both, are left out: they
were not measured in either run): a record's run at a commit is one of its two real runs, chosen at random, with its raw
samples resampled (bootstrap), so each series carries that record's real within-run spread and
real run-to-run difference. Each series gets three level steps, 2%, 5% and 10% (random order and
sign, at least SPACING commits apart, never in the first or last 20 commits); a third of the steps
also move the record's SM clock (start, end and per-sample clocks) by 15-45 MHz, as the H200's
clocks moved between records of one report (1875-1980 MHz).

ridge reads the raw samples (`ridge history import` of generated JSON lines, then `ridge history
check --json`); Otava and asv read each run's median, the number they are built for. A step is
detected when a tool reports a change within +-1 commit of it; every other reported change is a
false alarm, counted per 1,000 record-commits that carry no step.
"""
import argparse
import collections
import copy
import gzip
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time

REPORTS = ["results/h200/gate/run-1.results.json.gz", "results/h200/gate/run-2.results.json.gz"]
STEP_SIZES = (0.02, 0.05, 0.10)
RESOLUTION_MS = 0.5e-3  # CompareOptions::min_change_us (history divides it by sqrt(window runs): 0.22 us for 5)


def series_key(r):
    return (r["name"], r["method"], r.get("dtype", ""), json.dumps(r["params"], sort_keys=True))


def carried_over(records):
    """Records not measured in their run: marked carried_over (ridge's ceilings cache), or
    byte-identical in every report (the same cache, written before the marker existed)."""
    if any((r.get("extra") or {}).get("carried_over") for r in records):
        return True
    return all(r["samples_ms"] == records[0]["samples_ms"] for r in records[1:])


def load_pool(reports):
    """Records present once in each report (a repeated key is ambiguous in a change list) and
    measured in each (not carried over from a cache): key -> [record per run]."""
    runs = [json.load(gzip.open(path)) for path in reports]
    pool = collections.OrderedDict()
    for run in runs:
        counts = collections.Counter(series_key(r) for r in run["records"])
        for r in run["records"]:
            if counts[series_key(r)] == 1:
                pool.setdefault(series_key(r), []).append(r)
    pool = collections.OrderedDict((k, v) for k, v in pool.items() if len(v) == len(runs) and not carried_over(v))
    return runs[0]["context"], pool


def judged_by_ridge(r):
    return r["method"] not in ("none", "wall_naive") and (r.get("gate") or {}).get("mode") != "informational"


def plan_steps(rng, commits, spacing):
    while True:
        at = sorted(rng.sample(range(20, commits - 20), 3))
        if all(b - a >= spacing for a, b in zip(at, at[1:])):
            break
    sizes = list(STEP_SIZES)
    rng.shuffle(sizes)
    return [{"commit": c, "size": s, "sign": rng.choice((1, -1)), "clock_mhz": rng.choice((15, 30, 45)) if rng.random() < 1 / 3 else 0}
            for c, s in zip(at, sizes)]


def scale_clock(reading, delta):
    if isinstance(reading, dict) and reading.get("sm_mhz", -1) > 0:
        reading["sm_mhz"] = reading["sm_mhz"] - delta


def synthetic_record(rng, real_runs, level, clock_drop):
    source = rng.choice(real_runs)
    r = copy.deepcopy(source)
    samples = source["samples_ms"]
    r["samples_ms"] = [rng.choice(samples) * level for _ in samples]
    for k in ("median_ms", "mean_ms", "min_ms", "max_ms", "stddev_ms", "cv", "iqr_ms", "p10_ms", "p25_ms", "p75_ms",
              "p90_ms", "median_ci_low_ms", "median_ci_high_ms", "bytes_per_s", "flops_per_s"):
        r.pop(k, None)
    if clock_drop:
        scale_clock(r.get("clocks_start"), clock_drop)
        scale_clock(r.get("clocks_end"), clock_drop)
        extra = r.get("extra", {})
        if isinstance(extra.get("sample_sm_mhz"), list):
            extra["sample_sm_mhz"] = [v - clock_drop for v in extra["sample_sm_mhz"]]
        if isinstance(extra.get("sm_mhz_median"), (int, float)):
            extra["sm_mhz_median"] -= clock_drop
    return r


def build_history(seed, context, pool, commits, spacing):
    rng = random.Random(seed)
    plans = {key: plan_steps(rng, commits, spacing) for key in pool}
    truth = {key: plan for key, plan in plans.items()}
    medians = {key: [] for key in pool}
    lines = []
    for i in range(commits):
        commit = f"s{seed}c{i:04d}"
        records = []
        for key, real_runs in pool.items():
            level, clock = 1.0, 0
            for step in plans[key]:
                if i >= step["commit"]:
                    level *= 1 + step["sign"] * step["size"]
                    clock += step["clock_mhz"]
            r = synthetic_record(rng, real_runs, level, clock)
            # The peers read one number per run: its median, per unit of the first run's work where
            # a run's work per call differs (a ceiling probe's tuned shape), as ridge compares it.
            work = lambda x: x.get("flops") or x.get("bytes") or 0  # noqa: E731
            per_work = work(real_runs[0]) / work(r) if work(r) > 0 and work(real_runs[0]) > 0 else 1.0
            medians[key].append(statistics.median(r["samples_ms"]) * per_work)
            records.append(r)
        ctx = copy.deepcopy(context)
        ctx["timestamp_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1.7e9 + seed * 1e6 + i * 60))
        ctx["git_sha"] = commit
        result = {"schema": "ridge.results", "schema_version": 1, "context": ctx, "records": records}
        lines.append(json.dumps({"ridge_history_run": 1, "commit": commit, "branch": "main", "source": "synthetic",
                                 "result": result}))
    return truth, medians, lines


def children_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def ridge_changes(ridge, db, lines_path, threshold, out_json):
    subprocess.run([ridge, "history", "import", db, lines_path], check=True, stdout=subprocess.DEVNULL)
    t0 = children_cpu_s()
    rc = subprocess.run([ridge, "history", "check", db, "--threshold", threshold, "--json", out_json],
                        stdout=subprocess.DEVNULL).returncode
    seconds = children_cpu_s() - t0
    if rc not in (0, 5):
        sys.exit(f"ridge history check exited {rc}")
    check = json.load(open(out_json))
    found = collections.defaultdict(list)
    for c in check["changes"]:
        key = (c["name"], c["method"], c.get("dtype", ""), json.dumps(c["params"], sort_keys=True))
        found[key].append(int(c["commit"].split("c")[-1]))
    return found, seconds


def otava_changes(values):
    from otava.analysis import compute_change_points  # noqa: PLC0415 (the peers are imported where used)
    # Otava's defaults (AnalysisOptions): window 50, max p-value 0.001, no minimum magnitude. A list, as
    # Otava's Series passes it (a numpy array fails inside its t-test).
    points, _ = compute_change_points(list(values), window_len=50, max_pvalue=0.001, min_magnitude=0.0)
    return [int(p.index) for p in points]


def asv_changes(values):
    from asv.step_detect import detect_steps  # noqa: PLC0415
    steps = detect_steps(values)
    # Every step asv finds (improvements too): the left edge of each new level after the first.
    return [s[0] for s in steps[1:]]


def score(truth, found, judged, commits, missed=None):
    """Per step size: (detected, total); false alarms and step-free record-commits. `missed` (a
    list) collects (record key, step) of each step not found."""
    rows = collections.defaultdict(lambda: [0, 0])
    false_alarms = 0
    free = 0
    for key, steps in truth.items():
        if not judged(key):
            continue
        at = found.get(key, [])
        free += commits - len(steps)
        for s in steps:
            hit = any(abs(a - s["commit"]) <= 1 for a in at)
            if not hit and missed is not None:
                missed.append((key, s))
            tags = [f"{int(s['size'] * 100)}%"]
            tags.append(tags[0] + (" clock moved" if s["clock_mhz"] else " clock still"))
            tags.append(tags[0] + (" >= 0.5 us" if s["above_resolution"] else " < 0.5 us"))
            for t in tags:
                rows[t][0] += hit
                rows[t][1] += 1
        false_alarms += sum(1 for a in at if not any(abs(a - s["commit"]) <= 1 for s in steps))
    return rows, false_alarms, free


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ridge", default="build/bin/ridge")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/history_detection")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--commits", type=int, default=200)
    ap.add_argument("--spacing", type=int, default=30)
    ap.add_argument("--thresholds", default="5%,3%,2%", help="ridge --threshold values to run")
    ap.add_argument("--reports", nargs="+", default=REPORTS,
                    help="the real reports of one build whose records the histories resample (default: two H200 runs)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    context, pool = load_pool(args.reports)
    thresholds = [t for t in args.thresholds.split(",") if t]
    tools = [f"ridge --threshold {t}" for t in thresholds] + ["otava", "asv"]
    totals = {t: [collections.defaultdict(lambda: [0, 0]), 0, 0] for t in tools}
    totals_info = {t: [collections.defaultdict(lambda: [0, 0]), 0, 0] for t in tools}
    seconds = collections.defaultdict(float)
    judged_keys = {k for k, v in pool.items() if judged_by_ridge(v[0])}
    ridge_missed = []  # (seed, record key, step) of the judged records' steps the first ridge threshold missed
    for seed in range(1, args.seeds + 1):
        truth, medians, lines = build_history(seed, context, pool, args.commits, args.spacing)
        for key, steps in truth.items():
            base = statistics.median(r_med for r_med in medians[key][:steps[0]["commit"]])
            for s in steps:
                s["above_resolution"] = base * s["size"] >= RESOLUTION_MS
        lines_path = os.path.join(args.work, f"seed{seed}.jsonl")
        with open(lines_path, "w") as f:
            f.write("\n".join(lines) + "\n")
        found = {}
        for t in thresholds:
            db = os.path.join(args.work, f"seed{seed}.{t.rstrip('%')}.db")
            if os.path.exists(db):
                os.remove(db)
            name = f"ridge --threshold {t}"
            found[name], sec = ridge_changes(args.ridge, db, lines_path, t,
                                             os.path.join(args.work, f"seed{seed}.{t.rstrip('%')}.check.json"))
            seconds[name] += sec
        for name, detector in (("otava", otava_changes), ("asv", asv_changes)):
            t0 = time.process_time()
            found[name] = {key: detector(values) for key, values in medians.items()}
            seconds[name] += time.process_time() - t0
        for name in tools:
            for bucket, judged in ((totals, lambda k: k in judged_keys), (totals_info, lambda k: k not in judged_keys)):
                missed = [] if name == tools[0] and bucket is totals else None
                rows, fa, free = score(truth, found[name], judged, args.commits, missed)
                ridge_missed.extend((seed, key, step) for key, step in missed or [])
                for tag, (hit, n) in rows.items():
                    bucket[name][0][tag][0] += hit
                    bucket[name][0][tag][1] += n
                bucket[name][1] += fa
                bucket[name][2] += free
    tags = [f"{int(s * 100)}%" for s in STEP_SIZES]
    detail = [f"{t}{x}" for t in tags for x in (" clock moved", " clock still", " >= 0.5 us", " < 0.5 us")]
    out = []
    out.append(f"# ridge history check vs Apache Otava vs asv: {args.seeds} histories x {args.commits} commits, "
               f"{len(judged_keys)} judged records + {len(pool) - len(judged_keys)} informational, 3 steps each\n")
    for title, bucket in (("Records ridge judges", totals), ("Informational records (ridge never judges them, by design)", totals_info)):
        out.append(f"## {title}\n")
        out.append("| tool | " + " | ".join(f"{t} steps found" for t in tags) + " | false alarms | per 1,000 record-commits | CPU time, all histories |")
        out.append("|---|" + "---|" * (len(tags) + 3))
        for name in tools:
            rows, fa, free = bucket[name]
            cells = [f"{rows[t][0]}/{rows[t][1]} ({100 * rows[t][0] / max(rows[t][1], 1):.0f}%)" for t in tags]
            out.append(f"| {name} | " + " | ".join(cells) + f" | {fa} | {1000 * fa / max(free, 1):.2f} | {seconds[name]:.1f} s |")
        out.append("")
        out.append("Steps found, split by whether the SM clock moved at the step and by whether the step is at least ridge's 0.5 us resolution:\n")
        out.append("| tool | " + " | ".join(detail) + " |")
        out.append("|---|" + "---|" * len(detail))
        for name in tools:
            rows = bucket[name][0]
            out.append(f"| {name} | " + " | ".join(f"{rows[t][0]}/{rows[t][1]}" for t in detail) + " |")
        out.append("")
    out.append(f"## Steps of judged records {tools[0]} missed (2% steps left out)\n")
    out.append("| seed | record | step | at commit |\n|---|---|---|---|")
    for seed, key, step in ridge_missed:
        if step["size"] >= 0.05:
            out.append(f"| {seed} | {' '.join(k for k in key[:3] if k)} {key[3]} | {int(step['size'] * 100)}% | {step['commit']} |")
    out.append("")
    text = "\n".join(out)
    print(text)
    with open(os.path.join(args.out, "detection.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
