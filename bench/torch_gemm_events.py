"""a @ b in PyTorch timed the seed's way (measure_cuda: warmup=5, samples=20, per-sample events).

Usage: python3 bench/torch_gemm_events.py N [N ...] [--dtype bf16] -> one JSON line per size.
"""
import json
import statistics
import sys

import torch


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
    if "--dtype" in args:
        i = args.index("--dtype")
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args[i + 1]]
        del args[i : i + 2]
    for n in map(int, args):
        a = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1  # random, never zeros
        b = torch.rand(n, n, device="cuda", dtype=dtype) * 2 - 1
        r = measure_cuda(lambda: a @ b)
        r.update(n=n, dtype=str(dtype), tflops=2 * n**3 / (r["median_ms"] * 1e-3) / 1e12)
        print(json.dumps(r))


if __name__ == "__main__":
    main()
