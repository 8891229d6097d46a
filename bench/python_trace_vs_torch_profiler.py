"""ridge.trace against torch.profiler on a small PyTorch transformer decode loop, each in its own
process (both use CUPTI): kernels per step, GPU busy time per step, and each tracer's overhead
against the same loop untraced, measured in the same process, interleaved.

Run on the GPU machine with the package importable:
  PYTHONPATH=build/python-site python3 bench/python_trace_vs_torch_profiler.py --out DIR
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

STEPS = 50


def build():
    import torch
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=4).cuda().eval()
    x = torch.randn(1, 64, 512, device="cuda")
    return torch, model, x


def loop(torch, model, x, steps, mark=None):
    with torch.no_grad():
        for _ in range(steps):
            if mark:
                with mark("step"):
                    model(x)
            else:
                model(x)
    torch.cuda.synchronize()


def wall(torch, fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_tool(tool):
    torch, model, x = build()
    loop(torch, model, x, 10)  # warm up (cuBLAS handles, allocator)
    if tool == "ridge":
        import ridge
        with ridge.trace(None, step_range="step") as t:
            loop(torch, model, x, STEPS, ridge.nvtx)
        a = t.analysis
        counts = a.kernels_per_step
        busy = [s["gpu_busy_ns"] / 1e3 for s in a.steps]
        result = {"kernels_per_step": statistics.median(counts), "steps": len(counts),
                  "busy_us_per_step": statistics.median(busy), "dropped": t.dropped_records}
        traced = lambda: ridge_traced(ridge, torch, model, x)  # noqa: E731
    else:
        from torch.profiler import ProfilerActivity, profile, record_function
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            loop(torch, model, x, STEPS, record_function)
        kernels = [e for e in prof.events() if e.device_type.name == "CUDA" and "Memcpy" not in e.name
                   and "Memset" not in e.name]
        result = {"kernels_per_step": len(kernels) / STEPS, "steps": STEPS,
                  "busy_us_per_step": sum(e.device_time for e in kernels) / STEPS}
        traced = lambda: torch_traced(profile, ProfilerActivity, record_function, torch, model, x)  # noqa: E731
    plain = lambda: loop(torch, model, x, STEPS)  # noqa: E731
    ratios = []
    for _ in range(5):  # interleaved blocks: untraced, traced
        base = wall(torch, plain)
        ratios.append(wall(torch, traced) / base)
    result["overhead"] = statistics.median(ratios)
    print(json.dumps(result))


def ridge_traced(ridge, torch, model, x):
    with ridge.trace(None, step_range="step"):
        loop(torch, model, x, STEPS, ridge.nvtx)


def torch_traced(profile, activities, record_function, torch, model, x):
    with profile(activities=[activities.CPU, activities.CUDA]):
        loop(torch, model, x, STEPS, record_function)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", choices=["ridge", "torch"])
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.tool:
        return run_tool(args.tool)
    rows = {}
    for tool in ("ridge", "torch"):
        done = subprocess.run([sys.executable, __file__, "--tool", tool], capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            sys.exit(f"{tool} run failed")
        rows[tool] = json.loads(done.stdout.strip().splitlines()[-1])
    r, t = rows["ridge"], rows["torch"]
    table = "\n".join([
        "| | ridge.trace | torch.profiler |", "|---|---|---|",
        f"| kernels per step (median) | {r['kernels_per_step']:g} | {t['kernels_per_step']:g} |",
        f"| GPU busy per step, us | {r['busy_us_per_step']:.1f} | {t['busy_us_per_step']:.1f} |",
        f"| traced / untraced wall time, {STEPS} steps (median of 5) | {r['overhead']:.3f} | {t['overhead']:.3f} |",
        f"| records dropped | {r['dropped']} | |"])
    print(table)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "trace_vs_torch_profiler.md"), "w") as f:
            f.write(table + "\n")
        with open(os.path.join(args.out, "trace_vs_torch_profiler.json"), "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
