"""A stand-in for `ridge report` in tests/cli/report_repeatability_fake.sh: writes DIR/results.json
shaped like an H200 report's records, with the run-to-run behaviour seen there. Usage:
fake_report.py DIR SLOWDOWN_US. FAKE_REPORT_NO_GATES=1 leaves out the records' "gate" fields."""
import hashlib
import json
import math
import os
import random
import sys

out_dir, slowdown_ms = sys.argv[1], float(sys.argv[2]) / 1e3
# Seeded by the folder's own name (run-1, ..., slowed): the same reports on every machine.
rng = random.Random(int(hashlib.sha256(os.path.basename(os.path.normpath(out_dir)).encode()).hexdigest()[:12], 16))
gates = os.environ.get("FAKE_REPORT_NO_GATES") != "1"
host_ms = 0.022 * math.exp(rng.gauss(0, 0.15))  # this process's launch latency (15-16% moves seen)


def samples(median_ms, cv, n, run_cv=0.003):
    center = median_ms * math.exp(rng.gauss(0, run_cv))  # every median moves a little per process
    return [center * math.exp(rng.gauss(0, cv)) for _ in range(n)]


def record(name, method, dtype, params, values, gate=None, repeats=1):
    r = {"name": name, "method": method, "dtype": dtype, "params": params, "samples_ms": values,
         "repeats_per_sample": repeats}
    if gate and gates:
        r["gate"] = gate
    return r


large = {"case": "large", "m": 4096, "n": 4096, "k": 4096}
small = {"case": "small", "m": 256, "n": 256, "k": 256}
latency_min = {"mode": "judged", "min_threshold": 0.5 * 0.022 / 2.745, "reason": "host launch latency"}
records = [
    record("timing", "wall_naive", "fp32", large, samples(0.018, 0.3, 20),
           {"mode": "informational", "reason": "demonstrates the wrong method"}),
    record("timing", "wall_sync", "fp32", large, [v + slowdown_ms for v in samples(2.751, 0.002, 20)], latency_min),
    record("timing", "cuda_events", "fp32", large, [v + slowdown_ms for v in samples(2.745, 0.002, 20)], latency_min),
    record("timing", "cuda_events", "bf16", small, samples(0.00277 + host_ms, 0.03, 50, 0),
           {"mode": "informational", "reason": "host launch latency is 89% of this number"}),
    record("timing", "spin_hold", "bf16", small, samples(0.00547, 0.02, 50)),
    record("timing", "graph_replay", "bf16", small, samples(0.00278, 0.002, 50), repeats=57),
    record("matmul", "graph_replay", "bf16", {"m": 4096, "n": 4096, "k": 4096}, samples(0.174, 0.003, 20), repeats=2),
    record("decode", "cuda_events", "bf16", {"batch": 1, "mode": "eager"},
           samples(0.3224 + host_ms * 0.3, 0.004, 10, 0.004),
           {"mode": "judged", "min_threshold": 0.5 * 0.0066 / 0.329, "reason": "host launch latency"}),
    record("decode", "graph_replay", "bf16", {"batch": 1, "mode": "graph"}, samples(0.3214, 0.002, 10)),
]
result = {"schema": "ridge.results", "schema_version": 1,
          "context": {"tool": "ridge", "tool_version": "0.1.0", "git_sha": "fake", "argv": ["ridge", "report"],
                      "device": {"name": "NVIDIA H200", "uuid": "GPU-fake"},
                      "clocks_start": {"sm_mhz": 1980, "source": "nvml"},
                      "clocks_end": {"sm_mhz": 1980, "source": "nvml"}},
          "records": records}
with open(os.path.join(out_dir, "results.json"), "w") as f:
    json.dump(result, f)
