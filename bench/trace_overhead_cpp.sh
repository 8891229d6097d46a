#!/usr/bin/env bash
# Where the tracer's cost comes from, per CUPTI setting, on a pure C++ program (no Python):
# bench/trace_overhead_probe.cu run untraced and under libridge_inject.so with one setting at a
# time, interleaved over ROUNDS rounds; prints each probe test's median per setting and its excess
# over untraced.
#
#   bench/trace_overhead_cpp.sh [FOLDER]   FOLDER holds lib/libridge_inject.so and
#                                          trace_overhead_probe (built if missing, from bench/)
#   ROUNDS=2  PROBE_ARGS="10000 3 50"  CONFIGS="label ..." (default: all below)
#   results: $OUT/probe or runs/probe
set -uo pipefail
FOLDER=$(cd "${1:-.}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
LIB="$FOLDER/lib/libridge_inject.so"
PROBE="$FOLDER/trace_overhead_probe"
[[ -x $PROBE ]] || nvcc -O2 -arch=sm_90 -o "$PROBE" "$HERE/trace_overhead_probe.cu" || exit 1
DIR="${OUT:-runs}/probe"
ROUNDS=${ROUNDS:-2}
PROBE_ARGS=${PROBE_ARGS:-10000 3 50}
mkdir -p "$DIR"

source "$HERE/trace_overhead_settings.sh"
CONFIGS=${CONFIGS:-$ORDER}

for round in $(seq 0 $((ROUNDS - 1))); do
  for label in $CONFIGS; do
    traced_run "$label" "$LIB" "$DIR/$label.$round.summary.json" "$PROBE" $PROBE_ARGS \
        > "$DIR/$label.$round.txt" 2> "$DIR/$label.$round.stderr"
    echo "round $round $label: rc $?"
  done
done

python3 - "$DIR" "$CONFIGS" "$ROUNDS" <<'PYEOF'
import json, statistics, sys
d, labels, rounds = sys.argv[1], sys.argv[2].split(), int(sys.argv[3])
values = {}
for label in labels:
    for r in range(rounds):
        try:
            for line in open(f"{d}/{label}.{r}.txt"):
                p = line.split()
                if len(p) == 4 and p[0] == "probe":
                    values.setdefault(label, {}).setdefault(p[1], []).append(float(p[2]))
        except OSError:
            pass
tests = list(values.get("untraced", {}).keys()) or sorted({t for v in values.values() for t in v})
med = {l: {t: statistics.median(v) for t, v in values.get(l, {}).items()} for l in labels}
base = med.get("untraced", {})
rows = ["| setting | " + " | ".join(tests) + " | records | buffers | completion ms |",
        "|---|" + "---|" * (len(tests) + 3)]
for l in labels:
    cells = []
    for t in tests:
        v = med[l].get(t)
        if v is None:
            cells.append("-")
        elif l == "untraced" or t not in base:
            cells.append(f"{v:.0f}")
        else:
            cells.append(f"{v:.0f} (+{v - base[t]:.0f})")
    stats = {}
    try:
        stats = json.load(open(f"{d}/{l}.0.summary.json")).get("collector_stats", {})
    except (OSError, ValueError):
        pass
    rows.append(f"| {l} | " + " | ".join(cells) + f" | {stats.get('records', '')} | {stats.get('buffers_completed', '')} | "
                + (f"{1e3 * stats['completion_seconds']:.1f}" if 'completion_seconds' in stats else "") + " |")
text = "ns per operation (median of rounds; + excess over untraced)\n\n" + "\n".join(rows) + "\n"
open(f"{d}/probe.md", "w").write(text)
json.dump(med, open(f"{d}/probe.json", "w"), indent=1)
print(text)
PYEOF
