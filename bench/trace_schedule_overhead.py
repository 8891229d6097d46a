#!/usr/bin/env python3
"""The PyTorch side of bench/trace_schedule_overhead.sh: what a scheduled trace costs a training loop.

The loop is bench/trace_overhead_vs_torch_profiler.py's (bench/trace_vs_torch_profiler.py's
TinyGPT training step, marked by an NVTX range and a record_function named "step", each step
timed from its first call until torch.cuda.synchronize() has returned).

  loop  WARMUP untimed steps, then STEPS timed ones; writes the mean and median step time and how
        many steps the process began in all (what `ridge trace --schedule` must have counted).
        The shell script runs it untraced, under `ridge trace` (everything) and under
        `ridge trace --schedule`, one process each, interleaved over rounds.
  ab    The same inside one process, where separate processes' own spread (up to 45% on the H200
        host) cannot hide a percent: blocks of BLOCK steps untraced, traced whole by ridge.trace,
        and traced by ridge.trace(schedule=...), in random order within each round. The tracer's
        start and stop (CUPTI switched on, records flushed and analysed) lie outside the timed
        steps: a long run pays them once. Checks that each scheduled block recorded exactly the
        steps its schedule makes active, and fails otherwise.

"Average overhead" is a ratio of MEAN step times: a schedule puts its whole cost on one step in
ten, which a median would not see.
"""
import argparse
import json
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_overhead_vs_torch_profiler import build_step  # noqa: E402
from trace_vs_torch_profiler import SIZES  # noqa: E402

SCHEDULE_KEYS = ("skip_first", "wait", "warmup", "active", "repeat")


def parse_schedule(text):
    """`ridge trace --schedule` syntax (KEY=N,...) into a dict of the five counts."""
    out = {"skip_first": 0, "wait": 0, "warmup": 0, "active": 1, "repeat": 0}
    for item in text.split(","):
        key, _, value = item.partition("=")
        if key not in SCHEDULE_KEYS or not value.isdigit():
            raise SystemExit(f"trace_schedule_overhead: bad schedule item {item!r} in {text!r}")
        out[key] = int(value)
    if out["active"] < 1:
        raise SystemExit("trace_schedule_overhead: the schedule must record at least one step (active >= 1)")
    return out


def active_steps(schedule, steps):
    """How many of steps 0..steps-1 the schedule records (torch.profiler.schedule's rule)."""
    cycle = schedule["wait"] + schedule["warmup"] + schedule["active"]
    count = 0
    for step in range(schedule["skip_first"], steps):
        since = step - schedule["skip_first"]
        if schedule["repeat"] and since // cycle >= schedule["repeat"]:
            break
        count += since % cycle >= schedule["wait"] + schedule["warmup"]
    return count


def summary(times):
    return {"steps": len(times), "mean_ms": statistics.mean(times) / 1e6, "median_ms": statistics.median(times) / 1e6}


def cmd_loop(args):
    import torch
    cfg, step = build_step(args.size)
    for _ in range(args.warmup):
        step()
    times = [step() for _ in range(args.steps)]
    result = {"schema": "ridge.trace_schedule_loop/1", "size": args.size, "config": cfg,
              "under_injection": bool(os.environ.get("CUDA_INJECTION64_PATH")),
              "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "steps_total": args.warmup + args.steps, **summary(times), "step_ns": times}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"trace_schedule_overhead loop: {args.steps} steps, mean {result['mean_ms']:.4f} ms, "
          f"median {result['median_ms']:.4f} ms")


def bootstrap_ratio(rounds, kind, rng, resamples):
    """95% interval of mean(kind) / mean(untraced), resampling rounds."""
    ratios = []
    for _ in range(resamples):
        sample = [rounds[rng.randrange(len(rounds))] for _ in rounds]
        traced = [t for r in sample for t in r[kind]]
        untraced = [t for r in sample for t in r["untraced"]]
        ratios.append(statistics.mean(traced) / statistics.mean(untraced))
    ratios.sort()
    return [ratios[int(0.025 * (len(ratios) - 1))], ratios[int(round(0.975 * (len(ratios) - 1)))]]


