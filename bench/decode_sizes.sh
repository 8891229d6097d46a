#!/usr/bin/env bash
# The decode step (bf16, batch 1, context 1024, graph) at every GPT-2 preset under each way of
# running it: the barrier kernel, the barrier kernel with its bulk L2 prefetch
# (--l2-prefetch), the GEMV chain, and the cuBLASLt chain, interleaved.
#     bench/decode_sizes.sh OUTDIR [models...]     (from the repo root)
set -uo pipefail
DIR=${1:-runs/decode_sizes}
shift || true
MODELS=${*:-small medium large xl}
mkdir -p "$DIR"
RIDGE=build/bin/ridge
d() {  # label, then ridge decode arguments
  local label=$1; shift
  timeout 120 $RIDGE decode --mode graph --bandwidth 4490 --batch 1 --context 1024 --samples 10 "$@" \
    --json "$DIR/decode.$label.json" > "$DIR/decode.$label.txt" 2>&1
  echo "$label (rc=$?): $(grep -E '^ +[0-9]' "$DIR/decode.$label.txt" | tr -s ' ' | tr '\n' '|')"
}
for model in $MODELS; do
  d $model.barrier --model $model --kernel barrier
  d $model.barrier_prefetch --model $model --kernel barrier --l2-prefetch
  d $model.chain --model $model --gemm gemv --kernel chain
  d $model.cublas --model $model --gemm cublas
done
