#!/usr/bin/env python3
"""Synthetic ridge runs for the history benchmarks (scale, concurrency, hostile input).

    history_synth.py lines --first 0 --runs 500 --records 100 --samples 20 -o FILE   # JSON lines for `history import`
    history_synth.py files --first 0 --runs 100 --records 100 --samples 20 -o DIR    # one result file per run

Run i is commit "c<i>" at minute i; record j is "kernel.j" (spin_hold, fp32) at a base time of its
own, samples with 1% spread, SM clocks at 1980 MHz. Deterministic: run i is the same run in both forms.
"""
import argparse
import json
import os
import random
import time


def make_run(i, records, samples):
    rng = random.Random(i)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1.7e9 + i * 60))
    clocks = {"sm_mhz": 1980.0, "memory_mhz": 3201.0, "source": "nvml"}
    recs = []
    for j in range(records):
        base = 0.002 * (1 + j)
        recs.append({"name": f"kernel.{j}", "method": "spin_hold", "dtype": "fp32", "params": {"size": 1 << (10 + j % 16), "variant": j},
                     "samples_ms": [round(base * rng.gauss(1, 0.01), 7) for _ in range(samples)],
                     "verification": "passed", "clocks_start": clocks, "clocks_end": clocks})
    context = {"tool": "ridge", "tool_version": "0.1.0", "git_sha": f"c{i}", "hostname": "bench-host", "timestamp_utc": stamp,
               "device": {"name": "NVIDIA H200", "uuid": "GPU-synthetic", "driver_version": 13000, "index": 0,
                          "compute_capability": "9.0"}}
    return {"schema": "ridge.results", "schema_version": 1, "context": context, "records": recs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("form", choices=("lines", "files"))
    ap.add_argument("--first", type=int, default=0)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--records", type=int, default=100)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    if a.form == "lines":
        with open(a.output, "w") as f:
            for i in range(a.first, a.first + a.runs):
                line = {"ridge_history_run": 1, "commit": f"c{i}", "branch": "main", "source": "synthetic",
                        "result": make_run(i, a.records, a.samples)}
                f.write(json.dumps(line, separators=(",", ":")) + "\n")
    else:
        os.makedirs(a.output, exist_ok=True)
        for i in range(a.first, a.first + a.runs):
            with open(os.path.join(a.output, f"run{i}.json"), "w") as f:
                json.dump(make_run(i, a.records, a.samples), f, separators=(",", ":"))


if __name__ == "__main__":
    main()
