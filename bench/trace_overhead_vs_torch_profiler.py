#!/usr/bin/env python3
"""A tracer's overhead on a PyTorch training step, measured inside one process.

Separate processes of the same PyTorch program differ from each other by more than a tracer
costs (up to 45% on the H200 host), so comparing a traced run with an untraced one cannot show a
few percent. This script runs both kinds of step in the same process, interleaved: the measured
steps come in pairs, each pair one traced and one untraced block (--block steps each) in random
order, and every step is timed on its own (time.perf_counter_ns from the step's first call until
torch.cuda.synchronize() at its end has returned).

  --mode cuda-profiler   traced = between torch.cuda.profiler.start() and stop(), which are
                         cudaProfilerStart/Stop: run it under `ridge trace --profiler-range`
                         (CUPTI is on only there) or under nothing at all (the null A/B: both
                         kinds of step are then untraced, and the ratio shows the method's bias).
  --mode torch-profiler  traced = inside `with torch.profiler.profile(activities=[CPU, CUDA])`;
                         only the steps inside are timed, not the context's enter and exit.

The start/stop calls and the profiler context's enter/exit lie outside the timed steps. A few
traced blocks run before the measured ones (--warmup-traced) so one-time costs (CUPTI's first
start, Kineto's initialisation) stay out; they are traced too, so they count in the trace.

It prints one line and writes JSON (--out): the median traced and untraced step, their ratio, a
95% bootstrap interval of that ratio (pairs resampled, so slow drifts shared by a pair cancel),
the median of the per-pair ratios, every step's time and kind, and how many steps were traced in
all (measured and warm-up), which is what a trace of the run must hold.

The model and the step are bench/trace_vs_torch_profiler.py's (its SIZES, the same TinyGPT, the
same "step" NVTX range and record_function), so kernel counts compare with its results.
"""
import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_vs_torch_profiler import SIZES, build_training, count_steps  # noqa: E402


def build_step(size):
    """bench/trace_vs_torch_profiler.py's model and training step, timed on its own."""
    import torch

    cfg, enqueue = build_training(size)

    def step():
        """One training step, synchronized at its end; returns its host time in ns."""
        t0 = time.perf_counter_ns()
        with torch.profiler.record_function("step"):
            torch.cuda.nvtx.range_push("step")
            enqueue()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        return time.perf_counter_ns() - t0

    return cfg, step


class Tracing:
    """Runs a block of steps traced, the way --mode asks."""

    def __init__(self, mode):
        import torch
        self.torch = torch
        self.mode = mode

    def run(self, step, count):
        if self.mode == "cuda-profiler":
            self.torch.cuda.profiler.start()
            try:
                return [step() for _ in range(count)]
            finally:
                self.torch.cuda.profiler.stop()
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
            times = [step() for _ in range(count)]
        return times


def ratio_of_medians(traced, untraced):
    return statistics.median(traced) / statistics.median(untraced)


def bootstrap(pairs, rng, resamples):
    """95% interval of the ratio of medians, and of the median per-pair ratio, resampling pairs."""
    ratios, pair_ratios = [], []
    n = len(pairs)
    for _ in range(resamples):
        sample = [pairs[rng.randrange(n)] for _ in range(n)]
        traced = [t for p in sample for t in p["traced"]]
        untraced = [u for p in sample for u in p["untraced"]]
        ratios.append(ratio_of_medians(traced, untraced))
        pair_ratios.append(statistics.median(p["ratio"] for p in sample))

    def interval(values):
        values = sorted(values)
        return [values[int(0.025 * (len(values) - 1))], values[int(round(0.975 * (len(values) - 1)))]]

    return interval(ratios), interval(pair_ratios)


def torch_kernels_per_step(step):
    """Kernels in one step as torch.profiler sees them (bench/trace_vs_torch_profiler.py's count)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "step.json")
        prof.export_chrome_trace(path)
        counted = count_steps(path)
    return counted.get("kernels_per_step_median"), counted.get("gpu_busy_per_step_median_ns")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=SIZES, default="small")
    p.add_argument("--mode", choices=["cuda-profiler", "torch-profiler"], default="cuda-profiler")
    p.add_argument("--steps", type=int, default=200, help="measured steps, traced and untraced together")
    p.add_argument("--warmup", type=int, default=20, help="untraced steps before measuring")
    p.add_argument("--warmup-traced", type=int, default=3, help="traced blocks before measuring (not timed)")
    p.add_argument("--block", type=int, default=1, help="steps per traced or untraced block")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--resamples", type=int, default=2000)
    p.add_argument("--label", default="", help="stored with the results")
    p.add_argument("--out", default="")
    args = p.parse_args()
    if args.block < 1 or args.steps < 4 * args.block:
        p.error("--steps must hold at least two pairs of --block steps")

    import torch
    cfg, step = build_step(args.size)
    tracing = Tracing(args.mode)
    for _ in range(args.warmup):
        step()
    for _ in range(args.warmup_traced):
        tracing.run(step, args.block)
    for _ in range(2):
        step()  # settle after the last traced warm-up block

    rng = random.Random(args.seed)
    pairs, log = [], []
    for index in range(args.steps // (2 * args.block)):
        order = ["traced", "untraced"]
        rng.shuffle(order)
        pair = {"order": order}
        for kind in order:
            times = tracing.run(step, args.block) if kind == "traced" else [step() for _ in range(args.block)]
            pair[kind] = times
            log += [{"pair": index, "kind": kind, "ns": t} for t in times]
        pair["ratio"] = statistics.mean(pair["traced"]) / statistics.mean(pair["untraced"])
        pairs.append(pair)

    traced = [t for q in pairs for t in q["traced"]]
    untraced = [u for q in pairs for u in q["untraced"]]
    ci, pair_ci = bootstrap(pairs, random.Random(args.seed + 1), args.resamples)
    result = {
        "schema": "ridge.trace_ab/1",
        "label": args.label,
        "mode": args.mode,
        "size": args.size,
        "config": cfg,
        "under_injection": bool(os.environ.get("CUDA_INJECTION64_PATH")),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "steps": len(traced) + len(untraced),
        "block": args.block,
        "warmup": args.warmup,
        "warmup_traced_blocks": args.warmup_traced,
        "seed": args.seed,
        "traced_steps_measured": len(traced),
        # What a trace of this run holds: every traced step, warm-up blocks included.
        "traced_steps_total": len(traced) + args.warmup_traced * args.block,
        "traced_blocks_total": len(pairs) + args.warmup_traced,
        "median_traced_ms": statistics.median(traced) / 1e6,
        "median_untraced_ms": statistics.median(untraced) / 1e6,
        "ratio": ratio_of_medians(traced, untraced),
        "ratio_ci95": ci,
        "median_pair_ratio": statistics.median(q["ratio"] for q in pairs),
        "median_pair_ratio_ci95": pair_ci,
        "resamples": args.resamples,
        "steps_log": log,
    }
    if args.mode == "torch-profiler":
        kernels, busy = torch_kernels_per_step(step)
        result["torch_kernels_per_step"] = kernels
        result["torch_gpu_busy_per_step_ns"] = busy
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    print(f"trace_ab: {args.label or args.mode} {args.size}: traced {result['median_traced_ms']:.3f} ms, "
          f"untraced {result['median_untraced_ms']:.3f} ms, ratio {result['ratio']:.4f} "
          f"[{ci[0]:.4f}, {ci[1]:.4f}] over {len(pairs)} pairs of {args.block}")


if __name__ == "__main__":
    sys.exit(main())
