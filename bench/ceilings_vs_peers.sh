#!/usr/bin/env bash
# bench/ceilings_vs_peers.sh: ridge's measured ceilings next to their peers, in one device session.
#   1. `ridge roofline` with an empty cache (measures; timed), then again warm (timed);
#   2. bench/ceilings_vs_peers.py: memcpy D2D 1 GiB, torch.add 2^28 fp32, torch.matmul bf16 8192^3;
#   3. `ridge roofline --refresh` (a second measurement, after the peers);
# then prints the ratios against each peer, with targets. Output: $OUT/ceilings (or runs/ceilings).
# Needs the built tool (build/bin/ridge, or $RIDGE) and python3 with torch and triton.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ridge=${RIDGE:-$root/build/bin/ridge}
out=${OUT:-$root/runs}/ceilings
mkdir -p "$out"
export RIDGE_CACHE_DIR="$out/cache"
rm -rf "$RIDGE_CACHE_DIR"

now() { date +%s.%N; }
t0=$(now)
"$ridge" roofline --device 0 --json "$out/ridge_cold.json" --svg "$out/roofline.svg" | tee "$out/ridge_cold.txt"
t1=$(now)
"$ridge" roofline --device 0 --svg "$out/roofline_warm.svg" >"$out/ridge_warm.txt"
t2=$(now)
python3 "$root/bench/ceilings_vs_peers.py" --json "$out/peers.json" | tee "$out/peers.txt"
"$ridge" roofline --device 0 --refresh --json "$out/ridge_refresh.json" --svg "$out/roofline_refresh.svg" \
  >"$out/ridge_refresh.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >"$out/nvidia_smi.txt" 2>&1 || true

python3 - "$out" "$t0" "$t1" "$t2" <<'PY'
import json, sys
out, t0, t1, t2 = sys.argv[1], *map(float, sys.argv[2:5])
peers = json.load(open(f"{out}/peers.json"))

def ceilings(path):
    recs = json.load(open(path))["records"]
    hbm = max((r for r in recs if r["name"].startswith("ceiling.hbm.")), key=lambda r: r["bytes_per_s"])
    fma = next(r for r in recs if r["name"] == "ceiling.fp32_fma")
    bf16 = next((r for r in recs if r["name"] == "ceiling.tensor" and r["dtype"] == "bf16"), None)
    sheet = fma["extra"].get("datasheet_flops_per_s", 0)
    mhz, max_mhz = fma["extra"].get("observed_sm_mhz", 0), fma["extra"].get("max_sm_clock_mhz", 0)
    at_clock = sheet * mhz / max_mhz if sheet and mhz and max_mhz else 0
    return {
        "hbm": hbm["bytes_per_s"], "hbm_kernel": hbm["name"],
        "fp32": fma["flops_per_s"], "fp32_sheet_at_clock": at_clock, "sm_mhz": mhz,
        "bf16": bf16["flops_per_s"] if bf16 else 0,
    }

rows = []
summary = {"cold_seconds": t1 - t0, "warm_seconds": t2 - t1, "peers": peers, "runs": {}}
for label, path in (("first run", f"{out}/ridge_cold.json"), ("--refresh", f"{out}/ridge_refresh.json")):
    c = ceilings(path)
    r = {
        "hbm_over_memcpy": c["hbm"] / peers["memcpy_d2d"]["bytes_per_s"],
        "hbm_over_torch_add": c["hbm"] / peers["torch_add"]["bytes_per_s"],
        "fp32_of_datasheet_at_clock": c["fp32"] / c["fp32_sheet_at_clock"] if c["fp32_sheet_at_clock"] else 0,
        "bf16_over_torch": c["bf16"] / peers["matmul_bf16_8192"]["flops_per_s"] if c["bf16"] else 0,
        "ceilings": c,
    }
    summary["runs"][label] = r
    rows.append((label, c, r))

def mark(ok):
    return "ok" if ok else "BELOW TARGET"

print()
print(f"peers: memcpy D2D {peers['memcpy_d2d']['bytes_per_s']/1e12:.3f} TB/s, "
      f"torch.add {peers['torch_add']['bytes_per_s']/1e12:.3f} TB/s, "
      f"torch.matmul bf16 {peers['matmul_bf16_8192']['flops_per_s']/1e12:.1f} TFLOP/s")
print(f"{'ridge run':<10} {'comparison':<36} {'ridge':>16} {'ratio':>8}  target")
for label, c, r in rows:
    print(f"{label:<10} {'HBM / memcpy D2D':<36} {c['hbm']/1e12:>11.3f} TB/s {r['hbm_over_memcpy']:>8.3f}  >= 1 {mark(r['hbm_over_memcpy'] >= 1)}  ({c['hbm_kernel']})")
    print(f"{'':<10} {'HBM / torch.add':<36} {c['hbm']/1e12:>11.3f} TB/s {r['hbm_over_torch_add']:>8.3f}  >= 1 {mark(r['hbm_over_torch_add'] >= 1)}")
    print(f"{'':<10} {'FP32 FMA / datasheet at %.0f MHz' % c['sm_mhz']:<36} {c['fp32']/1e12:>8.2f} TFLOP/s {r['fp32_of_datasheet_at_clock']:>8.1%}  >= 85% {mark(r['fp32_of_datasheet_at_clock'] >= 0.85)}")
    print(f"{'':<10} {'BF16 GEMM / torch.matmul':<36} {c['bf16']/1e12:>8.1f} TFLOP/s {r['bf16_over_torch']:>8.3f}  >= 0.97 {mark(r['bf16_over_torch'] >= 0.97)}")
print(f"ridge roofline: {t1 - t0:.1f} s with an empty cache (target < 30 s) {mark(t1 - t0 < 30)}, "
      f"{t2 - t1:.2f} s warm (target < 1 s) {mark(t2 - t1 < 1)}")
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
print(f"written: {out}/summary.json")
PY
