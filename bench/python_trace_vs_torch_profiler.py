#!/usr/bin/env python3
"""ridge.trace against torch.profiler on a small PyTorch transformer decode loop.

Side by side, with one counting rule for both traces (bench/trace_vs_torch_profiler.py's
count_steps: a kernel belongs to a step when its launch call began inside the "step" range; GPU
busy = the union of its device-side kernel intervals, so nested or overlapping events are never
added twice):
  - kernels per step (must be equal) and GPU busy time per step (within 1%);
  - overhead: the same loop untraced and traced, in one process, in interleaved rounds. A round
    runs the traced arms in a random order with an untraced block before and after each (U A U B
    U ...); a block's figure is its median step, and a traced block's ratio is against the mean of
    the two untraced blocks beside it, so a drift of the machine's speed within a round cancels.
    Per arm: the median step over rounds, and the median of the per-round ratios with a 95%
    bootstrap interval.

Both tracers use CUPTI, which serves one subscriber at a time, and PyTorch's profiler (Kineto)
need not release it when a profile ends (ridge.trace then refuses to start); so the ridge arms and
the torch.profiler arm each run in their own child process, each against its own untraced arm. The
ridge process also runs ridge.trace with the kernel launch calls recorded (the default before queue
times replaced them), with CUPTI's synchronization records on, with every API call recorded and with
none, which says what ridge's overhead is made of.

The decode loop: examples/python/decode_step.py (the Python example's) at a smaller size, a 4-layer
GPT-style decoder (d=512, 8 heads, tied embeddings) generating one token per step with a
preallocated KV cache of fixed length (positions masked), so every step launches the same kernels
and nothing waits on the host inside a step. Each step is marked with an NVTX range (ridge.nvtx) in
the ridge process and with record_function in the torch process, in every arm alike.

On the GPU machine (Python 3.12, /opt/torch/.venv):
  cd <repo> && pip install --no-build-isolation . && python3 bench/python_trace_vs_torch_profiler.py --out DIR
It prints the table and writes DIR/trace_vs_torch_profiler.{md,json}.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from trace_vs_torch_profiler import count_steps  # noqa: E402

# The decode step is examples/python/decode_step.py, the one the Python example traces.
EXAMPLES = os.path.join(HERE, "..", "examples", "python")

CONFIG = dict(d=512, layers=4, heads=8, vocab=4096, cache=256)


def block_runner(torch, step, mark):
    """Runs `count` steps, each inside `mark("step")`, and returns the median host time of one step
    in ns. The loop is host-bound (the GPU finishes each step long before the host has queued the
    next), so a step's host time is its time; the median keeps a stray pause of the interpreter or
    the machine (one in a block of 50 moves a block's mean by percents) out of the comparison."""
    def run(count):
        torch.cuda.synchronize()
        times = []
        for _ in range(count):
            t0 = time.perf_counter_ns()
            with mark("step"):
                step()
            times.append(time.perf_counter_ns() - t0)
        torch.cuda.synchronize()
        return statistics.median(times)
    return run


def paired_ratios(rounds, arm):
    """Per round, arm / the untraced blocks around it. The step time here jumps between ~1.4 and
    ~2.7 ms for seconds at a time, so only blocks run right beside each other are compared. Runs
    saved before the bracketing have one untraced block per round."""
    return [r["ratio"][arm] if "ratio" in r else r[arm] / r["untraced"] for r in rounds]


def bracketed_round(arms, order):
    """One round: an untraced block, then each traced arm followed by another untraced block.
    Returns each arm's median step (the untraced ones' median) and each traced arm's ratio to the
    mean of the untraced blocks before and after it."""
    untraced = [arms["untraced"]()]
    steps, ratio = {}, {}
    for name in order:
        steps[name] = arms[name]()
        untraced.append(arms["untraced"]())
        ratio[name] = steps[name] / ((untraced[-2] + untraced[-1]) / 2)
    steps["untraced"] = statistics.median(untraced)
    return dict(steps, ratio=ratio)


def bootstrap_median(values, resamples, rng):
    """95% interval of the median of values, resampling them."""
    medians = sorted(statistics.median(rng.choice(values) for _ in values) for _ in range(resamples))
    return [medians[int(0.025 * (resamples - 1))], medians[int(round(0.975 * (resamples - 1)))]]


def summarize_rounds(result, seed):
    """Per arm: the median step over rounds, and against untraced the median of the per-round
    ratios with its 95% bootstrap interval (and, for reference, the ratio of the medians)."""
    rounds = result["rounds"]
    arms = [name for name in rounds[0] if name != "ratio"]
    traced = [name for name in arms if name != "untraced"]
    result["median_step_ns"] = {name: statistics.median(r[name] for r in rounds) for name in arms}
    result["ratio"] = {name: statistics.median(paired_ratios(rounds, name)) for name in traced}
    result["ratio_ci95"] = {name: bootstrap_median(paired_ratios(rounds, name), 2000, random.Random(seed + 1))
                            for name in traced}
    result["ratio_of_medians"] = {name: result["median_step_ns"][name] / result["median_step_ns"]["untraced"]
                                  for name in traced}


def child(tool, args):
    """One process: the correctness trace, then the interleaved A/B of its arms. Prints JSON."""
    import torch

    sys.path.insert(0, EXAMPLES)
    from decode_step import decoder_step

    step = decoder_step(**CONFIG)
    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    tmp = tempfile.mkdtemp(prefix="trace-vs-profiler-")
    path = os.path.join(tmp, f"{tool}.json")
    result = {"tool": tool, "torch": torch.__version__, "device": torch.cuda.get_device_name()}
    if tool == "ridge":
        import ridge
        mark = ridge.nvtx
        run = block_runner(torch, step, mark)
        with ridge.trace(path, step_range="step") as t:
            run(args.trace_steps)
        a = t.analysis
        result["library"] = {"kernels_per_step": a.kernels_per_step,
                             "gpu_busy_ns_per_step": [s["gpu_busy_ns"] for s in a.steps],
                             "dropped_records": t.dropped_records, "kernel_count": a.kernel_count}

        def traced(**options):
            def run_traced(count):
                with ridge.trace(None, **options):
                    return run(count)
            return run_traced
        arms = {"untraced": run, "ridge": traced(), "ridge_launch_calls": traced(launch_calls=True),
                "ridge_sync_records": traced(sync_records=True),
                "ridge_all_api_calls": traced(all_api_calls=True), "ridge_no_api_calls": traced(api_calls="none")}
    else:
        from torch.profiler import ProfilerActivity, profile, record_function
        mark = record_function
        run = block_runner(torch, step, mark)
        activities = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
        with profile(activities=activities) as prof:
            run(args.trace_steps)
        prof.export_chrome_trace(path)

        def run_profiled(count):
            with profile(activities=activities):
                return run(count)
        arms = {"untraced": run, "torch_profiler": run_profiled}
    counted = count_steps(path)
    result["counted"] = {"kernels_per_step": [s["kernels"] for s in counted["steps"]],
                         "gpu_busy_ns_per_step": [s["gpu_busy_ns"] for s in counted["steps"]]}

    blocks = {name: (lambda arm=arm: arm(args.block)) for name, arm in arms.items()}
    for block in blocks.values():  # one block each first: one-time costs (CUPTI, Kineto) stay out
        block()
    rng = random.Random(args.seed)
    rounds = []
    for _ in range(args.rounds):
        order = [name for name in arms if name != "untraced"]
        rng.shuffle(order)
        rounds.append(bracketed_round(blocks, order))
    result["rounds"] = rounds
    summarize_rounds(result, args.seed)
    print(json.dumps(result))


def median(values):
    return statistics.median(values) if values else float("nan")


def table(r, t, args):
    rk, tk = median(r["counted"]["kernels_per_step"]), median(t["counted"]["kernels_per_step"])
    rb = median(r["counted"]["gpu_busy_ns_per_step"]) / 1e3
    tb = median(t["counted"]["gpu_busy_ns_per_step"]) / 1e3
    lib_k = median(r["library"]["kernels_per_step"])
    lib_b = median(r["library"]["gpu_busy_ns_per_step"]) / 1e3
    busy_diff = rb / tb - 1 if tb else float("nan")

    def ratio(res, arm):
        lo, hi = res["ratio_ci95"][arm]
        return f"{res['ratio'][arm]:.3f}x [{lo:.3f}, {hi:.3f}]"

    def ms(res, arm):
        return f"{res['median_step_ns'][arm] / 1e6:.3f}"

    lines = [
        f"Decode loop {CONFIG}; {args.trace_steps} traced steps counted; A/B: {args.rounds} rounds of "
        f"{args.block} steps per block, the traced arms in random order, each between two untraced blocks.",
        "",
        "| | ridge.trace | torch.profiler | check |",
        "|---|---:|---:|---|",
        f"| kernels per step (median; counted from each tool's trace) | {rk:g} | {tk:g} | "
        f"{'equal' if rk == tk else 'DIFFERENT'} |",
        f"| GPU busy per step, us (median; union of kernel intervals) | {rb:.2f} | {tb:.2f} | "
        f"{busy_diff * 100:+.2f}% ({'within' if abs(busy_diff) <= 0.01 else 'OUTSIDE'} 1%) |",
        f"| the same from ridge's own analysis (ridge.trace's `t.analysis`) | {lib_k:g} / {lib_b:.2f} | | |",
        f"| records dropped | {r['library']['dropped_records']} | | |",
        f"| step, untraced, ms (median, its own process) | {ms(r, 'untraced')} | {ms(t, 'untraced')} | |",
        f"| step, traced, ms (median) | {ms(r, 'ridge')} | {ms(t, 'torch_profiler')} | |",
        f"| traced / untraced beside it (median of per-round ratios, 95% interval) | {ratio(r, 'ridge')} | {ratio(t, 'torch_profiler')} | "
        f"target <= 1.05x: {'met' if r['ratio']['ridge'] <= 1.05 else 'NOT met'} |",
        "",
        "What ridge.trace's overhead is made of (same process as ridge's row above):",
        "",
        "| ridge.trace setting | step, ms | traced / untraced |",
        "|---|---:|---:|",
    ]
    breakdown = [
        ("ridge", "default: kernels with their launches' queue times, copies/memsets, NVTX ranges, selected API calls "
                  "other than kernel launches (callbacks on those calls alone)"),
        ("ridge_launch_calls", "+ the kernel launch calls as records (`launch_calls=True`: a callback on every launch)"),
        ("ridge_sync_records", "+ CUPTI synchronization records (`sync_records=True`)"),
        ("ridge_all_api_calls", "+ every API call (`all_api_calls=True`: CUPTI's whole API kinds, every call hooked)"),
        ("ridge_no_api_calls", "kernels, copies and NVTX alone (`api_calls=\"none\"`: no launch calls)"),
    ]
    lines += [f"| {label} | {ms(r, arm)} | {ratio(r, arm)} |" for arm, label in breakdown if arm in r["ratio"]]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="", help="folder for trace_vs_torch_profiler.{md,json}")
    p.add_argument("--rounds", type=int, default=30, help="A/B rounds (each traced arm once, between two untraced blocks)")
    p.add_argument("--block", type=int, default=50, help="steps per block")
    p.add_argument("--trace-steps", type=int, default=50, help="steps in the trace that is counted")
    p.add_argument("--warmup", type=int, default=50, help="untraced steps before anything is measured")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--reanalyze", metavar="JSON",
                   help="no run: recompute the statistics and the table from a saved trace_vs_torch_profiler.json")
    p.add_argument("--child", choices=["ridge", "torch"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.reanalyze:
        with open(args.reanalyze) as f:
            saved = json.load(f)
        for tool in ("ridge", "torch"):
            summarize_rounds(saved[tool], saved["args"]["seed"])
        return report({tool: saved[tool] for tool in ("ridge", "torch")}, argparse.Namespace(**saved["args"]), args.out)
    if args.rounds < 3 or args.block < 1 or args.trace_steps < 1:
        p.error("--rounds must be >= 3, --block and --trace-steps >= 1")
    if args.child:
        return child(args.child, args)
    rows = {}
    for tool in ("ridge", "torch"):
        command = [sys.executable, os.path.abspath(__file__), "--child", tool] + [
            f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k not in ("out", "child", "reanalyze")]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stdout + done.stderr)
            sys.exit(f"the {tool} process failed (exit {done.returncode})")
        rows[tool] = json.loads(done.stdout.strip().splitlines()[-1])
    return report(rows, args, args.out)


def report(rows, args, out):
    text = table(rows["ridge"], rows["torch"], args)
    print(text)
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "trace_vs_torch_profiler.md"), "w") as f:
            f.write(text + "\n")
        run_args = {k: v for k, v in vars(args).items() if k not in ("out", "reanalyze")}
        with open(os.path.join(out, "trace_vs_torch_profiler.json"), "w") as f:
            json.dump(dict(rows, config=CONFIG, args=run_args), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