def cmd_ab(args):
    import torch
    try:
        import ridge
    except ImportError as error:
        raise SystemExit("trace_schedule_overhead ab: cannot import ridge (" + str(error) + "): build the package "
                         "first (RIDGE_VENV=build/python-site scripts/test_python.sh --current-env) and put "
                         "build/python-site on PYTHONPATH") from error
    schedule = parse_schedule(args.schedule)
    expected = active_steps(schedule, args.block)
    if expected == 0:
        raise SystemExit(f"trace_schedule_overhead ab: a block of {args.block} steps holds no active step of "
                         f"{args.schedule}: raise --block")
    with ridge.nvtx("setup"):
        pass  # NVTX picks its tool at the process's first NVTX call: route it to ridge's CUPTI first
    cfg, step = build_step(args.size)
    for _ in range(args.warmup):
        step()

    def traced_block(kind):
        t0 = time.perf_counter_ns()
        kwargs = {"schedule": ridge.TraceSchedule(**schedule)} if kind == "scheduled" else {}
        with ridge.trace(None, step_range="step", **kwargs) as session:
            t1 = time.perf_counter_ns()
            times = [step() for _ in range(args.block)]
            t2 = time.perf_counter_ns()
        t3 = time.perf_counter_ns()
        recorded = session.analysis.step_numbers
        want = expected if kind == "scheduled" else args.block
        if len(recorded) != want or session.dropped_records:
            raise SystemExit(f"trace_schedule_overhead ab: a {kind} block of {args.block} steps recorded steps "
                             f"{recorded} ({session.dropped_records} records dropped); expected {want} steps")
        return times, (t1 - t0 + t3 - t2) / 1e6

    # One traced block of each kind first: CUPTI's first start is a one-time cost.
    traced_block("full")
    traced_block("scheduled")
    rng = random.Random(args.seed)
    rounds = []
    for _ in range(args.rounds):
        kinds = ["untraced", "full", "scheduled"]
        rng.shuffle(kinds)
        r = {"order": kinds, "start_stop_ms": {}}
        for kind in kinds:
            if kind == "untraced":
                r[kind] = [step() for _ in range(args.block)]
            else:
                r[kind], r["start_stop_ms"][kind] = traced_block(kind)
        rounds.append(r)
    per_kind = {k: [t for r in rounds for t in r[k]] for k in ("untraced", "full", "scheduled")}
    base = statistics.mean(per_kind["untraced"])
    rng_ci = random.Random(args.seed + 1)
    result = {
        "schema": "ridge.trace_schedule_ab/1", "size": args.size, "config": cfg, "schedule": args.schedule,
        "block": args.block, "rounds": args.rounds, "device": torch.cuda.get_device_name(),
        "torch": torch.__version__, "recorded_steps_per_scheduled_block": expected,
        **{f"{k}": summary(v) for k, v in per_kind.items()},
        **{f"{k}_ratio_of_means": statistics.mean(per_kind[k]) / base for k in ("full", "scheduled")},
        **{f"{k}_ratio_ci95": bootstrap_ratio(rounds, k, rng_ci, args.resamples) for k in ("full", "scheduled")},
        "start_stop_ms_median": {k: statistics.median(r["start_stop_ms"][k] for r in rounds) for k in ("full", "scheduled")},
        "rounds_log": rounds,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    s, full = result["scheduled_ratio_ci95"], result["full_ratio_ci95"]
    print(f"trace_schedule_overhead ab ({args.size}, {args.rounds} rounds of {args.block} steps): mean step "
          f"untraced {result['untraced']['mean_ms']:.4f} ms; scheduled ({args.schedule}) "
          f"x{result['scheduled_ratio_of_means']:.4f} [{s[0]:.4f}, {s[1]:.4f}]; "
          f"fully traced x{result['full_ratio_of_means']:.4f} [{full[0]:.4f}, {full[1]:.4f}]")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    loop = sub.add_parser("loop", help="one process: WARMUP + STEPS steps, timed")
    ab = sub.add_parser("ab", help="one process: untraced, fully traced and scheduled blocks interleaved")
    for q in (loop, ab):
        q.add_argument("--size", choices=SIZES, default="small")
        q.add_argument("--warmup", type=int, default=20, help="untimed steps first")
        q.add_argument("--out", required=True)
    loop.add_argument("--steps", type=int, default=500)
    ab.add_argument("--block", type=int, default=100, help="steps per block (each kind, each round)")
    ab.add_argument("--rounds", type=int, default=10)
    ab.add_argument("--schedule", default="wait=9,active=1")
    ab.add_argument("--seed", type=int, default=1)
    ab.add_argument("--resamples", type=int, default=2000)
    args = p.parse_args()
    if args.cmd == "loop" and args.steps < 1 or args.cmd == "ab" and (args.rounds < 2 or args.block < 1):
        p.error("nothing to measure: --steps >= 1, --rounds >= 2 and --block >= 1")
    return cmd_loop(args) if args.cmd == "loop" else cmd_ab(args)


if __name__ == "__main__":
    sys.exit(main())
