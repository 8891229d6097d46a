#!/usr/bin/env python3
"""Summarises the fused decode step's phase timeline (`ridge decode --kernel barrier --timeline FILE`).

Each block's thread 0 noted (globaltimer ns, clock64) at four points of every phase: start (left
the barrier), staged (inputs in shared memory), computed (all warps done), arrived (arrival sent).
In-block segments use clock64 (converted with the kernel-wide cycles per ns); barrier latencies use
globaltimer, the one clock all SMs share.

    python3 bench/fused_timeline.py timeline.json [--json summary.json]
"""
import argparse
import json
import statistics

KINDS = ["ln_1+c_attn", "attention", "combine+attn.c_proj", "ln_2+mlp.c_fc", "mlp.c_proj"]
START, STAGED, COMPUTED, ARRIVED = range(4)


def load(path):
    with open(path) as f:
        doc = json.load(f)
    blocks, phases = doc["blocks"], doc["phases"]
    v = doc["values"]
    if len(v) != blocks * phases * 4 * 2:
        raise SystemExit(f"{path}: {len(v)} values, expected {blocks * phases * 8}")

    def at(b, p, m, clock):
        return v[((b * phases + p) * 4 + m) * 2 + clock]

    return blocks, phases, at


def summarise(blocks, phases, at):
    # Cycles per ns over the whole kernel, from block 0 (start of phase 0 to the LM head's end).
    ns0, ns1 = at(0, 0, START, 0), at(0, phases - 1, COMPUTED, 0)
    c0, c1 = at(0, 0, START, 1), at(0, phases - 1, COMPUTED, 1)
    ghz = (c1 - c0) / (ns1 - ns0)
    ticks = sorted({at(b, p, m, 0) for b in range(blocks) for p in range(phases) for m in range(4)} - {0})
    resolution = min(b - a for a, b in zip(ticks, ticks[1:]))

    def cyc_ns(b, p, m0, m1):
        if at(b, p, m0, 1) == 0 or at(b, p, m1, 1) == 0:
            return None
        return (at(b, p, m1, 1) - at(b, p, m0, 1)) / ghz

    rows = []
    for p in range(phases):
        layer, kind = divmod(p, 5)
        name = "ln_f+lm_head" if p == phases - 1 else KINDS[kind]
        has_staged = at(0, p, STAGED, 1) != 0
        first = STAGED if has_staged else START
        stage = [cyc_ns(b, p, START, STAGED) for b in range(blocks)] if has_staged else []
        compute = [cyc_ns(b, p, first, COMPUTED) for b in range(blocks)]
        work = [cyc_ns(b, p, START, COMPUTED) for b in range(blocks)]
        row = {
            "phase": p, "layer": layer if p < phases - 1 else None, "name": name,
            "stage_ns": statistics.median(stage) if stage else 0.0,
            "compute_ns": statistics.median(compute),
            "work_ns_median": statistics.median(work),
            "work_ns_max": max(work),
        }
        if p < phases - 1:
            arrive = [cyc_ns(b, p, COMPUTED, ARRIVED) for b in range(blocks)]
            last_arrival = max(at(b, p, ARRIVED, 0) for b in range(blocks))
            first_start = min(at(b, p, START, 0) for b in range(blocks))
            exits = [at(b, p + 1, START, 0) - last_arrival for b in range(blocks)]
            row.update({
                "arrive_ns": statistics.median(arrive),
                # from the last block's arrival to the blocks leaving the barrier
                "barrier_exit_ns_median": statistics.median(exits),
                "barrier_exit_ns_max": max(exits),
                # first block in to last block out: the phase's whole length on the critical path
                "span_ns": max(at(b, p + 1, START, 0) for b in range(blocks)) - first_start,
            })
        rows.append(row)
    total = max(at(b, phases - 1, COMPUTED, 0) for b in range(blocks)) - min(at(b, 0, START, 0) for b in range(blocks))
    return {"blocks": blocks, "phases": phases, "sm_clock_ghz": ghz, "globaltimer_resolution_ns": resolution,
            "kernel_ns": total, "rows": rows}


def by_kind(summary):
    kinds = {}
    for r in summary["rows"]:
        kinds.setdefault(r["name"], []).append(r)
    out = []
    for name, rs in kinds.items():
        med = lambda key: statistics.median(r.get(key, 0.0) for r in rs)
        out.append({"name": name, "count": len(rs), **{k: med(k) for k in (
            "stage_ns", "compute_ns", "work_ns_median", "work_ns_max", "arrive_ns", "barrier_exit_ns_median",
            "barrier_exit_ns_max", "span_ns")}})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("timeline")
    ap.add_argument("--json", help="write the summary here")
    args = ap.parse_args()
    summary = summarise(*load(args.timeline))
    summary["by_kind"] = by_kind(summary)
    print(f"kernel {summary['kernel_ns'] / 1000:.1f} us over {summary['phases']} phases, {summary['blocks']} blocks; "
          f"SM clock {summary['sm_clock_ghz']:.3f} GHz; globaltimer steps >= {summary['globaltimer_resolution_ns']} ns")
    print("\nmedian over layers (ns); stage/compute/arrive: median block; work max: slowest block; "
          "exit: last arrival -> blocks leave; span: first in -> last out")
    cols = ["stage_ns", "compute_ns", "work_ns_median", "work_ns_max", "arrive_ns", "barrier_exit_ns_median",
            "barrier_exit_ns_max", "span_ns"]
    print("| phase | n | " + " | ".join(c.replace("_ns", "") for c in cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    for k in summary["by_kind"]:
        print(f"| {k['name']} | {k['count']} | " + " | ".join(f"{k[c]:.0f}" for c in cols) + " |")
    spans = sum(r.get("span_ns", r["work_ns_max"]) for r in summary["rows"])
    print(f"\nsum of spans {spans / 1000:.1f} us (kernel {summary['kernel_ns'] / 1000:.1f} us)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
