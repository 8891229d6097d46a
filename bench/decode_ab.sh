#!/usr/bin/env bash
# A kernel change side by side: the GPU test suite of this build, then `ridge decode` (graph,
# context 1024, bf16 unless stated) of the build before the change (build/bin/ridge_before, copied
# there by hand) and of this one (build/bin/ridge), interleaved.
#   bench/decode_ab.sh OUTDIR [batches|sizes]   batches: GPT-2 small at batch 1 (4 rounds), 4, 8,
#   fp32, and xl; sizes: small, medium, large and xl at batch 1 (2 rounds each)
set -uo pipefail
DIR=${1:-runs/decode_ab}
SET=${2:-batches}
mkdir -p "$DIR"
[[ -x build/bin/ridge_before ]] || { echo "decode_ab.sh: build/bin/ridge_before is missing"; exit 1; }
timeout 200 ctest --test-dir build -L gpu --output-on-failure > "$DIR/gpu_tests.txt" 2>&1
echo "gpu tests rc=$?: $(grep -E 'tests passed' "$DIR/gpu_tests.txt")"
d() {  # binary, label, then ridge decode arguments
  local bin=$1 label=$2; shift 2
  timeout 120 build/bin/$bin decode --mode graph --bandwidth 4490 --context 1024 --samples 20 "$@" \
    --json "$DIR/decode.$label.json" > "$DIR/decode.$label.txt" 2>&1
  echo "$label (rc=$?): $(grep -E '^ +[0-9]' "$DIR/decode.$label.txt" | tr -s ' ' | cut -d' ' -f2-7 | tr '\n' '|')"
}
if [[ $SET == sizes ]]; then
  for round in 0 1; do
    for model in small medium large xl; do
      d ridge_before before.$model.$round --model $model --batch 1
      d ridge after.$model.$round --model $model --batch 1
    done
  done
  exit 0
fi
for round in 0 1 2 3; do
  d ridge_before before.b1.$round --batch 1
  d ridge after.b1.$round --batch 1
done
for b in 4 8; do d ridge_before before.b$b --batch $b; d ridge after.b$b --batch $b; done
d ridge_before before.fp32 --batch 1 --dtype fp32; d ridge after.fp32 --batch 1 --dtype fp32
d ridge_before before.xl --model xl --batch 1; d ridge after.xl --model xl --batch 1
