#!/usr/bin/env python3
"""The PyTorch side of bench/trace_vs_torch_profiler.sh.

  run     An ordinary PyTorch training loop (a small GPT-like transformer), unmodified by any
          tracer: each iteration is marked the way real code marks it, with an NVTX range and a
          record_function named "step", and the measured steps sit between
          torch.cuda.profiler.start()/stop() (cudaProfilerStart/Stop, as `nsys
          --capture-range=cudaProfilerApi` expects). It synchronizes at the end of each step and
          records the step's wall time. --torch-profiler wraps the measured steps in
          torch.profiler.profile and exports its Chrome trace.
  count   Kernels per step and GPU busy time per step from a Chrome trace (PyTorch's or ridge's),
          with one definition for both: a kernel belongs to a step when its launch call (matched
          by correlation id) began inside the "step" range; busy = union of its kernels' intervals.
  report  Reads everything the shell script produced and prints the comparison table.
"""
import argparse
import json
import os
import statistics
import sys
import time

SIZES = {
    # launch-bound: tiny kernels, the host's launch rate sets the step time (worst case for a tracer)
    "small": dict(d=256, layers=2, heads=4, batch=4, seq=64, vocab=1024),
    # GPU-bound: enough work per kernel that the host runs ahead of the GPU
    # NOT GPU-bound on the H200 after all: the host needs about as long to enqueue a step (~17 ms)
    # as the GPU needs to run it (~16 ms busy), so any host-side tracer cost lengthens the step
    "medium": dict(d=1024, layers=6, heads=16, batch=16, seq=512, vocab=8192),
    # GPU-bound: H200, 2026-11-29: ~31.6 ms step, 29.6 ms of it GPU busy, host enqueue ~13 ms, 400 kernels
    "large": dict(d=2048, layers=4, heads=16, batch=8, seq=1024, vocab=8192),
}


