#!/usr/bin/env bash
# Where the fused decode step's time goes, in one session: ms/step and the per-phase timeline
# (RIDGE_GPT2_FUSED_TIMELINE, summarised by bench/fused_timeline.py) with the real weights and with
# every layer reading layer 0's weights (RIDGE_GPT2_FUSED_ONE_LAYER_WEIGHTS=1: 14 MB, L2-resident).
#   bench/decode_fused_variants.sh OUTDIR      (from the repo root, build/ holding bin/ridge)
set -uo pipefail
DIR=${1:-runs/decode_fused}
mkdir -p "$DIR"
RIDGE=build/bin/ridge
echo "== GPU tests of the decode step (fused by default)"
timeout 120 build/tests/ridge_gpu_tests --gtest_filter='Gpt2*:*Gpt2Decode*' > "$DIR/gpu_tests.txt" 2>&1
echo "rc=$?"; grep -E "FAILED|PASSED|tests ran" "$DIR/gpu_tests.txt" | head -20
d() {  # label, context, then env assignments
  local label=$1 context=$2; shift 2
  env "$@" timeout 60 $RIDGE decode --batch 1 --context "$context" --mode graph --bandwidth 4490 --dtype "${DTYPE:-bf16}" \
      > "$DIR/decode.$label.txt" 2>&1
  echo "$label: $(grep -E '^ +[0-9]' "$DIR/decode.$label.txt" | head -1)"
}
for round in 0 1; do
  echo "== round $round (bf16, batch 1, graph)"
  d default.$round 1024
  d one_layer.$round 1024 RIDGE_GPT2_FUSED_ONE_LAYER_WEIGHTS=1
  d default_ctx128.$round 128
  d one_layer_ctx128.$round 128 RIDGE_GPT2_FUSED_ONE_LAYER_WEIGHTS=1
done
echo "== timelines"
d timeline.default 1024 RIDGE_GPT2_FUSED_TIMELINE="$DIR/timeline.default.json"
d timeline.one_layer 1024 RIDGE_GPT2_FUSED_ONE_LAYER_WEIGHTS=1 RIDGE_GPT2_FUSED_TIMELINE="$DIR/timeline.one_layer.json"
d timeline.default_ctx128 128 RIDGE_GPT2_FUSED_TIMELINE="$DIR/timeline.default_ctx128.json"
for v in default one_layer default_ctx128; do
  echo "-- $v"
  python3 bench/fused_timeline.py "$DIR/timeline.$v.json" --json "$DIR/timeline.$v.summary.json" | tee "$DIR/timeline.$v.md"
  gzip -f "$DIR/timeline.$v.json"
done
