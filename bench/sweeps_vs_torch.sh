#!/usr/bin/env bash
# ridge bandwidth / ridge matmul next to torch.add / torch.matmul, in one GPU session, with targets:
#   - x + y at 2^28: best ridge variant >= 1.0x torch.add (triton do_bench median; CUDA-graph replay too)
#   - x + y at 2^10: ridge's time within 1 us of its measured empty-launch floor
#   - BF16 GEMM at n >= 1024: ridge >= 0.97x torch.matmul (do_bench median; graph replay too)
#   - each default sweep (`ridge bandwidth`, `ridge matmul`) finishes in <= 30 s
# Usage: bench/sweeps_vs_torch.sh   (RIDGE=path/to/ridge to override; results go to $OUT or runs/)
set -euo pipefail
cd "$(dirname "$0")/.."
RIDGE=${RIDGE:-build/bin/ridge}
DEST=${OUT:-runs}/sweeps_vs_torch
mkdir -p "$DEST"
[ -x "$RIDGE" ] || { echo "no ridge binary at $RIDGE: build first (cmake -S . -B build -G Ninja && ninja -C build)"; exit 1; }

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
timed() {  # timed NAME CMD...: runs CMD, keeps its output, records its wall time
  local name=$1; shift
  local t0 t1 rc=0
  t0=$(now_ms)
  "$@" > "$DEST/$name.txt" 2> "$DEST/$name.stderr" || rc=$?
  t1=$(now_ms)
  echo "$name $(( t1 - t0 )) $rc" >> "$DEST/walls.txt"
  echo "== $name (rc $rc, $(( t1 - t0 )) ms): $*"
  tail -n 25 "$DEST/$name.txt"
}
: > "$DEST/walls.txt"
"$RIDGE" --version | tee "$DEST/version.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$DEST/nvidia-smi.csv" 2>&1 || true

# The default sweeps, as a user runs them (wall time includes process start and CUDA init).
timed bandwidth_default "$RIDGE" bandwidth --json "$DEST/bandwidth_default.json" --svg "$DEST/bandwidth_default.svg"
timed matmul_default "$RIDGE" matmul --json "$DEST/matmul_default.json" --svg-prefix "$DEST/matmul_default"
# The bandwidth-sweep exercise exactly: x + y over 2^10..2^28.
timed bandwidth_add "$RIDGE" bandwidth --ops add --sizes 2^10:2^28:2 --json "$DEST/bandwidth_add.json" --svg "$DEST/bandwidth_add.svg"
# Cold-cache GEMMs, closer to do_bench (which flushes the L2 before every call).
timed matmul_cold "$RIDGE" matmul --cold --json "$DEST/matmul_cold.json"

python3 bench/sweeps_vs_torch.py --dest "$DEST" \
  --bandwidth "$DEST/bandwidth_add.json" --matmul "$DEST/matmul_default.json" --matmul-cold "$DEST/matmul_cold.json" \
  --walls "$DEST/walls.txt"
