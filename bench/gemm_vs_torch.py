"""The PyTorch side of bench/gemm_vs_torch.sh: `a @ b` timed the three ways `ridge timing` uses,
in the same order and with the same counts (naive, synchronized wall clock, then per-sample CUDA
events; warmup=5, samples=20), so both programs give the GPU the same load history (clocks and power caps react to
it). Usage: python3 bench/gemm_vs_torch.py N [N ...] [--dtype bf16] -> one JSON line per size.
"""
import json
import statistics
import sys
import time

import torch


def measure_naive(function, samples=20, warmup=5):
    for _ in range(warmup):
        function()
    times = []
    for _ in range(samples):
        torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    torch.cuda.synchronize()
    return statistics.median(times)


def measure_wall(function, samples=20, warmup=5):
    for _ in range(warmup):
        function()
    times = []
    for _ in range(samples):
        torch.cuda.synchronize()
        start = time.perf_counter()
        function()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure_cuda(function, warmup=5, samples=20, repeats=1):
    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            function()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / repeats)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times), "samples": samples}


def main():
    args = sys.argv[1:]
    dtype = torch.bfloat16
    repeats = 1
    if "--repeats" in args:
        i = args.index("--repeats")
        repeats = int(args[i + 1])
        del args[i : i + 2]
    if "--dtype" in args:
        i = args.index("--dtype")
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args[i + 1]]
        del args[i : i + 2]
    for n in map(int, args):
        a = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1  # random, never zeros
        b = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1
        naive = measure_naive(lambda: a @ b)
        wall = measure_wall(lambda: a @ b)
        r = measure_cuda(lambda: a @ b, repeats=repeats)
        r.update(n=n, dtype=str(dtype), repeats=repeats, naive_ms=naive, wall_sync_ms=wall,
                 tflops=2 * n**3 / (r["median_ms"] * 1e-3) / 1e12)
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
