#!/usr/bin/env python3
"""Four first measurements of a GPU from Python with ridge, each kernel's output checked first.

1. An FP32 4096x4096 matmul timed three ways: without synchronizing (it times the queueing),
   synchronized wall clock, and CUDA events.
2. x + y in FP32 from 2^10 to 2^28 elements: GB/s at every size, the sizes where it reaches 70%
   and 90% of the device's memory bandwidth (below them, launch overhead dominates), and the share
   of the bandwidth reached at the top.
3. A BF16 square matmul from 256 to 8192: TFLOP/s at every size, the size that reaches 70% of the
   BF16 peak, and each size placed on the device's roofline.
4. A GPT-2-small-shaped decode step (random weights, KV cache) traced: kernels per step, and the
   share of each step's GPU time spent idle between kernels (launch gaps).

    python3 examples/python/first_measurements.py [--out runs/first-measurements] [--quick]

It writes results.json (ridge's schema: `ridge compare` reads it), bandwidth.svg, matmul.svg,
roofline.svg and trace.json (open it in Perfetto) into --out, and prints what it found.
"""
import argparse
import json
import os

import torch

import ridge
from decode_step import decoder_step  # beside this file


def three_ways(n: int = 4096) -> dict:
    x = torch.randn(n, n, device="cuda")
    rows = slice(0, 64)  # checked on a slice: the reference runs in float64
    reference = x[rows].double() @ x.double()
    torch.testing.assert_close((x @ x)[rows].double(), reference, rtol=1e-3, atol=1e-2)
    flops = 2 * n**3
    out = {}
    for name, timer in (("no synchronization (wrong)", ridge.measure_naive), ("synchronized wall clock", ridge.measure_wall),
                        ("CUDA events", ridge.measure_cuda)):
        m = timer(lambda: x @ x)
        out[name] = m
        print(f"  {name:28s} {float(m):9.4f} ms  {m.rate(flops=flops).tflops:8.1f} TFLOP/s   ({m.meaning})")
    return out


def add_factory(n: int):
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    torch.add(x, y, out=out)
    head = min(n, 4096)
    assert torch.equal(out[:head].cpu(), x[:head].cpu() + y[:head].cpu()), "x + y is wrong"
    return lambda: torch.add(x, y, out=out)


def matmul_factory(n: int):
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    rows = slice(0, 32)
    torch.testing.assert_close((a @ b)[rows].float(), a[rows].float() @ b.float(), rtol=2e-2, atol=2e-2 * n**0.5)
    return lambda: a @ b


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="runs/first-measurements")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and steps (a smoke test)")
    args = parser.parse_args()
    if ridge.no_gpu_reason():  # before anything is written: no empty folder is left behind
        raise SystemExit(f"first_measurements.py times work on a CUDA GPU, and none is usable here: "
                         f"{ridge.no_gpu_reason()}. `ridge roofline --device h100-sxm` and the models work without one.")
    os.makedirs(args.out, exist_ok=True)
    ceilings = ridge.ceilings(0)  # measured on this GPU, cached as `ridge roofline` caches them
    print(f"{torch.cuda.get_device_name()}: {ceilings!r}")
    results = ridge.Results()

    print("\n1. FP32 4096^2 matmul, three ways:")
    shown = {"mode": "informational", "reason": "shows what each timing method measures"}
    for name, m in three_ways().items():
        results.add(m, "matmul fp32 three ways", dtype="fp32", params={"n": 4096, "timer": name}, flops=2 * 4096**3,
                    gate=shown)

    print("\n2. x + y, FP32:")
    sizes = [2**k for k in range(10, 29, 6 if args.quick else 2)]
    bandwidth = ridge.sweep(add_factory, sizes, name="x + y", bytes=lambda n: 12 * n, ceilings=ceilings,
                            l2_bytes=torch.cuda.get_device_properties(0).L2_cache_size)
    for r, warnings in zip(bandwidth.records, bandwidth.warnings):
        print(f"  2^{r['params']['size'].bit_length() - 1:<3} {r['bytes_per_s'] / 1e9:8.1f} GB/s"
              + (f"   ({'; '.join(warnings)})" if warnings else ""))
    top = bandwidth.records[-1]["bytes_per_s"] / ceilings.memory_bytes_per_s
    print(f"  {bandwidth!r}; the largest size reaches {top:.0%} of the measured bandwidth")
    bandwidth.plot.save(os.path.join(args.out, "bandwidth.svg"))

    print("\n3. BF16 matmul:")
    sizes = [256, 1024, 4096] if args.quick else [256, 512, 1024, 2048, 4096, 8192]
    matmul = ridge.sweep(matmul_factory, sizes, name="matmul bf16", flops=lambda n: 2 * n**3, dtype="bf16",
                         ceilings=ceilings, method="spin")
    placed = []
    for r in matmul.records:
        n = r["params"]["size"]
        p = ridge.place_matmul(n, n, n, "bf16", device=ceilings)
        placed.append((f"{n}^3", "bf16", p.intensity_flop_per_byte, r["flops_per_s"]))
        print(f"  {n:5d}^3 {r['flops_per_s'] / 1e12:8.1f} TFLOP/s = {r['flops_per_s'] / p.attainable_flops_per_s:.0%} "
              f"of its roofline ({p.bound}-bound at {p.intensity_flop_per_byte:.0f} FLOP/byte)")
    print(f"  {matmul!r}")
    matmul.plot.save(os.path.join(args.out, "matmul.svg"))
    ridge.roofline(ceilings, placed, title="BF16 matmul on this GPU").save(os.path.join(args.out, "roofline.svg"))
    results.records.extend(bandwidth.records + matmul.records)

    print("\n4. A GPT-2-small-shaped decode step, traced:")
    step = decoder_step()
    logits = step()
    assert logits.shape == (50257,) and torch.isfinite(logits).all(), "the decode step's logits are not finite"
    for _ in range(5):  # warm-up: cuBLAS heuristics, the caching allocator
        step()
    torch.cuda.synchronize()
    with ridge.trace(os.path.join(args.out, "trace.json"), step_range="step") as t:
        for _ in range(5 if args.quick else 20):
            with ridge.nvtx("step"):
                step()
        torch.cuda.synchronize()
    a = t.analysis
    gaps = [1 - s["gpu_busy_ns"] / s["gpu_span_ns"] for s in a.steps if s["gpu_span_ns"] > 0]
    gaps.sort()
    print(f"  kernels per step: {sorted(set(a.kernels_per_step))}; GPU idle between kernels: "
          f"{gaps[len(gaps) // 2]:.0%} of a step's GPU span (median); idle waiting on the host: "
          f"{a.idle_waiting_on_host_ms:.2f} ms of {a.idle_ms:.2f} ms idle")

    results.write(os.path.join(args.out, "results.json"))
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"bandwidth_knees": bandwidth.knees, "matmul_knees": matmul.knees,
                   "kernels_per_step": a.kernels_per_step, "step_gpu_idle_median": gaps[len(gaps) // 2]}, f)
    print(f"\nwritten: {args.out}/results.json, bandwidth.svg, matmul.svg, roofline.svg, trace.json")


if __name__ == "__main__":
    main()
