#!/usr/bin/env python3
"""Write GPT-2 weights as safetensors and reference logits from Hugging Face transformers.

The model is built from a GPT2Config (no network, no from_pretrained): random weights from a seed
(GPT-2's own init, then biases and layer-norm parameters made small and non-zero), or the tensors
of a given safetensors file. Every weight is rounded to a bf16-representable value, so an fp32 run
and a bf16 run of ridge use exactly the same numbers.

For each context N it writes ref_N.safetensors: 'tokens' [B, N] (random prompt) and 'logits'
[B, vocab], the logits after the last token with N-1 tokens in the KV cache (prefill N-1 tokens,
then one decode step with past_key_values), computed by GPT2LMHeadModel in fp32 with TF32 off; and
'logits_bf16', the same step by the model in bf16 (for scale). `ridge decode --weights W
--check-logits ref_N.safetensors` prefills the same tokens and compares.

Usage: python3 bench/gpt2_export.py --out DIR [--model small] [--seed 1] [--contexts 128,1024]
       [--batch 1] [--weights FILE]
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import load_file, save_file

PRESETS = {
    "tiny": dict(n_layer=2, n_head=2, n_embd=128, vocab_size=512, n_positions=256),
    "small": dict(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, n_positions=1024),
    "medium": dict(n_layer=24, n_head=16, n_embd=1024, vocab_size=50257, n_positions=1024),
    "large": dict(n_layer=36, n_head=20, n_embd=1280, vocab_size=50257, n_positions=1024),
    "xl": dict(n_layer=48, n_head=25, n_embd=1600, vocab_size=50257, n_positions=1024),
}


def build_model(preset, seed, weights_path=None):
    from transformers import GPT2Config, GPT2LMHeadModel

    shape = dict(PRESETS[preset])
    state = None
    if weights_path:
        state = load_file(weights_path)
        prefix = "transformer." if "transformer.wte.weight" in state else ""
        vocab, width = state[prefix + "wte.weight"].shape
        layers = 0
        while f"{prefix}h.{layers}.ln_1.weight" in state:
            layers += 1
        shape = dict(n_layer=layers, n_head=width // 64, n_embd=width, vocab_size=vocab,
                     n_positions=state[prefix + "wpe.weight"].shape[0])
        state = {(k if k.startswith("transformer.") or k == "lm_head.weight" else "transformer." + k): v
                 for k, v in state.items()}
    config = GPT2Config(**shape, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(config).eval()
    with torch.no_grad():
        if state is not None:
            missing, unexpected = model.load_state_dict(state, strict=False)
            missing = [m for m in missing if m != "lm_head.weight" and not m.endswith((".attn.bias", ".attn.masked_bias"))]
            if missing:
                sys.exit(f"gpt2_export: {weights_path} lacks {missing[:5]}")
        else:
            # GPT-2's init leaves biases at 0 and layer norms at (1, 0): make them small and non-zero.
            g = torch.Generator().manual_seed(seed + 1)
            for name, p in model.named_parameters():
                if name.endswith(".bias"):
                    p.copy_((torch.rand(p.shape, generator=g) * 2 - 1) * 0.02)
                elif ".ln_" in name or name.startswith("transformer.ln_f"):
                    p.copy_(1 + (torch.rand(p.shape, generator=g) * 2 - 1) * 0.1)
        for p in model.parameters():  # bf16-representable: fp32 and bf16 runs share the numbers
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
        model.tie_weights()
    return model, config


def save_weights(model, path):
    tensors = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()
               if k != "lm_head.weight" and not k.endswith((".attn.bias", ".attn.masked_bias"))}
    save_file(tensors, path, metadata={"format": "pt", "written_by": "bench/gpt2_export.py"})


@torch.no_grad()
def one_step_logits(model, tokens):
    """Prefill tokens[:, :-1] into the KV cache, then one decode step on tokens[:, -1]."""
    if tokens.shape[1] == 1:
        return model(input_ids=tokens, use_cache=True).logits[:, -1, :]
    past = model(input_ids=tokens[:, :-1], use_cache=True).past_key_values
    return model(input_ids=tokens[:, -1:], past_key_values=past, use_cache=True).logits[:, -1, :]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--model", default="small", choices=sorted(PRESETS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--contexts", default="128,1024", help="comma-separated lengths N (N-1 cached + 1 step)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--weights", help="use these GPT-2 weights (safetensors) instead of random ones")
    args = ap.parse_args()

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = "cuda" if torch.cuda.is_available() else "cpu"
    os.makedirs(args.out, exist_ok=True)
    model, config = build_model(args.model, args.seed, args.weights)
    weights_path = os.path.join(args.out, f"gpt2-{args.model}.safetensors")
    save_weights(model, weights_path)
    model = model.to(device)
    model_bf16 = build_model(args.model, args.seed, weights_path)[0].to(device=device, dtype=torch.bfloat16)
    import transformers

    attn = getattr(model.config, "_attn_implementation", "unknown")
    summary = {"weights": weights_path, "model": args.model, "device": device, "attention": attn,
               "transformers": transformers.__version__, "torch": torch.__version__, "references": []}
    g = torch.Generator().manual_seed(args.seed + 2)
    for n in [int(c) for c in args.contexts.split(",") if c]:
        if n < 1 or n > config.n_positions:
            sys.exit(f"gpt2_export: context {n} outside [1, {config.n_positions}]")
        tokens = torch.randint(0, config.vocab_size, (args.batch, n), generator=g)
        logits = one_step_logits(model, tokens.to(device)).float().cpu()
        logits_bf16 = one_step_logits(model_bf16, tokens.to(device)).float().cpu()
        path = os.path.join(args.out, f"ref_{n}.safetensors")
        save_file({"tokens": tokens.to(torch.int32).contiguous(), "logits": logits.contiguous(),
                   "logits_bf16": logits_bf16.contiguous()}, path,
                  metadata={"reference": f"transformers {transformers.__version__} GPT2LMHeadModel fp32 ({attn})",
                            "cache_tokens": str(n - 1)})
        rel = float((logits_bf16 - logits).norm() / logits.norm())
        summary["references"].append({"context": n, "file": path, "hf_bf16_vs_fp32_rel_err": rel})
        print(f"gpt2_export: {path}: batch {args.batch}, {n - 1} cached + 1 step; HF bf16 vs fp32 rel. err {rel:.2e}")
    with open(os.path.join(args.out, "export.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"gpt2_export: weights {weights_path}")


if __name__ == "__main__":
    main()
