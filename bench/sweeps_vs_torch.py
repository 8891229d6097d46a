#!/usr/bin/env python3
"""PyTorch side of bench/sweeps_vs_torch.sh: times torch.add and torch.matmul at the sizes ridge
measured, with Triton's do_bench (median) and with CUDA-graph replay, and checks the targets
listed in bench/sweeps_vs_torch.sh.
Writes DEST/torch_side.json and DEST/summary.json; prints a short table last."""
import argparse
import json
import statistics
import sys

import torch
import triton.testing


def do_bench_ms(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def graph_ms(fn, target_ms=2.0, samples=20):
    """Median ms per call of fn captured `calls` times in one CUDA graph and replayed."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    end.synchronize()
    once = max(start.elapsed_time(end) / 5, 1e-4)
    calls = int(min(max(target_ms / once, 1), 2000))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    del graph
    return statistics.median(times)


def records(path):
    with open(path) as f:
        return json.load(f)["records"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dest", required=True)
    ap.add_argument("--bandwidth", required=True, help="ridge bandwidth --ops add JSON")
    ap.add_argument("--matmul", required=True, help="ridge matmul JSON (hot)")
    ap.add_argument("--matmul-cold", help="ridge matmul --cold JSON")
    ap.add_argument("--walls", required=True)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__}

    # ---- x + y --------------------------------------------------------------------------------
    bw = [r for r in records(a.bandwidth) if r["name"] == "bandwidth.add"]
    sizes = sorted({int(r["params"]["n"]) for r in bw})
    torch_add = {}
    for n in sizes:
        x = torch.rand(n, device=dev) * 2 - 1
        y = torch.rand(n, device=dev) * 2 - 1
        z = torch.empty_like(x)
        fn = lambda: torch.add(x, y, out=z)
        torch_add[n] = {"do_bench_ms": do_bench_ms(fn), "graph_ms": graph_ms(fn)}
        del x, y, z
    torch.cuda.empty_cache()
    best = {}
    for r in bw:
        n = int(r["params"]["n"])
        if n not in best or r["median_ms"] < best[n]["median_ms"]:
            best[n] = r
    add_rows = []
    for n in sizes:
        r = best[n]
        t = torch_add[n]
        gbps = lambda ms: 12.0 * n / (ms * 1e-3) / 1e9
        add_rows.append({
            "n": n, "ridge_variant": r["params"]["variant"], "ridge_method": r["method"], "ridge_ms": r["median_ms"],
            "ridge_gb_per_s": gbps(r["median_ms"]), "empty_launch_ms": r["extra"].get("empty_launch_ms"),
            "torch_do_bench_ms": t["do_bench_ms"], "torch_graph_ms": t["graph_ms"],
            "torch_do_bench_gb_per_s": gbps(t["do_bench_ms"]), "torch_graph_gb_per_s": gbps(t["graph_ms"]),
            "ratio_vs_do_bench": t["do_bench_ms"] / r["median_ms"], "ratio_vs_graph": t["graph_ms"] / r["median_ms"],
        })
    out["add"] = add_rows

    # ---- BF16 GEMM ------------------------------------------------------------------------------
    mm = [r for r in records(a.matmul) if r["name"] == "matmul" and r["dtype"] == "bf16"]
    cold = {}
    if a.matmul_cold:
        cold = {int(r["params"]["n"]): r for r in records(a.matmul_cold) if r["dtype"] == "bf16"}
    mm_rows = []
    for r in sorted(mm, key=lambda r: r["params"]["n"]):
        m, n, k = (int(r["params"][d]) for d in ("m", "n", "k"))
        A = torch.rand(m, k, device=dev, dtype=torch.bfloat16) * 2 - 1
        B = torch.rand(k, n, device=dev, dtype=torch.bfloat16) * 2 - 1
        C = torch.empty(m, n, device=dev, dtype=torch.bfloat16)
        fn = lambda: torch.matmul(A, B, out=C)
        db, gr = do_bench_ms(fn), graph_ms(fn)
        tflops = lambda ms: 2.0 * m * n * k / (ms * 1e-3) / 1e12
        row = {"n": n, "m": m, "k": k, "ridge_ms": r["median_ms"], "ridge_method": r["method"],
               "ridge_tflop_per_s": tflops(r["median_ms"]), "torch_do_bench_ms": db, "torch_graph_ms": gr,
               "torch_do_bench_tflop_per_s": tflops(db), "torch_graph_tflop_per_s": tflops(gr),
               "ratio_vs_do_bench": db / r["median_ms"], "ratio_vs_graph": gr / r["median_ms"],
               "algorithm": r["extra"].get("algorithm"), "tuning": r["extra"].get("tuning")}
        if n in cold:
            row["ridge_cold_ms"] = cold[n]["median_ms"]
            row["cold_ratio_vs_do_bench"] = db / cold[n]["median_ms"]
        mm_rows.append(row)
        del A, B, C
    out["matmul_bf16"] = mm_rows

    # ---- wall times -----------------------------------------------------------------------------
    walls = {}
    with open(a.walls) as f:
        for line in f:
            name, ms, rc = line.split()
            walls[name] = {"seconds": int(ms) / 1e3, "rc": int(rc)}
    out["walls"] = walls

    # ---- targets ----------------------------------------------------------------------------------
    top = add_rows[-1]
    small = add_rows[0]
    targets = []
    targets.append((f"add at {top['n']}: best ridge / torch.add (do_bench)", top["ratio_vs_do_bench"], ">= 1.00",
                    top["ratio_vs_do_bench"] >= 1.0))
    targets.append((f"add at {top['n']}: best ridge / torch.add (graph)", top["ratio_vs_graph"], "(info)", None))
    if small["empty_launch_ms"] is not None:
        gap_us = (small["ridge_ms"] - small["empty_launch_ms"]) * 1e3
        targets.append((f"add at {small['n']}: ridge time - empty launch (us)", gap_us, "<= 1 us", gap_us <= 1.0))
    for row in mm_rows:
        if row["n"] >= 1024 and row["m"] == row["n"] == row["k"]:
            targets.append((f"bf16 GEMM n={row['n']}: ridge / torch.matmul (do_bench)", row["ratio_vs_do_bench"],
                            ">= 0.97", row["ratio_vs_do_bench"] >= 0.97))
    for name in ("bandwidth_default", "matmul_default"):
        if name in walls:
            w = walls[name]
            targets.append((f"{name} wall time (s), rc {w['rc']}", w["seconds"], "<= 30 s",
                            w["seconds"] <= 30 and w["rc"] == 0))
    out["targets"] = [{"what": t[0], "value": t[1], "target": t[2], "met": t[3]} for t in targets]
    with open(f"{a.dest}/summary.json", "w") as f:
        json.dump(out, f, indent=2)

    print("\nx + y (fp32), best ridge variant vs torch.add")
    print(f"{'n':>10} {'variant':>12} {'ridge GB/s':>11} {'torch db':>9} {'torch gr':>9} {'ratio db':>9} {'empty us':>9} {'ridge us':>9}")
    for r in add_rows:
        print(f"{r['n']:>10} {r['ridge_variant']:>12} {r['ridge_gb_per_s']:>11.1f} {r['torch_do_bench_gb_per_s']:>9.1f} "
              f"{r['torch_graph_gb_per_s']:>9.1f} {r['ratio_vs_do_bench']:>9.3f} "
              f"{(r['empty_launch_ms'] or 0) * 1e3:>9.2f} {r['ridge_ms'] * 1e3:>9.2f}")
    print("\nBF16 GEMM, ridge vs torch.matmul (TFLOP/s)")
    print(f"{'n':>6} {'ridge':>8} {'torch db':>9} {'torch gr':>9} {'ratio db':>9} {'ratio gr':>9} {'cold/db':>8}")
    for r in mm_rows:
        print(f"{r['n']:>6} {r['ridge_tflop_per_s']:>8.1f} {r['torch_do_bench_tflop_per_s']:>9.1f} "
              f"{r['torch_graph_tflop_per_s']:>9.1f} {r['ratio_vs_do_bench']:>9.3f} {r['ratio_vs_graph']:>9.3f} "
              f"{r.get('cold_ratio_vs_do_bench', float('nan')):>8.3f}")
    print("\nTargets")
    for what, value, target, met in targets:
        verdict = "info" if met is None else ("MET" if met else "MISSED")
        print(f"  {what:<58} {value:>9.3f}  {target:<9} {verdict}")
    return 0 if all(t[3] is not False for t in targets) else 1


if __name__ == "__main__":
    sys.exit(main())
