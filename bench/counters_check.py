"""Checks the hardware counters `ridge trace --counters` collected.

  known TRACE...          stream kernels and GEMMs against the bytes and FLOPs they must do (a GEMM
                          tile that overhangs the 4096 matrix computes its padding too: expected
                          FLOPs are 2*m*n*k with m and n rounded up to the tile in the kernel's name)
  ncu TRACE NCU_CSV       every profiled kernel with >= 1 MB of DRAM traffic against Nsight Compute
  timing PLAIN COUNTED    kernel time per step outside the profiled window, with and without counters

Prints a table and exits 1 when a check fails.
"""
import csv
import json
import statistics
import sys

MB = 1e6
ELEMENTS = 1 << 28
# Bytes per element each stream kernel must move (4-byte floats), by its template argument (the
# op numbers of src/sweeps/cuda/stream_kernels.hpp: add 0, copy 1, scale 2, triad 3) or name (read).
STREAM_BYTES = {"vec4_kernel<0>": 12, "vec4_kernel<1>": 8, "vec4_kernel<2>": 8, "vec4_kernel<3>": 12,
                "read_vec4_kernel": 4}


def load(path):
    """Kernels in launch order (name, correlation, ts, dur, counters dict or None), the counter metadata, and the step ranges."""
    with open(path) as f:
        doc = json.load(f)
    meta = doc.get("ridge", {}).get("counters", {})
    metrics = meta.get("metrics", [])
    rows = {r["correlation"]: dict(zip(metrics, r["values"])) for r in meta.get("rows", [])}
    kernels, steps = [], []
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            c = e["args"]["correlation"]
            kernels.append((e["name"], c, e["ts"], e["dur"], rows.get(c)))
        elif e.get("ph") == "X" and e.get("name") == "step" and e.get("cat") != "kernel":
            steps.append((e["ts"], e["ts"] + e["dur"]))
    kernels.sort(key=lambda k: k[1])
    steps.sort()
    return kernels, meta, steps


def flops(c):
    total = 0.0
    for m, v in c.items():
        if v is None:
            continue
        if m.startswith("smsp__sass_thread_inst_executed_op_"):
            total += v * (2 if m[len("smsp__sass_thread_inst_executed_op_") + 1:].startswith("fma") else 1)
        elif m.startswith("sm__ops_path_tensor_src_"):
            total += v
    return total


def dram(c):
    return (c.get("dram__bytes_read.sum") or 0) + (c.get("dram__bytes_write.sum") or 0)


