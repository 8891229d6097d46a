#!/usr/bin/env bash
# ridge collectives against nccl-tests 2.19.6 on the same GPUs in the same session: all_reduce,
# all_gather and reduce_scatter, fp32, out-of-place and in-place, 1 MiB .. 1 GiB. Prints time and
# the bandwidth ratio ridge / nccl-tests per size (busbw; algbw at world size 1, where busbw is 0 by
# definition). The issue's bar: ridge's busbw at least 0.98x nccl-tests' from 1 MiB up.
#
#   bash bench/collectives_vs_nccl_tests.sh [NCCL_TESTS_TARBALL]
#
# Environment: RIDGE (default build/bin/ridge), OUT (default runs/collectives_vs_nccl_tests),
# GPUS (default: every visible GPU, one thread each in both tools), NCCL_LIB (folder holding
# libnccl.so.2; default: the nvidia-nccl wheel of python3), NCCL_INCLUDE (folder holding nccl.h;
# default /usr/include), ITERS (nccl-tests -n, default 50).
set -euo pipefail
cd "$(dirname "$0")/.."
tarball=${1:-bench/peers/nccl-tests-2.19.6.tar.gz}
RIDGE=${RIDGE:-build/bin/ridge}
OUT=${OUT:-runs/collectives_vs_nccl_tests}
ITERS=${ITERS:-50}
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on shared machines (ridge forces it too)
mkdir -p "$OUT"

if [ -z "${NCCL_LIB:-}" ]; then
  NCCL_LIB=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
fi
[ -f "${NCCL_LIB:-}/libnccl.so.2" ] || { echo "no libnccl.so.2 in '${NCCL_LIB:-}': set NCCL_LIB" >&2; exit 1; }
NCCL_INCLUDE=${NCCL_INCLUDE:-/usr/include}
[ -f "$NCCL_INCLUDE/nccl.h" ] || { echo "no nccl.h in $NCCL_INCLUDE: set NCCL_INCLUDE" >&2; exit 1; }
GPUS=${GPUS:-$(nvidia-smi -L | wc -l)}

# ---- nccl-tests, built once against the same NCCL ridge loads ----------------------------------
peer=$OUT/nccl-tests
if [ ! -x "$peer/build/all_reduce_perf" ]; then
  rm -rf "$peer" && mkdir -p "$peer/home/include" "$peer/home/lib"
  tar xzf "$tarball" -C "$peer" --strip-components=1
  ln -sf "$NCCL_INCLUDE/nccl.h" "$peer/home/include/nccl.h"
  ln -sf "$NCCL_LIB/libnccl.so.2" "$peer/home/lib/libnccl.so"
  make -C "$peer" -j "$(nproc)" MPI=0 CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} NCCL_HOME="$PWD/$peer/home" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$OUT/nccl-tests-build.log" 2>&1 ||
    { tail -30 "$OUT/nccl-tests-build.log" >&2; exit 1; }
fi

ops="all_reduce all_gather reduce_scatter"
for op in $ops; do
  LD_LIBRARY_PATH=$NCCL_LIB:${LD_LIBRARY_PATH:-} "$peer/build/${op}_perf" -b 1M -e 1G -f 2 -g "$GPUS" -d float \
    -n "$ITERS" -w 10 -c 1 >"$OUT/nccl-tests-$op.txt"
done

# ---- ridge: the same sizes, dtype and GPUs -------------------------------------------------------
RIDGE_NCCL_LIBRARY=$NCCL_LIB/libnccl.so.2 "$RIDGE" collectives --ops all_reduce,all_gather,reduce_scatter \
  --sizes 2^20:2^30:2 --dtypes fp32 --placement out,in --method events --gpus "$GPUS" \
  --json "$OUT/ridge.json" --svg "$OUT/ridge-collectives.svg" >"$OUT/ridge.txt"

python3 - "$OUT" $ops <<'PY'
import json, sys
out, ops = sys.argv[1], sys.argv[2:]
ridge = {}
for r in json.load(open(f"{out}/ridge.json"))["records"]:
    p = r["params"]
    ridge[(p["op"], p["placement"], p["bytes"])] = (r["summary"]["median"] * 1e3, r["extra"]["algbw_bytes_per_s"] / 1e9,
                                                    r["extra"]["busbw_bytes_per_s"] / 1e9)
print(f"{'op':<15} {'place':<7} {'size':>10} {'ridge us':>10} {'nccl us':>10} {'time r/n':>9} {'bw':>6} {'ridge GB/s':>11} {'nccl GB/s':>10} {'bw r/n':>7}")
worst = None
for op in ops:
    for line in open(f"{out}/nccl-tests-{op}.txt"):
        f = line.split()
        if not f or not f[0].isdigit() or len(f) < 13:
            continue
        size = int(f[0])
        # out-of-place: time algbw busbw #wrong at f[5:9]; in-place at f[9:13]
        for place, base in (("out_of_place", 5), ("in_place", 9)):
            key = (op, place, size)
            if key not in ridge:
                continue
            n_us, n_alg, n_bus = float(f[base]), float(f[base + 1]), float(f[base + 2])
            r_us, r_alg, r_bus = ridge[key]
            which, rb, nb = ("busbw", r_bus, n_bus) if n_bus > 0 else ("algbw", r_alg, n_alg)
            ratio = rb / nb if nb > 0 else float("nan")
            worst = ratio if worst is None else min(worst, ratio)
            print(f"{op:<15} {place[:6]:<7} {size:>10} {r_us:>10.1f} {n_us:>10.1f} {r_us / n_us:>9.3f} {which:>6} {rb:>11.2f} {nb:>10.2f} {ratio:>7.3f}")
print(f"\nlowest bandwidth ratio ridge / nccl-tests at >= 1 MiB: {worst:.3f} (the bar: 0.98)")
PY
