#!/usr/bin/env python3
"""Hugging Face transformers' GPT-2 decode step, timed the way a user runs it, and the summary
table of bench/decode_vs_hf.sh.

  time:      python3 bench/decode_vs_hf.py time --weights W --batch 1 --context 1024 --dtypes fp32,bf16 --out F.json
  summarize: python3 bench/decode_vs_hf.py summarize DIR

'time' builds GPT2LMHeadModel from a GPT2Config (no network), loads W (safetensors, GPT-2 names),
prefills N-1 random tokens into a DynamicCache and times one decode step (input_ids [B, 1],
past_key_values of length N-1) in eager PyTorch: synchronized wall clock per step (what a decode
loop waits) and CUDA events, median of --samples after --warmup. The cache is cut back to N-1
tokens after every step, outside the timed window.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import time


def load_model(weights, dtype):
    import torch
    from safetensors.torch import load_file
    from transformers import GPT2Config, GPT2LMHeadModel

    state = load_file(weights)
    prefix = "transformer." if "transformer.wte.weight" in state else ""
    vocab, width = state[prefix + "wte.weight"].shape
    layers = 0
    while f"{prefix}h.{layers}.ln_1.weight" in state:
        layers += 1
    config = GPT2Config(n_layer=layers, n_head=width // 64, n_embd=width, vocab_size=vocab,
                        n_positions=state[prefix + "wpe.weight"].shape[0], resid_pdrop=0.0, embd_pdrop=0.0,
                        attn_pdrop=0.0, tie_word_embeddings=True)
    model = GPT2LMHeadModel(config).eval()
    state = {(k if k.startswith("transformer.") or k == "lm_head.weight" else "transformer." + k): v
             for k, v in state.items()}
    model.load_state_dict(state, strict=False)
    model.tie_weights()
    return model.to(device="cuda", dtype=dtype), config


def time_step(model, config, batch, context, samples, warmup):
    import torch

    g = torch.Generator().manual_seed(batch * 1000 + context)
    prompt = torch.randint(0, config.vocab_size, (batch, context - 1), generator=g).cuda()
    step_ids = torch.randint(0, config.vocab_size, (batch, 1), generator=g).cuda()
    cached = context - 1

    with torch.no_grad():
        def prefill():
            return model(input_ids=prompt, use_cache=True).past_key_values

        past = prefill()
        wall, events = [], []
        for i in range(warmup + samples):
            if hasattr(past, "get_seq_length") and past.get_seq_length() != cached:
                past = prefill()  # crop unavailable or did not take: rebuild, outside the window
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            start.record()
            out = model(input_ids=step_ids, past_key_values=past, use_cache=True)
            end.record()
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            if i >= warmup:
                wall.append((t1 - t0) * 1e3)
                events.append(start.elapsed_time(end))
            past = out.past_key_values
            try:
                past.crop(cached)
            except Exception:
                past = prefill()
        return {"wall_sync_ms": statistics.median(wall), "events_ms": statistics.median(events),
                "wall_min_ms": min(wall), "samples": samples}


def cmd_time(args):
    import torch
    import transformers

    torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    for name in args.dtypes.split(","):
        dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[name]
        model, config = load_model(args.weights, dtype)
        for batch in [int(b) for b in args.batch.split(",")]:
            for context in [int(c) for c in args.context.split(",")]:
                r = time_step(model, config, batch, context, args.samples, args.warmup)
                r.update({"dtype": name, "batch": batch, "context": context,
                          "attention": getattr(model.config, "_attn_implementation", "unknown"),
                          "transformers": transformers.__version__, "torch": torch.__version__,
                          "device": torch.cuda.get_device_name()})
                results.append(r)
                print(f"HF GPT2LMHeadModel {name} batch {batch} context {context}: {r['wall_sync_ms']:.3f} ms/step "
                      f"(wall, synchronized), {r['events_ms']:.3f} ms (events)")
        del model
        torch.cuda.empty_cache()
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)


def ridge_records(path):
    with open(path) as f:
        data = json.load(f)
    return [r for r in data.get("records", []) if r.get("name") == "decode"]


def cmd_summarize(args):
    d = args.dir
    lines = []
    records = []
    for path in sorted(glob.glob(os.path.join(d, "ridge_*.json"))):
        records += ridge_records(path)
    hf = []
    if os.path.exists(os.path.join(d, "hf.json")):
        with open(os.path.join(d, "hf.json")) as f:
            hf = json.load(f)
    checks = []
    for path in sorted(glob.glob(os.path.join(d, "check_*.json"))):
        with open(path) as f:
            for r in json.load(f).get("records", []):
                if r.get("name") == "decode.check_logits":
                    checks.append((os.path.basename(path), r))

    lines.append("## Logits vs Hugging Face (same weights)")
    lines.append("| run | dtype | context | rel. L2 error | tolerance | result |")
    lines.append("|---|---|---|---|---|---|")
    for name, r in checks:
        lines.append(f"| {name} | {r['dtype']} | {r['params']['context']} | {r['extra']['relative_l2_error']:.2e} | "
                     f"{r['extra']['tolerance']:.0e} | {r['verification']} |")

    lines.append("")
    lines.append("## Batch 1, context 1024: ridge vs decode_ceiling and vs Hugging Face")
    lines.append("| engine | dtype | mode | ms/step | tokens/s | % of decode_ceiling | HF / ridge |")
    lines.append("|---|---|---|---|---|---|---|")
    order = {"graph_replay": 0, "spin_hold": 1, "cuda_events": 2}
    labels = {"graph_replay": "graph", "spin_hold": "eager (spin)", "cuda_events": "eager (events)"}
    for dtype in ("bf16", "fp32"):
        hf_row = next((h for h in hf if h["dtype"] == dtype and h["batch"] == 1 and h["context"] == 1024), None)
        rows, seen = [], set()
        for r in records:
            p = r["params"]
            if r["dtype"] != dtype or p["batch"] != 1 or p["context"] != 1024:
                continue
            key = (p["gemm"], p.get("pdl", True), r["method"])
            if key not in seen:
                seen.add(key)
                rows.append(r)
        rows.sort(key=lambda r: (order.get(r["method"], 9), r["params"]["gemm"] != "gemv", not r["params"].get("pdl", True)))
        for r in rows:
            e, p = r["extra"], r["params"]
            ratio = f"{hf_row['wall_sync_ms'] / r['median_ms']:.1f}x" if hf_row else "-"
            engine = f"ridge ({p['gemm']}{', PDL' if p.get('pdl', True) else ', no PDL'})"
            lines.append(f"| {engine} | {dtype} | {labels.get(r['method'], r['method'])} | {r['median_ms']:.4f} | "
                         f"{e['tokens_per_s']:.0f} | {100 * e['fraction_of_ceiling']:.1f}% | {ratio} |")
        if hf_row:
            lines.append(f"| HF transformers ({hf_row['attention']}) | {dtype} | eager PyTorch | "
                         f"{hf_row['wall_sync_ms']:.3f} | {1000 / hf_row['wall_sync_ms']:.0f} | - | 1.0x |")

    sweep = [r for r in records if r["method"] == "graph_replay" and r["dtype"] == "bf16"
             and r["params"]["context"] == 1024]
    seen = set()
    lines.append("")
    lines.append("## Batch sweep (bf16, context 1024, graph replay)")
    lines.append("| batch | backend | ms/step | tokens/s | FLOP/byte | % of decode_ceiling | TFLOP/s |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in sorted(sweep, key=lambda r: (r["params"]["batch"], r["params"]["gemm"])):
        key = (r["params"]["batch"], r["params"]["gemm"])
        if key in seen:
            continue
        seen.add(key)
        e = r["extra"]
        lines.append(f"| {r['params']['batch']} | {r['params']['gemm']} | {r['median_ms']:.4f} | "
                     f"{e['tokens_per_s']:.0f} | {e['intensity_flop_per_byte']:.1f} | "
                     f"{100 * e['fraction_of_ceiling']:.1f}% | {r['flops_per_s'] / 1e12:.2f} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write(text)
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time")
    t.add_argument("--weights", required=True)
    t.add_argument("--batch", default="1")
    t.add_argument("--context", default="1024")
    t.add_argument("--dtypes", default="fp32,bf16")
    t.add_argument("--samples", type=int, default=30)
    t.add_argument("--warmup", type=int, default=5)
    t.add_argument("--out", required=True)
    s = sub.add_parser("summarize")
    s.add_argument("dir")
    args = ap.parse_args()
    {"time": cmd_time, "summarize": cmd_summarize}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
