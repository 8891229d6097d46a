"""ridge's Python timers side by side with Triton's, in one process, interleaved.

  - ridge.measure_cuda(fn, flush_l2=True) vs triton.testing.do_bench(fn) (both: events around each
    call, L2 flushed before it) on BF16 4096^2 and 8192^2 matmuls;
  - ridge.measure_graph(fn) vs triton.testing.do_bench_cudagraph(fn) on BF16 256^2 and 1024^2;
  - the Python layer's cost: ridge's empty kernel timed by the C++ timer alone and through a
    Python callable, with the launch-free methods (spin hold, graph replay).

Medians everywhere (do_bench with return_mode="median"). Run on the GPU machine after
`scripts/test_python.sh --system-site-packages` (or with the package importable):
  python bench/python_vs_triton.py --out results/h200/python
"""
import argparse
import json
import os
import statistics

import torch
import triton.testing

import ridge


def matmul(n):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    expected = (a.float() @ b.float())
    got = (a @ b).float()
    rel = ((got - expected).norm() / expected.norm()).item()
    assert rel < 1e-2, f"bf16 {n}^2 matmul is wrong: relative error {rel}"  # checked before timing
    return lambda: a @ b


def interleave(rounds, **timers):
    """Runs each timer once per round, alternating, and returns each one's per-round medians."""
    out = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            out[name].append(float(timer()))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    rows = []

    for n in (4096, 8192):
        fn = matmul(n)
        r = interleave(args.rounds,
                       ridge=lambda: ridge.measure_cuda(fn, samples=100, warmup=25, flush_l2=True),
                       triton=lambda: triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median"))
        rows.append(("events, cold L2", f"bf16 {n}^2 matmul", r))

    for n in (256, 1024):
        fn = matmul(n)
        r = interleave(args.rounds,
                       ridge=lambda: ridge.measure_graph(fn, samples=20, repeats="auto"),
                       triton=lambda: triton.testing.do_bench_cudagraph(fn, rep=20, return_mode="median"))
        rows.append(("graph replay", f"bf16 {n}^2 matmul", r))

    lines = ["| comparison | case | ridge ms (median of rounds) | Triton ms | ridge / Triton | difference us |",
             "|---|---|---|---|---|---|"]
    for method, case, r in rows:
        a, b = statistics.median(r["ridge"]), statistics.median(r["triton"])
        lines.append(f"| {method} | {case} | {a:.5f} | {b:.5f} | {a / b:.4f} | {(a - b) * 1e3:+.3f} |")

    # The Python layer's cost on an empty kernel, launch-free methods.
    launch = ridge._ridge.launch_empty
    lines += ["", "| method | C++ timer alone, us | through a Python callable, us | Python layer adds, us |",
              "|---|---|---|---|"]
    overhead = {}
    for method, py_timer in (("spin_hold", ridge.measure_spin), ("graph_replay", ridge.measure_graph)):
        cpp_method = ridge._ridge.method_from_string(method)
        r = interleave(args.rounds,
                       cpp=lambda: ridge.Measurement(ridge._ridge.measure_empty_kernel(cpp_method, 5, 50, 20)),
                       py=lambda: py_timer(lambda s: launch(s), samples=50, repeats=20, stream=0))
        c, p = statistics.median(r["cpp"]) * 1e3, statistics.median(r["py"]) * 1e3
        overhead[method] = p - c
        lines.append(f"| {method} | {c:.3f} | {p:.3f} | {p - c:+.3f} |")

    table = "\n".join(lines)
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}, "
          f"{args.rounds} interleaved rounds\n\n{table}")
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "python_vs_triton.md"), "w") as f:
            f.write(table + "\n")
        with open(os.path.join(args.out, "python_vs_triton.json"), "w") as f:
            json.dump({"rows": [{"method": m, "case": c, **r} for m, c, r in rows], "overhead_us": overhead}, f, indent=1)


if __name__ == "__main__":
    main()