def build_training(size):
    """A small GPT-like transformer of SIZES[size], its AdamW optimizer and one fixed batch, on the
    GPU, seeded: returns (cfg, enqueue) where enqueue() puts one training step on the stream
    (bf16 autocast forward, backward, optimizer step) without waiting for it."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    cfg = SIZES[size]
    torch.manual_seed(0)
    dev = torch.device("cuda")

    class TinyGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(cfg["vocab"], cfg["d"])
            self.pos = nn.Parameter(torch.randn(cfg["seq"], cfg["d"]) * 0.02)
            layer = nn.TransformerEncoderLayer(cfg["d"], cfg["heads"], 4 * cfg["d"], dropout=0.0,
                                               batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, cfg["layers"], enable_nested_tensor=False)
            self.norm = nn.LayerNorm(cfg["d"])
            self.head = nn.Linear(cfg["d"], cfg["vocab"], bias=False)

        def forward(self, tokens):
            x = self.embed(tokens) + self.pos
            mask = nn.Transformer.generate_square_subsequent_mask(tokens.shape[1], device=tokens.device)
            x = self.blocks(x, mask=mask, is_causal=True)
            return self.head(self.norm(x))

    model = TinyGPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]), device=dev)
    targets = torch.randint(0, cfg["vocab"], (cfg["batch"], cfg["seq"]), device=dev)

    def enqueue():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(tokens)
            loss = F.cross_entropy(logits.view(-1, cfg["vocab"]).float(), targets.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return cfg, enqueue


def cmd_run(args):
    import torch

    cfg, enqueue_step = build_training(args.size)

    def step():
        """One training step; returns the host time (ms) spent enqueueing it, before the sync."""
        with torch.profiler.record_function("step"):
            t0 = time.perf_counter()
            torch.cuda.nvtx.range_push("step")
            enqueue_step()
            enqueue_ms = (time.perf_counter() - t0) * 1e3
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            return enqueue_ms

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()

    hidden_syncs = None
    if args.sync_debug:
        # Synchronizing calls inside one step other than the final torch.cuda.synchronize().
        import warnings
        torch.cuda.set_sync_debug_mode("warn")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            step()
        torch.cuda.set_sync_debug_mode("default")
        hidden_syncs = [str(w.message)[:200] for w in caught if "synchroniz" in str(w.message).lower()]
        print(f"trace_pytorch: {len(hidden_syncs)} synchronizing calls inside a step", file=sys.stderr)

    times, enqueue = [], []

    def measured():
        torch.cuda.profiler.start()
        for _ in range(args.steps):
            t0 = time.perf_counter()
            enqueue.append(step())
            times.append((time.perf_counter() - t0) * 1e3)
        torch.cuda.profiler.stop()

    if args.torch_trace:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            measured()
        prof.export_chrome_trace(args.torch_trace)
    else:
        measured()
    result = {"size": args.size, "config": cfg, "mode": args.mode, "steps": args.steps, "warmup": args.warmup,
              "step_ms": times, "median_step_ms": statistics.median(times), "torch": torch.__version__,
              "enqueue_ms": enqueue, "median_enqueue_ms": statistics.median(enqueue), "hidden_syncs": hidden_syncs}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    print(f"trace_pytorch: {args.size} {args.mode}: median step {result['median_step_ms']:.3f} ms "
          f"(host enqueue {result['median_enqueue_ms']:.3f} ms) over {args.steps} steps")


def union_ns(intervals):
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is not None and s <= cur_e:
            cur_e = max(cur_e, e)
            continue
        if cur_e is not None:
            total += cur_e - cur_s
        cur_s, cur_e = s, e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def count_steps(path, step_name="step"):
    """Kernels and GPU busy time per step from any Chrome trace with PyTorch's categories."""
    with open(path) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    launches, kernels, steps = {}, [], []
    to_ns = lambda us: int(round(float(us) * 1000))
    for e in events:
        if e.get("ph") != "X":
            continue
        cat, args = e.get("cat"), e.get("args") or {}
        if cat in ("cuda_runtime", "cuda_driver") and "correlation" in args:
            launches.setdefault(args["correlation"], to_ns(e["ts"]))
        elif cat == "kernel":
            kernels.append((args.get("correlation"), to_ns(e["ts"]), to_ns(e["ts"]) + to_ns(e.get("dur", 0))))
        elif cat == "user_annotation" and e.get("name") == step_name:
            steps.append((to_ns(e["ts"]), to_ns(e["ts"]) + to_ns(e.get("dur", 0))))
    steps.sort()
    per_step = []
    for s, e in steps:
        # Launched inside the step; a kernel whose launch call is missing counts where it ran.
        inside = [(ks, ke) for corr, ks, ke in kernels if s <= launches.get(corr, ks) <= e]
        per_step.append({"kernels": len(inside), "gpu_busy_ns": union_ns(inside), "step_ns": e - s})
    out = {
        "trace": path,
        "kernels": len(kernels),
        "gpu_busy_ns": union_ns([(ks, ke) for _, ks, ke in kernels]),
        "steps": per_step,
    }
    if per_step:
        out["kernels_per_step_median"] = statistics.median(p["kernels"] for p in per_step)
        out["kernels_per_step_min"] = min(p["kernels"] for p in per_step)
        out["kernels_per_step_max"] = max(p["kernels"] for p in per_step)
        out["gpu_busy_per_step_median_ns"] = statistics.median(p["gpu_busy_ns"] for p in per_step)
    return out


