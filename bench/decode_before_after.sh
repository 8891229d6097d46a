#!/usr/bin/env bash
# A decode kernel change side by side, two builds of ridge in one session: the GPU test suite of
# this build, then `ridge decode` (graph, context 1024, bf16 unless stated) of the build before the
# change (BEFORE, any other build's bin/ridge) and of this one (build/bin/ridge, or $RIDGE),
# interleaved so clocks and power affect both alike.
#
#   bench/decode_before_after.sh BEFORE OUTDIR [batches|sizes]     (from the repository root)
#     batches: GPT-2 small at batch 1 (4 rounds), 4 and 8, fp32, and xl at batch 1
#     sizes:   small, medium, large and xl at batch 1 (2 rounds each)
# Writes OUTDIR/gpu_tests.txt and OUTDIR/decode.{before,after}.<case>.{txt,json}.
set -uo pipefail
cd "$(dirname "$0")/.."
BEFORE=${1:?usage: bench/decode_before_after.sh BEFORE_RIDGE OUTDIR [batches|sizes]}
DIR=${2:-runs/decode_before_after}
SET=${3:-batches}
AFTER=${RIDGE:-build/bin/ridge}
for bin in "$BEFORE" "$AFTER"; do
  [[ -x $bin ]] || { echo "decode_before_after.sh: $bin is not an executable ridge" >&2; exit 2; }
done
mkdir -p "$DIR"
timeout 200 ctest --test-dir build -L gpu --output-on-failure > "$DIR/gpu_tests.txt" 2>&1
echo "gpu tests rc=$?: $(grep -E 'tests passed' "$DIR/gpu_tests.txt")"
d() {  # binary, label, then ridge decode arguments
  local bin=$1 label=$2; shift 2
  timeout 120 "$bin" decode --mode graph --bandwidth 4490 --context 1024 --samples 20 "$@" \
    --json "$DIR/decode.$label.json" > "$DIR/decode.$label.txt" 2>&1
  echo "$label (rc=$?): $(grep -E '^ +[0-9]' "$DIR/decode.$label.txt" | tr -s ' ' | cut -d' ' -f2-7 | tr '\n' '|')"
}
if [[ $SET == sizes ]]; then
  for round in 0 1; do
    for model in small medium large xl; do
      d "$BEFORE" before.$model.$round --model $model --batch 1
      d "$AFTER" after.$model.$round --model $model --batch 1
    done
  done
  exit 0
fi
for round in 0 1 2 3; do
  d "$BEFORE" before.b1.$round --batch 1
  d "$AFTER" after.b1.$round --batch 1
done
for b in 4 8; do d "$BEFORE" before.b$b --batch $b; d "$AFTER" after.b$b --batch $b; done
d "$BEFORE" before.fp32 --batch 1 --dtype fp32; d "$AFTER" after.fp32 --batch 1 --dtype fp32
d "$BEFORE" before.xl --model xl --batch 1; d "$AFTER" after.xl --model xl --batch 1
