#!/usr/bin/env bash
# ridge's GEMM timing against PyTorch's: cuBLAS BF16 GEMM at 4096^2 and 8192^2 timed by `ridge timing`
# (CUDA events through measure_cuda, on the same cublasGemmEx call PyTorch makes) and `a @ b` in
# PyTorch timed with torch.cuda.Event pairs the same way (bench/gemm_vs_torch.py), in one session.
# Usage: bench/gemm_vs_torch.sh [BUILD_DIR]  (writes into $OUT/gemm_vs_torch or runs/gemm_vs_torch)
set -euo pipefail
build=${1:-build}
out=${OUT:-runs}/gemm_vs_torch
mkdir -p "$out"
# Same op, same call (cublasGemmEx, row-major), same sequence of timers and counts in both
# programs; a pause before each lets the card's power state settle, and the order alternates.
: > "$out/torch_bf16.jsonl"
# repeats=10 calls per event pair (measure_cuda's `repeats`) so neither side's host launch latency
# (Python's is larger than C++'s) sits inside the events. With one call per pair the PyTorch side
# reads ~5% more at 4096 (results/h200/timing/COMMAND.md).
for n in 4096 8192; do
  sleep 3; python3 bench/gemm_vs_torch.py $n --dtype bf16 --repeats 10 >> "$out/torch_bf16.jsonl"
  sleep 3; "$build/bin/ridge" timing --n $n --dtype bf16 --backend cublas --samples 20 --warmup 5 --repeats 10 --json "$out/ridge_bf16_$n.json" > "$out/ridge_bf16_$n.txt"
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
torch_rows = {r["n"]: r for r in map(json.loads, open(f"{out}/torch_bf16.jsonl"))}
print(f"{'n':>6} {'ridge events ms':>16} {'torch events ms':>16} {'ridge/torch':>12} {'ridge wall':>11} {'torch wall':>11}")
ok = True
for n in (4096, 8192):
    doc = json.load(open(f"{out}/ridge_bf16_{n}.json"))
    rec = next(r for r in doc["records"] if r["method"] == "cuda_events" and r["params"]["case"] == "large")
    t = torch_rows[n]["median_ms"]
    ratio = rec["median_ms"] / t
    ok &= abs(ratio - 1) <= 0.03
    wall = next(r for r in doc["records"] if r["method"] == "wall_sync")
    print(f"{n:>6} {rec['median_ms']:>16.4f} {t:>16.4f} {ratio:>12.3f} {wall['median_ms']:>11.4f} {torch_rows[n]['wall_sync_ms']:>11.4f}")
    during = rec["extra"].get("clocks_during", {})
    print(f"       ridge SM clock during events: {during.get('sm_mhz_min')}-{during.get('sm_mhz_max')} MHz {during.get('throttle_reason_names', '')}")
print("medians agree within 3% (events, 10 calls per pair):", "yes" if ok else "NO")
PY