def cmd_count(args):
    result = count_steps(args.trace)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{args.trace}: {len(result['steps'])} steps, kernels/step median {result.get('kernels_per_step_median')}, "
          f"busy/step median {result.get('gpu_busy_per_step_median_ns', 0) / 1e6:.3f} ms")


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def cmd_report(args):
    d = args.dir
    rows, lines, summary = [], [], {"sizes": {}}
    for size in SIZES:
        torch_count = load(os.path.join(d, f"torch_{size}.count.json"))
        ridge_count = load(os.path.join(d, f"ridge_{size}.count.json"))
        ridge_summary = load(os.path.join(d, f"ridge_{size}.summary.json"))
        modes = {}
        for mode in ("plain", "ridge", "torch"):
            samples = []
            for rep in range(args.repeats):
                r = load(os.path.join(d, f"{mode}_{size}.{rep}.steps.json"))
                if r:
                    samples += r["step_ms"]
            if samples:
                modes[mode] = statistics.median(samples)
        s = {"step_ms_median": modes}
        if torch_count and ridge_count:
            s["torch_kernels_per_step"] = torch_count.get("kernels_per_step_median")
            s["ridge_kernels_per_step"] = ridge_count.get("kernels_per_step_median")
            tb, rb = torch_count.get("gpu_busy_per_step_median_ns", 0), ridge_count.get("gpu_busy_per_step_median_ns", 0)
            s["torch_busy_per_step_ms"], s["ridge_busy_per_step_ms"] = tb / 1e6, rb / 1e6
            s["busy_difference"] = abs(rb - tb) / tb if tb else None
        if ridge_summary:
            s["ridge_dropped_records"] = ridge_summary.get("dropped_records")
            s["ridge_kernels_per_step_from_summary"] = ridge_summary.get("kernels_per_step_median")
        if "plain" in modes:
            for mode in ("ridge", "torch"):
                if mode in modes:
                    s[f"{mode}_overhead"] = modes[mode] / modes["plain"]
        summary["sizes"][size] = s
    many = load(os.path.join(d, "many.summary.json"))
    timing = load(os.path.join(d, "many.timing.json"))
    if many and timing:
        summary["many_kernels"] = {
            "kernels_requested": timing["kernels"], "kernels_traced": many.get("kernel_count"),
            "dropped_records": many.get("dropped_records"), "untraced_s": timing["untraced_s"],
            "traced_s": timing["traced_s"], "extra_s": timing["traced_s"] - timing["untraced_s"],
            "write_seconds": many.get("write_seconds"), "collect_seconds": many.get("collect_seconds"),
        }
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)

    def fmt(v, spec, suffix=""):
        return format(v, spec) + suffix if isinstance(v, (int, float)) else "-"

    out = ["| size | kernels/step torch | kernels/step ridge | busy/step torch ms | busy/step ridge ms | busy diff |"
           " step ms plain | ridge overhead | torch.profiler overhead | dropped |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for size, s in summary["sizes"].items():
        out.append(f"| {size} | {fmt(s.get('torch_kernels_per_step'), 'g')} | {fmt(s.get('ridge_kernels_per_step'), 'g')} | "
                   f"{fmt(s.get('torch_busy_per_step_ms'), '.3f')} | {fmt(s.get('ridge_busy_per_step_ms'), '.3f')} | "
                   f"{fmt(100 * s['busy_difference'] if s.get('busy_difference') is not None else None, '.2f', '%')} | "
                   f"{fmt(s['step_ms_median'].get('plain'), '.3f')} | {fmt(s.get('ridge_overhead'), '.3f', 'x')} | "
                   f"{fmt(s.get('torch_overhead'), '.3f', 'x')} | {fmt(s.get('ridge_dropped_records'), 'd')} |")
    if "many_kernels" in summary:
        m = summary["many_kernels"]
        out += ["", "| kernels | traced | dropped | untraced s | traced s | extra s (trace+write) | write s |",
                "|---|---|---|---|---|---|---|",
                f"| {m['kernels_requested']} | {m['kernels_traced']} | {m['dropped_records']} | {m['untraced_s']:.2f} | "
                f"{m['traced_s']:.2f} | {m['extra_s']:.2f} | {fmt(m['write_seconds'], '.2f')} |"]
    text = "\n".join(out) + "\n"
    with open(os.path.join(d, "summary.md"), "w") as f:
        f.write(text)
    print(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--size", choices=SIZES, default="small")
    r.add_argument("--steps", type=int, default=30)
    r.add_argument("--warmup", type=int, default=10)
    r.add_argument("--mode", default="plain", help="label stored with the results")
    r.add_argument("--torch-trace", default="", help="profile the measured steps with torch.profiler, export here")
    r.add_argument("--out", default="")
    r.add_argument("--sync-debug", action="store_true", help="count synchronizing calls in one step (before timing)")
    c = sub.add_parser("count")
    c.add_argument("trace")
    c.add_argument("--out", required=True)
    rep = sub.add_parser("report")
    rep.add_argument("dir")
    rep.add_argument("--repeats", type=int, default=2)
    args = p.parse_args()
    {"run": cmd_run, "count": cmd_count, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
