#!/usr/bin/env python3
"""Writes a generated run history as JSON lines (`ridge history import` reads them): RUNS runs,
one per commit, each with RECORDS records of 20 samples (1% log-normal noise, a 0.3% offset per
run, SM clock 1980 MHz). Every tenth record steps up 10% at two thirds of the commits, so the
page has changes to list and mark."""
import json
import math
import random
import sys


def main() -> None:
    runs, records = int(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(20261205)
    step_at = runs * 2 // 3
    for i in range(runs):
        day, rest = divmod(i, 86400)
        stamp = f"2026-{1 + day // 28:02}-{1 + day % 28:02}T{rest // 3600:02}:{rest // 60 % 60:02}:{rest % 60:02}Z"
        recs = []
        for r in range(records):
            level = (0.01 + 0.05 * r) * (1.10 if r % 10 == 0 and i >= step_at else 1.0)
            offset = math.exp(0.003 * rng.gauss(0, 1))
            samples = [round(level * offset * math.exp(0.01 * rng.gauss(0, 1)), 7) for _ in range(20)]
            recs.append({"name": f"kernel_{r:03}", "method": "cuda_events", "dtype": "bf16", "params": {"n": 1024 + r},
                         "samples_ms": samples, "clocks_start": {"sm_mhz": 1980}, "clocks_end": {"sm_mhz": 1980}})
        result = {"schema": "ridge.results", "schema_version": 1,
                  "context": {"tool": "ridge", "tool_version": "0.1.0", "git_sha": "generated", "timestamp_utc": stamp,
                              "hostname": "ci-1", "device": {"name": "NVIDIA H200", "driver_version": 13000}},
                  "records": recs}
        print(json.dumps({"ridge_history_run": 1, "commit": f"c{i:05}", "branch": "main", "source": "generated",
                          "added_utc": stamp, "result": result}))


if __name__ == "__main__":
    main()
