#!/usr/bin/env python3
"""The peers ridge's measured ceilings are compared with, in one process on one GPU:

  * a device-to-device copy of 1 GiB through PyTorch (dst.copy_(src), which is cudaMemcpyAsync
    device-to-device), counted as reads + writes (2 GiB moved);
  * torch.add on 2^28 fp32 elements, counted as 12 bytes per element (two reads, one write);
  * torch.matmul in BF16 at 8192^3 (2 * 8192^3 FLOPs), the best of several do_bench runs.

Every rate is a median of triton.testing.do_bench (CUDA events around many runs, an L2 flush
between them). Prints a table and, with --json FILE, writes the numbers.
"""
import argparse
import json
import sys

import torch
from triton.testing import do_bench


def median_ms(fn, rep_ms=300):
    return do_bench(fn, warmup=50, rep=rep_ms, return_mode="median")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--matmul-runs", type=int, default=3, help="do_bench runs of the matmul; the best is kept")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("ceilings_vs_peers.py: no CUDA GPU", file=sys.stderr)
        return 4
    dev = torch.device("cuda")
    torch.manual_seed(0)
    results = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}

    # Device-to-device copy of 1 GiB (2^28 fp32). Random inputs, checked after the run.
    n = 1 << 28
    src = torch.rand(n, device=dev) + 0.5
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src))
    if not torch.equal(dst, src):
        raise SystemExit("copy produced wrong data")
    results["memcpy_d2d"] = {"bytes": 2 * n * 4, "median_ms": ms, "bytes_per_s": 2 * n * 4 / (ms * 1e-3)}
    del dst

    # torch.add on 2^28 fp32: 8 bytes read + 4 written per element.
    b = torch.rand(n, device=dev) + 0.5
    c = torch.empty_like(src)
    ms = median_ms(lambda: torch.add(src, b, out=c))
    if not torch.equal(c[:4096], src[:4096] + b[:4096]):
        raise SystemExit("torch.add produced wrong data")
    results["torch_add"] = {"bytes": 12 * n, "median_ms": ms, "bytes_per_s": 12 * n / (ms * 1e-3)}
    del src, b, c
    torch.cuda.empty_cache()

    # BF16 matmul 8192^3: the best median of several do_bench runs.
    m = 8192
    x = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    y = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    ref = (x[:64].float() @ y.float())
    got = torch.matmul(x, y)[:64].float()
    rel = ((got - ref).abs().max() / ref.abs().max()).item()
    if rel > 2e-2:
        raise SystemExit(f"bf16 matmul error {rel:.3g} is too large")
    runs = [median_ms(lambda: torch.matmul(x, y), rep_ms=500) for _ in range(args.matmul_runs)]
    best = min(runs)
    flops = 2.0 * m ** 3
    results["matmul_bf16_8192"] = {"flops": flops, "median_ms_runs": runs, "median_ms": best,
                                   "flops_per_s": flops / (best * 1e-3)}

    print(f"{'peer':<28} {'median':>10}  rate")
    print(f"{'memcpy D2D 1 GiB':<28} {results['memcpy_d2d']['median_ms']:>8.3f} ms  "
          f"{results['memcpy_d2d']['bytes_per_s'] / 1e12:.3f} TB/s (reads + writes)")
    print(f"{'torch.add 2^28 fp32':<28} {results['torch_add']['median_ms']:>8.3f} ms  "
          f"{results['torch_add']['bytes_per_s'] / 1e12:.3f} TB/s (12 B/element)")
    print(f"{'torch.matmul bf16 8192^3':<28} {best:>8.3f} ms  "
          f"{results['matmul_bf16_8192']['flops_per_s'] / 1e12:.1f} TFLOP/s (best of {len(runs)})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