def padded_gemm_flops(name, m=4096, n=4096, k=4096):
    """2*m*n*k with m and n rounded up to the kernel's tile (cuBLAS's nvjet names carry it, e.g.
    tst_176x128_...): the tensor cores also multiply the padding of a tile that overhangs the matrix."""
    import re
    tile = re.search(r"_(\d+)x(\d+)_\d+x\d+_", name)
    if tile is None:
        return 2 * m * n * k
    tm, tn = int(tile.group(1)), int(tile.group(2))
    return 2 * (-(-m // tm) * tm) * (-(-n // tn) * tn) * k


def check_known(paths):
    failed = False
    print(f"{'kernel':<60} {'measured':>14} {'expected':>14} {'ratio':>8} {'vs 2mnk':>8}")
    for path in paths:
        kernels, _, _ = load(path)
        for name, _, _, _, c in kernels:
            if c is None:
                continue
            op = next((o for o in STREAM_BYTES if o in name and not (o == "vec4_kernel<0>" and "read_" in name)), None)
            if op is not None and dram(c) > 0.5 * STREAM_BYTES[op] * ELEMENTS:
                measured, expected = dram(c), STREAM_BYTES[op] * ELEMENTS
            elif flops(c) > 1e11:
                measured, expected = flops(c), padded_gemm_flops(name)
            else:
                continue
            ratio = measured / expected
            ok = abs(ratio - 1) <= 0.01
            failed |= not ok
            vs_2mnk = f"{measured / (2 * 4096**3):.4f}" if op is None else "-"
            print(f"{name[:60]:<60} {measured:>14.4g} {expected:>14.4g} {ratio:>8.4f} {vs_2mnk:>8} {'ok' if ok else 'OFF'}")
    return failed


def ncu_rows(path):
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    reader = list(csv.reader(lines))
    header, rows = reader[0], [r for r in reader[2:] if r and r[0].isdigit()]
    return [dict(zip(header, r)) for r in rows]


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def profiled_launches(path):
    """The profiled launches in launch order: (name, grid, block, counters). CUPTI gives kernels of
    its own (the range profiler's WaitNs) the correlation id of the launch they serialize: a row
    belongs to the kernel whose grid and block it recorded (files written before rows kept a shape:
    the kernel not named WaitNs)."""
    with open(path) as f:
        doc = json.load(f)
    meta = doc.get("ridge", {}).get("counters", {})
    metrics = meta.get("metrics", [])
    rows = {r["correlation"]: r for r in meta.get("rows", [])}
    out = {}
    for e in doc["traceEvents"]:
        if e.get("cat") != "kernel" or e["args"].get("correlation") not in rows:
            continue
        row = rows[e["args"]["correlation"]]
        grid, block = list(e["args"].get("grid", [])), list(e["args"].get("block", []))
        mine = (grid == row["grid"] and block == row["block"]) if "grid" in row else e["name"] != "WaitNs"
        if mine:
            out[row["correlation"]] = (e["name"], grid, block, dict(zip(metrics, row["values"])))
    return [out[c] for c in sorted(out)]


def ncu_shape(text):
    return [int(v) for v in text.strip("()").split(",")]


def check_ncu(trace, ncu_csv):
    """Nsight Compute profiled the first launches of the same window (--launch-count): pair them
    with ridge's first profiled launches in order, by grid and block."""
    ours = profiled_launches(trace)
    theirs = ncu_rows(ncu_csv)
    metrics = [m for m in ours[0][3]] if ours else []
    print(f"ridge profiled {len(ours)} launches, ncu {len(theirs)}: the first {min(len(ours), len(theirs))} paired in order")
    failed, compared = False, 0
    print(f"{'#':>4} {'kernel':<50} {'DRAM ridge':>12} {'DRAM ncu':>12} {'FLOP ridge':>12} {'FLOP ncu':>12}")
    # ridge leaves out launches whose shape changed between its passes (a growing KV cache): each
    # of its launches pairs with the next of ncu's of the same grid and block, a few launches ahead at most.
    j = 0
    for i, (name, grid, block, c) in enumerate(ours):
        ahead = next((k for k in range(j, min(j + 4, len(theirs)))
                      if ncu_shape(theirs[k]["Grid Size"]) == grid and ncu_shape(theirs[k]["Block Size"]) == block), None)
        if ahead is None:
            if j < len(theirs):
                print(f"launch {i}: ridge ran {name[:60]} {grid}x{block}, no launch of that shape among ncu's next four:"
                      " the launch orders part here, nothing after is compared")
                failed = True
            break
        for k in range(j, ahead):
            print(f"     ncu launch {k} ({theirs[k]['Kernel Name'][:50]} {theirs[k]['Grid Size']}): no counters in ridge's trace")
        n, j = theirs[ahead], ahead + 1
        theirs_c = {m: number(n[m]) for m in metrics if m in n}
        if dram(theirs_c) < MB:
            continue
        compared += 1
        d_ok = abs(dram(c) - dram(theirs_c)) <= 0.02 * dram(theirs_c)
        f_ok = abs(flops(c) - flops(theirs_c)) <= 0.02 * max(flops(theirs_c), 1.0)
        failed |= not (d_ok and f_ok)
        print(f"{i:>4} {name[:50]:<50} {dram(c):>12.4g} {dram(theirs_c):>12.4g} {flops(c):>12.4g} {flops(theirs_c):>12.4g}"
              f" {'ok' if d_ok and f_ok else 'OFF'}")
    print(f"{compared} kernels with >= 1 MB of DRAM traffic compared; {'FAILED' if failed else 'all within 2%'}")
    return failed


def step_kernel_times(path, first_step):
    kernels, _, steps = load(path)
    totals = []
    for begin, end in steps[first_step:]:
        totals.append(sum(k[3] for k in kernels if begin <= k[2] <= end and k[4] is None))
    return totals


def check_timing(plain, counted, first_step=13):
    first_step = int(first_step)  # from the command line: the first step after the steps the window took
    a, b = step_kernel_times(plain, first_step), step_kernel_times(counted, first_step)
    ratio = statistics.median(b) / statistics.median(a)
    print(f"kernel time per step, steps {first_step}+: without counters {statistics.median(a):.1f} us, with counters "
          f"(the profiled window before step {first_step}) {statistics.median(b):.1f} us: ratio {ratio:.4f}")
    return abs(ratio - 1) > 0.01


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    bad = {"known": lambda: check_known(args), "ncu": lambda: check_ncu(*args), "timing": lambda: check_timing(*args)}[mode]()
    sys.exit(1 if bad else 0)
