#!/usr/bin/env python3
"""ridge against nvbench (the `cuda-bench` wheel, nvbench's own Python binding) on the same
PyTorch operations, case by case, the two tools taking turns in a random order (ridge in this
process; each nvbench case in a child process of its own, as cuda.bench runs its benchmarks once
per process):

  - BF16 matmul, n x n x n, n = 256 .. 8192 (torch.matmul into a preallocated output);
  - FP32 x + y, 2^10 .. 2^28 elements (torch.add into a preallocated output).

Each operation is checked against a reference before either tool times it. Per case and per
cache state:
  cold  nvbench's cold measurement (blocking kernel, L2 flushed, one launch per sample: its
        nv/cold/time/gpu/mean, nv/cold/time/gpu/stdev/relative and nv/cold/walltime) against
        ridge.measure_spin(fn, flush_l2=True, throttle_threshold=0.75) with adaptive stopping (a
        sample taken below 75% of the rated SM clock is dropped and the GPU rests, as nvbench does
        with its default throttle threshold; a spin kernel holds the
        stream while each sample is queued, as nvbench's blocking kernel does);
  cold, GPU idle as nvbench leaves it
        the same ridge measurement with rest_before_sample_s set to the time nvbench's cold loop
        left the GPU idle per sample (its cold wall time per sample minus the sample's time: ~1.6
        ms for the 8192^3 matmul, spent on the host between samples). ridge's samples otherwise
        run back to back, under sustained load; a power-limited kernel runs faster after a pause
        (9% for that matmul), so this row compares the two at the same duty cycle. Like nvbench's
        cold phase, which starts right after its process start-up and warm-up, it starts from a
        rested GPU (--ridge-rested-pause-s), not from the settled clock of the plain cold row;
  hot   nvbench's batch measurement (many launches back to back, no flush, the stream held only
        for the first two: nv/batch/time/gpu/mean, nv/batch/walltime) against
        ridge.measure_spin(fn, repeats="auto") (back-to-back calls, launches hidden), with adaptive
        stopping. Where the host launches the call slower than the GPU runs it, nvbench's batch
        times the Python launch rate, not the call: ridge's events batch
        (ridge.measure_cuda(fn, repeats="auto"), nothing held) shows it, and a row whose events
        batch is >= 1.25x its launch-hidden time is marked launch-bound and left out of the time
        and noise targets (both tools would time their own Python launch path there).
The wall time of each is the time that measurement took (nvbench's own walltime summaries; for
ridge the time around its call). Noise is the relative standard deviation of the samples, the
figure nvbench prints as "Noise"; ridge's median CI half-width is shown too. nvbench's batch
measurement has no noise figure (one mean over one batch), so hot rows compare with nvbench's cold
noise.

Clocks: nvbench runs each case for seconds, so it measures a power-hungry matmul at the clock the
power limit settles it to (1550 MHz for a 4096^3 BF16 matmul on the H200, against 1980 MHz idle).
Before ridge measures a case, this script runs the case until the SM clock holds still (three NVML
reads 50 ms apart within 1%, after at least --ridge-settle-min-s, at most --ridge-settle-s), so both
are compared at the same clocks. That settling is for the comparison, not part of ridge's
measurement: it is shown in its own column and not counted in ridge's wall time. The SM clock is
nvbench's own mean for its cold samples, and NVML's reading before and after for ridge's.

Targets (issue 16): times within 3%; ridge's noise <= nvbench's; ridge's wall time <= 1/3 of
nvbench's per case, cold and hot.

On the GPU machine (Python 3.12, /opt/torch/.venv), from the repository root:
  pip install --no-build-isolation . && pip install .whl/cuda_*.whl
  python3 bench/python_vs_nvbench.py [--quick] --out DIR
It prints one table and writes DIR/python_vs_nvbench.{md,json} (nvbench's own JSON per case under
DIR/nvbench/).
"""
import argparse
import json
import os
import random
import statistics
import sys
import time

MATMUL_SIZES = [256, 512, 1024, 2048, 4096, 8192]
ADD_SIZES = [2 ** e for e in range(10, 29, 2)]
LAUNCH_BOUND = 1.25  # events batch / launch-hidden time at which the host, not the GPU, sets the pace
QUICK = {"matmul": [256, 4096], "add": [2 ** 10, 2 ** 20, 2 ** 28]}


