#!/usr/bin/env bash
# The session's closing device run, in one call (device time is scarce): the GPU tests, report +
# compare, decode and profile (bench/final.sh), ridge vs Hugging Face (bench/decode_vs_hf.sh), and
# the tracer against PyTorch's profiler (bench/trace_pytorch.sh, and the GPU-bound size through
# bench/trace_pytorch_env.sh). Usage (GPU machine, build carried): OUT=<folder> bash
# bench/closing.sh; SAVE=cmd runs after each part (e.g. to archive what is there so far).
set -u
cd "$(dirname "$0")/.."
out=${OUT:-runs/closing}
mkdir -p "$out"
export RIDGE_CACHE_DIR=$out/cache
save_outputs() { [ -n "${SAVE:-}" ] && eval "$SAVE"; }
part() { echo "==== $1 ($(date -u +%T))"; }

part "final: GPU tests, report + compare, decode, profile"
OUT=$out timeout 140 bash bench/final.sh
save_outputs

part "decode vs Hugging Face"
OUT=$out/decode timeout 140 bash bench/decode_vs_hf.sh > "$out/decode_vs_hf.log" 2>&1; echo "rc=$?"
tail -25 "$out/decode_vs_hf.log"
save_outputs

part "tracer vs torch.profiler"
OUT=$out timeout 150 taskset -c 2-7 bash bench/trace_pytorch.sh build > "$out/trace_pytorch.log" 2>&1; echo "rc=$?"
tail -20 "$out/trace_pytorch.log"
save_outputs

part "tracer overhead, GPU-bound program"
OUT=$out/trace_large SIZES=large REPEATS=2 STEPS=20 WARMUP=5 CONFIGS="untraced cli torch" \
  timeout 60 taskset -c 2-5 bash bench/trace_pytorch_env.sh build > "$out/trace_large.log" 2>&1; echo "rc=$?"
tail -12 "$out/trace_large.log"
save_outputs
part "done"
