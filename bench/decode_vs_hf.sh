#!/usr/bin/env bash
# GPT-2 decode, ridge against decode_ceiling and against Hugging Face transformers, in one session
# on the GPU machine:
#   1. export GPT-2 small weights (random, bf16-representable) + HF reference logits (128, 1024);
#   2. check ridge's logits against them: fp32 (<= 1e-4) and bf16 (<= 2e-2);
#   3. ridge decode small bf16 batch 1 context 1024, eager and graph (target >= 60% of decode_ceiling),
#      also fp32 and the cuBLASLt backend;
#   4. HF GPT2LMHeadModel per-step time, fp32 and bf16, same weights, batch 1, cache 1023 (+1);
#   5. a batch sweep 1..256 of ridge decode (graph) with the roofline plot;
#   6. the summary table (last).
# Outputs go to $OUT if set, else runs/decode_vs_hf-<UTC time>. RIDGE=path/to/ridge overrides the
# binary (default build/bin/ridge); BANDWIDTH=GB/s skips the measured ceiling.
set -euo pipefail
cd "$(dirname "$0")/.."
RIDGE=${RIDGE:-build/bin/ridge}
OUT=${OUT:-runs/decode_vs_hf-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
BW=()
if [[ -n "${BANDWIDTH:-}" ]]; then BW=(--bandwidth "$BANDWIDTH"); fi
log() { echo "== $*" >&2; }

{
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv || true
  "$RIDGE" --version
  git rev-parse HEAD 2>/dev/null || true
} > "$OUT/environment.txt" 2>&1

log "export weights and Hugging Face reference logits"
python3 bench/gpt2_export.py --out "$OUT/weights" --model small --contexts 128,1024 --batch 1 | tee "$OUT/export.log"
W="$OUT/weights/gpt2-small.safetensors"

log "ridge logits vs Hugging Face"
for dtype in fp32 bf16; do
  for n in 128 1024; do
    "$RIDGE" decode --weights "$W" --dtype "$dtype" --check-logits "$OUT/weights/ref_$n.safetensors" \
      --batch 1 --context "$n" --mode graph --samples 5 --warmup 2 "${BW[@]}" \
      --json "$OUT/check_${dtype}_$n.json" | tee "$OUT/check_${dtype}_$n.txt"
  done
done

log "ridge decode, batch 1, context 1024"
"$RIDGE" decode --weights "$W" --dtype bf16 --batch 1 --context 1024 --mode eager,graph --samples 50 "${BW[@]}" \
  --json "$OUT/ridge_b1_bf16.json" | tee "$OUT/ridge_b1_bf16.txt"
"$RIDGE" decode --weights "$W" --dtype fp32 --batch 1 --context 1024 --mode eager,graph --samples 50 "${BW[@]}" \
  --json "$OUT/ridge_b1_fp32.json" | tee "$OUT/ridge_b1_fp32.txt"
"$RIDGE" decode --weights "$W" --dtype bf16 --batch 1 --context 1024 --mode graph --gemm cublas --samples 50 \
  "${BW[@]}" --json "$OUT/ridge_b1_bf16_cublas.json" | tee "$OUT/ridge_b1_bf16_cublas.txt"
"$RIDGE" decode --weights "$W" --dtype bf16 --batch 1 --context 1024 --mode graph --no-pdl --samples 50 \
  "${BW[@]}" --json "$OUT/ridge_b1_bf16_nopdl.json" | tee "$OUT/ridge_b1_bf16_nopdl.txt"

log "Hugging Face transformers, eager PyTorch"
python3 bench/decode_vs_hf.py time --weights "$W" --batch 1 --context 1024 --dtypes fp32,bf16 \
  --out "$OUT/hf.json" | tee "$OUT/hf.txt"

log "ridge batch sweep 1..256 (bf16, context 1024, graph)"
"$RIDGE" decode --weights "$W" --dtype bf16 --batch 1,2,4,8,16,32,64,128,256 --context 1024 --mode graph \
  --samples 20 "${BW[@]}" --svg "$OUT/decode_roofline.svg" --json "$OUT/ridge_sweep_bf16.json" \
  | tee "$OUT/ridge_sweep_bf16.txt"

python3 bench/decode_vs_hf.py summarize "$OUT"
echo "results in $OUT"