def make_case(torch, kind, n):
    """The operation at size n, checked against a reference: (fn, bytes, flops, label)."""
    if kind == "matmul":
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        fn = lambda: torch.matmul(a, b, out=c)  # noqa: E731
        fn()
        expected = a.float() @ b.float()
        rel = ((c.float() - expected).norm() / expected.norm()).item()
        if not rel < 1e-2:
            sys.exit(f"bf16 {n}^3 matmul is wrong: relative error {rel:.3g}")
        return fn, 3 * n * n * 2, 2 * n ** 3, f"bf16 matmul {n}^3"
    x = torch.randn(n, device="cuda", dtype=torch.float32)
    y = torch.randn(n, device="cuda", dtype=torch.float32)
    z = torch.empty(n, device="cuda", dtype=torch.float32)
    fn = lambda: torch.add(x, y, out=z)  # noqa: E731
    fn()
    if not torch.equal(z, x + y):
        sys.exit(f"fp32 x + y at {n} elements is wrong")
    return fn, 3 * n * 4, n, f"fp32 x + y 2^{n.bit_length() - 1}"


class Nvbench:
    """cuda.bench driven one case at a time: the case's function is registered once per kind,
    and each run selects one benchmark and one axis value on nvbench's command line."""

    def __init__(self, torch, out_dir):
        import cuda.bench as bench
        self.bench, self.torch, self.out_dir = bench, torch, out_dir
        self.current = None  # (fn, bytes) of the case being run
        os.makedirs(out_dir, exist_ok=True)
        for kind in ("matmul", "add"):
            self._register(kind)

    def _register(self, kind):
        torch = self.torch

        def body(state):
            fn, nbytes = self.current
            device = state.get_device()
            stream = torch.cuda.ExternalStream(stream_ptr=state.get_stream().addressof(),
                                               device=torch.device("cuda", 0 if device is None else device))
            with torch.cuda.stream(stream):
                fn()  # first use of this stream (cuBLAS workspace) before any blocking kernel
            stream.synchronize()
            state.add_global_memory_reads(nbytes * 2 // 3)
            state.add_global_memory_writes(nbytes // 3)

            # nvbench calls the launcher on this thread: the stream is made current once, so the
            # batch times fn's own launches, not a stream switch per call.
            with torch.cuda.stream(stream):
                state.exec(lambda launch: fn())

        body.__name__ = kind
        self.bench.register(body).set_name(kind).add_int64_axis("N", MATMUL_SIZES if kind == "matmul" else ADD_SIZES)

    def run(self, kind, n, fn, nbytes, tag):
        from cuda.bench.results import BenchmarkResult
        self.current = (fn, nbytes)
        path = os.path.join(self.out_dir, f"{tag}.json")
        # nvbench's own log (markdown) goes to stderr, so stdout holds only this script's table.
        self.bench.run_all_benchmarks(["nvbench", "--devices", "0", "--markdown", "stderr", "--json", path,
                                       "--benchmark", kind, "--axis", f"N={n}"])
        state = BenchmarkResult.from_json(path)[kind].states[0]
        if state.is_skipped:
            sys.exit(f"nvbench skipped {tag}: {state.skip_reason}")

        def value(name):
            summary = state.summaries.get(name)
            return None if summary is None else summary.value
        return {
            "cold": {"ms": value("nv/cold/time/gpu/mean") * 1e3, "noise": value("nv/cold/time/gpu/stdev/relative"),
                     "wall_s": value("nv/cold/walltime"), "samples": value("nv/cold/sample_size"),
                     "statistic": "mean"},
            "hot": {"ms": value("nv/batch/time/gpu/mean") * 1e3, "noise": None, "wall_s": value("nv/batch/walltime"),
                    "samples": value("nv/batch/sample_size"), "statistic": "mean"},
            "nvbench_sm_clock_rate": value("nv/cold/sm_clock_rate/mean"),  # as nvbench reports it (absent in older versions)
        }


def nvbench_in_child(kind, n, out_dir):
    """One nvbench case in a child process: cuda.bench runs its benchmarks once per process
    (a second run_all_benchmarks raises "Benchmarks were already executed")."""
    import subprocess
    result = os.path.join(out_dir, f"{kind}_{n}.result.json")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--out", out_dir, "--nvbench-case", kind, str(n), result],
                   check=True)
    with open(result) as f:
        return json.load(f)


def nvbench_case_main(args):
    import torch
    kind, n, result = args.nvbench_case[0], int(args.nvbench_case[1]), args.nvbench_case[2]
    fn, nbytes, _, _ = make_case(torch, kind, n)
    out = Nvbench(torch, args.out).run(kind, n, fn, nbytes, f"{kind}_{n}")
    with open(result, "w") as f:
        json.dump(out, f)
    return 0


def settle_clocks(ridge, torch, fn, min_s, max_s):
    """Runs fn back to back in 50 ms blocks for at least min_s, then until the SM clock holds still
    (three NVML reads in a row within 1% of each other), at most max_s seconds: a power-hungry
    operation pulls the clock down within a fraction of a second to a second, and nvbench, which
    runs each case for seconds, measures it there. Returns (seconds spent, final SM MHz)."""
    t0 = time.perf_counter()
    reads = []
    while time.perf_counter() - t0 < max_s:
        t_block = time.perf_counter()
        while time.perf_counter() - t_block < 0.05:
            fn()
            torch.cuda.current_stream().synchronize()  # never more queued than the 50 ms
        reads = (reads + [ridge.read_clocks()["sm_mhz"]])[-3:]
        if time.perf_counter() - t0 >= min_s and len(reads) == 3 and max(reads) <= 1.01 * min(reads):
            break
    return time.perf_counter() - t0, reads[-1] if reads else 0.0


def ridge_run(ridge, torch, fn, args):
    """ridge's measurements of fn on a stream of its own (PyTorch's current stream, which ridge's
    timers use), adaptive stopping, after the clocks settled (not counted in the wall time):
      cold        measure_spin(flush_l2=True): each sample queued behind a held stream, L2 flushed;
      hot         measure_spin(repeats="auto"): back-to-back calls, launches hidden;
      hot_events  measure_cuda(repeats="auto"): events around back-to-back calls, nothing held, so
                  a call the host launches slower than the GPU runs it is timed at the launch rate,
                  as nvbench's batch measurement times it."""
    stream = torch.cuda.Stream()
    out = {}
    with torch.cuda.stream(stream):
        fn()
        stream.synchronize()
        out["settle_s"], out["settled_sm_mhz"] = settle_clocks(ridge, torch, fn, args.ridge_settle_min_s,
                                                               args.ridge_settle_s)
        for mode, method, options in (("cold", "spin", cold_options(args)),
                                      ("hot", "spin", dict(repeats="auto")),
                                      ("hot_events", "events", dict(repeats="auto"))):
            out[mode] = ridge_measurement(ridge, fn, args, method, options)
    out["launch_bound"] = out["hot_events"]["ms"] >= LAUNCH_BOUND * out["hot"]["ms"]
    return out


def cold_options(args, rest_s=0.0):
    return dict(flush_l2=True, repeats=1, throttle_threshold=args.ridge_throttle_threshold, rest_before_sample_s=rest_s)


def ridge_measurement(ridge, fn, args, method, options):
    """One ridge measurement with the script's sampling options: its numbers, wall time and clocks."""
    before = ridge.read_clocks()["sm_mhz"]
    t0 = time.perf_counter()
    m = ridge.measure(method, fn, warmup=args.ridge_warmup, samples=args.ridge_min_samples,
                      target_ci_relative=args.ridge_target_ci, time_budget_s=args.ridge_budget_s, **options)
    wall = time.perf_counter() - t0
    return {"throttled_samples_dropped": m.throttled_samples_dropped,
            "ms": float(m), "mean_ms": m.mean_ms, "noise": m.cv, "ci_relative": m.summary.median_ci_relative,
            "wall_s": wall, "samples": len(m.samples), "repeats_per_sample": m.repeats_per_sample,
            "stop_reason": m.stop_reason, "statistic": "median", "method": method,
            "sm_mhz": [before, ridge.read_clocks()["sm_mhz"]]}


def nvbench_idle_per_cold_sample(cold):
    """Seconds nvbench's cold loop left the GPU idle per sample: its wall time per sample beyond the
    sample itself (the host's work between samples, and its flush, sync and launches)."""
    return min(0.01, max(0.0, cold["wall_s"] / cold["samples"] - cold["ms"] * 1e-3)) if cold.get("samples") else 0.0


def ridge_cold_rested(ridge, torch, fn, args, rest_s):
    """ridge's cold measurement with the GPU left idle rest_s before each sample, as nvbench's cold
    loop leaves it: under the power limit a kernel runs faster after a pause than under sustained
    load, so this is the like-for-like comparison with nvbench's cold figure. Like nvbench's cold
    measurement, it starts without running the case to a sustained clock first; the GPU rests
    --ridge-rested-pause-s before it, as long as nvbench's warm-up and start-up leave it idle."""
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        fn()
        stream.synchronize()
        time.sleep(args.ridge_rested_pause_s)
        out = ridge_measurement(ridge, fn, args, "spin", cold_options(args, rest_s))
    out["rest_s"] = rest_s
    return out


def ratio(a, b):
    return a / b if a is not None and b else float("nan")


def table(rows):
    lines = ["| case | mode | nvbench ms (mean) | noise | wall s | SM MHz | ridge ms (median) | noise | CI | wall s | "
             "SM MHz | time ridge/nvbench | noise ridge/nvbench | wall ridge/nvbench |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    misses, launch_bound = [], []
    for r in rows:
        for mode in ("cold", "cold_rested", "hot"):
            if mode not in r["ridge"]:
                continue  # a run saved before the rested rows
            nv, rg = r["nvbench"]["cold" if mode == "cold_rested" else mode], r["ridge"][mode]
            nv_noise = nv["noise"] if nv["noise"] is not None else r["nvbench"]["cold"]["noise"]
            t, q, w = ratio(rg["ms"], nv["ms"]), ratio(rg["noise"], nv_noise), ratio(rg["wall_s"], nv["wall_s"])
            exempt = mode == "hot" and r["ridge"]["launch_bound"]
            marks = []
            if not exempt and not abs(t - 1) <= 0.03:
                marks.append("time")
            if not exempt and not q <= 1:
                marks.append("noise")
            if not w <= 1 / 3:
                marks.append("wall")
            if marks:
                misses.append(f"{r['case']} {mode}: {', '.join(marks)}")
            if exempt:
                launch_bound.append(r["case"])
            nv_clock = r["nvbench"].get("nvbench_sm_clock_rate") if mode != "hot" else None
            nv_clock_text = f"{nv_clock / 1e6:.0f}" if nv_clock else "-"
            noise_text = f"{nv['noise'] * 100:.2f}%" if nv["noise"] is not None else f"({nv_noise * 100:.2f}% cold)"
            mode_text = "hot (launch-bound)" if exempt else mode
            if mode == "cold_rested":
                mode_text = f"cold, GPU idle {rg['rest_s'] * 1e3:.2f} ms before each sample (nvbench's idle)"
            lines.append(
                f"| {r['case']} | {mode_text} | {nv['ms']:.5f} | {noise_text} | {nv['wall_s']:.2f} | {nv_clock_text} | "
                f"{rg['ms']:.5f} | {rg['noise'] * 100:.2f}% | {rg['ci_relative'] * 100:.2f}% | {rg['wall_s']:.2f} | "
                f"{rg['sm_mhz'][0]:.0f}-{rg['sm_mhz'][1]:.0f} | {t:.4f} | {q:.2f} | {w:.3f} |")
    lines += ["", "Targets: time within 3%, noise ratio <= 1, wall ratio <= 0.333" +
              (f"; time and noise not applied to the hot rows marked launch-bound ({len(launch_bound)})" if launch_bound else "") +
              ". " + ("All met." if not misses else "Missed: " + "; ".join(misses) + "."),
              "", "Hot, against what the host's launches allow: ridge's events batch (nothing held, like nvbench's "
              "batch) beside the launch-hidden time; launch-bound where the events batch is >= "
              f"{LAUNCH_BOUND:g}x the launch-hidden time. The clock settling before ridge measured (not in its wall time):", "",
              "| case | ridge hot, launches hidden, ms | ridge events batch ms | nvbench batch ms | launch-bound | settle s | "
              "settled SM MHz | ridge cold samples dropped (throttled) |",
              "|---|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        rg = r["ridge"]
        lines.append(f"| {r['case']} | {rg['hot']['ms']:.5f} | {rg['hot_events']['ms']:.5f} | "
                     f"{r['nvbench']['hot']['ms']:.5f} | {'yes' if rg['launch_bound'] else 'no'} | "
                     f"{rg['settle_s']:.2f} | {rg['settled_sm_mhz']:.0f} | "
                     f"{rg['cold'].get('throttled_samples_dropped', 0)} |")
    return "\n".join(lines), misses


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for python_vs_nvbench.{md,json} and nvbench's JSON")
    p.add_argument("--quick", action="store_true", help=f"only {QUICK}")
    p.add_argument("--ridge-rested-pause-s", type=float, default=0.5,
                   help="the row at nvbench's idle: seconds the GPU rests before that measurement (no clock settling)")
    p.add_argument("--seed", type=int, default=1, help="the order of the two tools per case")
    p.add_argument("--ridge-settle-min-s", type=float, default=0.3,
                   help="run each case at least this long before ridge measures it (clock settling)")
    p.add_argument("--ridge-settle-s", type=float, default=3.0,
                   help="at most this long: until the SM clock holds still (not counted in ridge's wall time)")
    p.add_argument("--ridge-throttle-threshold", type=float, default=0.75,
                   help="ridge's cold samples: drop those taken below this fraction of the rated SM clock and let "
                        "the GPU rest (nvbench's throttle threshold, 0.75 by default; 0: off)")
    p.add_argument("--kinds", default="matmul,add", help="which operations: matmul, add or both")
    p.add_argument("--ridge-warmup", type=int, default=5)
    p.add_argument("--ridge-min-samples", type=int, default=20, help="samples before the stopping rule is consulted")
    p.add_argument("--ridge-target-ci", type=float, default=0.005,
                   help="stop when the median's CI half-width is below this fraction of the median")
    p.add_argument("--ridge-budget-s", type=float, default=2.0, help="ridge's time budget per measurement, s")
    p.add_argument("--nvbench-case", nargs=3, metavar=("KIND", "N", "RESULT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.nvbench_case:
        return nvbench_case_main(args)

    import torch
    import ridge
    nvbench_dir = os.path.join(args.out, "nvbench")
    os.makedirs(nvbench_dir, exist_ok=True)
    sizes = QUICK if args.quick else {"matmul": MATMUL_SIZES, "add": ADD_SIZES}
    rng = random.Random(args.seed)
    rows = []
    kinds = [k for k in ("matmul", "add") if k in args.kinds.split(",")]
    if not kinds:
        p.error("--kinds takes matmul, add or matmul,add")
    for kind in kinds:
        for n in sizes[kind]:
            fn, nbytes, flops, label = make_case(torch, kind, n)
            row = {"case": label, "kind": kind, "n": n, "bytes": nbytes, "flops": flops}
            order = ["nvbench", "ridge"]
            rng.shuffle(order)
            for tool in order:
                if tool == "ridge":
                    row["ridge"] = ridge_run(ridge, torch, fn, args)
                else:
                    before, t0 = ridge.read_clocks()["sm_mhz"], time.perf_counter()
                    row["nvbench"] = nvbench_in_child(kind, n, nvbench_dir)
                    row["nvbench"]["total_wall_s"] = time.perf_counter() - t0  # process start, warm-up, both measurements
                    after = ridge.read_clocks()["sm_mhz"]
                    for mode in ("cold", "hot"):  # one nvbench run covers both measurements
                        row["nvbench"][mode]["sm_mhz"] = [before, after]
            row["order"] = order
            row["ridge"]["cold_rested"] = ridge_cold_rested(ridge, torch, fn, args,
                                                            nvbench_idle_per_cold_sample(row["nvbench"]["cold"]))
            rows.append(row)
            with open(os.path.join(args.out, "python_vs_nvbench.partial.json"), "w") as f:
                json.dump({"args": vars(args), "rows": rows}, f, indent=1)  # what a cut-short run keeps
            print(f"{label}: done ({' then '.join(order)})", file=sys.stderr, flush=True)
            del fn
            torch.cuda.empty_cache()

    text, misses = table(rows)
    header = (f"{torch.cuda.get_device_name()}, torch {torch.__version__}, ridge {ridge.__version__}; ridge: "
              f"cold: spin + flush, hot: spin batch; >= {args.ridge_min_samples} samples, target CI {args.ridge_target_ci * 100:g}%, "
              f"budget {args.ridge_budget_s:g} s per measurement")
    print(f"{header}\n\n{text}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "python_vs_nvbench.md"), "w") as f:
        f.write(f"{header}\n\n{text}\n")
    with open(os.path.join(args.out, "python_vs_nvbench.json"), "w") as f:
        json.dump({"args": vars(args), "rows": rows, "misses": misses,
                   "median_time_ratio": {m: statistics.median(ratio(r["ridge"][m]["ms"], r["nvbench"][m]["ms"])
                                                              for r in rows) for m in ("cold", "hot")}}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
