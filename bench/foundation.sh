#!/usr/bin/env bash
# One device call for the foundation issue: GPU tests, ridge info/timing, the GEMM comparison.
# Usage (on the GPU machine, build carried): bench/foundation.sh [BUILD_DIR]
set -uo pipefail
build=${1:-build}
out=${OUT:-runs}
mkdir -p "$out"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$out/nvidia_smi.txt" 2>&1
ctest --test-dir "$build" --output-on-failure -j 1 > "$out/ctest.txt" 2>&1; echo "ctest rc=$?" | tee -a "$out/ctest.txt"
"$build/bin/ridge" info --json "$out/info.json" > "$out/info.txt" 2>&1
"$build/bin/ridge" timing --json "$out/timing.json" --markdown "$out/timing.md" > "$out/timing.txt" 2>&1; echo "timing rc=$?" >> "$out/timing.txt"
OUT="$out" bench/gemm_vs_torch.sh "$build" > "$out/gemm_vs_torch.txt" 2>&1
tail -n 30 "$out/ctest.txt"; cat "$out/info.txt" "$out/timing.txt" "$out/gemm_vs_torch.txt"
