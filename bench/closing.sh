#!/usr/bin/env bash
# The session's closing device run, in one call (device time is scarce): the fused decode step's
# switches (bench/decode_fused_probe.sh), then -- with the fastest of its shared-memory/back-off
# settings, printed -- the GPU tests, report + compare, decode and profile (bench/final.sh),
# ridge vs Hugging Face (bench/decode_vs_hf.sh), and the tracer against PyTorch's profiler
# (bench/trace_pytorch.sh, and the GPU-bound size through bench/trace_pytorch_env.sh).
# Usage (GPU machine, build carried): OUT=<folder> bash bench/closing.sh; PACK=cmd runs after each part.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-runs/closing}
mkdir -p "$out"
export RIDGE_CACHE_DIR=$out/cache
pack() { [ -n "${PACK:-}" ] && eval "$PACK"; }
part() { echo "==== $1 ($(date -u +%T))"; }

part "decode probe"
OUT=$out timeout 75 bash bench/decode_fused_probe.sh build > "$out/probe.txt" 2>&1
cat "$out/probe.txt"
# the fastest batch-1 bf16 context-1024 setting among the first three (tiles on/off, back-off)
best=$(awk '/^== /{cfg=substr($0,4)} /graph_replay/ && cfg ~ /^RIDGE_GPT2_FUSED_SMEM_TILES=[01]( RIDGE_GPT2_FUSED_SPIN_NS=200)?$/ {print $5, cfg}' \
       "$out/probe.txt" | sort -n | head -1 | cut -d' ' -f2-)
echo "chosen decode setting: ${best:-defaults}" | tee "$out/chosen_setting.txt"
[ -n "$best" ] && export $best
pack

part "final: GPU tests, report + compare, decode, profile"
OUT=$out timeout 140 bash bench/final.sh
pack

part "decode vs Hugging Face"
OUT=$out/decode timeout 140 bash bench/decode_vs_hf.sh > "$out/decode_vs_hf.log" 2>&1; echo "rc=$?"
tail -25 "$out/decode_vs_hf.log"
pack

part "tracer vs torch.profiler"
OUT=$out timeout 150 taskset -c 2-7 bash bench/trace_pytorch.sh build > "$out/trace_pytorch.log" 2>&1; echo "rc=$?"
tail -20 "$out/trace_pytorch.log"
pack

part "tracer overhead, GPU-bound program"
OUT=$out/trace_large SIZES=large REPEATS=2 STEPS=20 WARMUP=5 CONFIGS="untraced cli torch" \
  timeout 60 taskset -c 2-5 bash bench/trace_pytorch_env.sh build > "$out/trace_large.log" 2>&1; echo "rc=$?"
tail -12 "$out/trace_large.log"
pack
part "done"
