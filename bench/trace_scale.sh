#!/usr/bin/env bash
# trace_scale.sh OUTDIR [OLD_ANALYZER]: the figures of results/cpu/trace_scale/. Writes the
# synthetic trace of a long run (build/bin/trace_scale: 5,000 and 10,000 steps of 200 kernels,
# NVTX step ranges, a launch call per kernel joined by its correlation id) as Chrome JSON and as
# Perfetto's .pftrace, then times the analysis of each with /usr/bin/time -v (wall and CPU time,
# peak resident memory). The analyzer is a command that takes the file last: $ANALYZER, by
# default "build/bin/ridge trace --analyze"; build/bin/trace_analyze is the same library call
# without the CLI. OLD_ANALYZER (one built before the streamed reader, e.g. "/tmp/old/ridge trace
# --analyze") also analyzes the JSON files. Build first: ninja -C build ridge_cli trace_scale trace_analyze
set -u
out=${1:?usage: trace_scale.sh OUTDIR [OLD_ANALYZER]}; old=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd); build=${BUILD:-$root/build}  # BUILD: another build folder
analyzer=${ANALYZER:-$build/bin/ridge trace --analyze}
mkdir -p "$out"; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
{ lscpu | grep -E "Model name|^CPU\(s\)"; free -g | head -2; uptime; git -C "$root" log -1 --format='ridge at %h'
  echo "analyzer: $analyzer"; echo "old analyzer: ${old:-none}"; } > "$out/machine.txt" 2>&1
measure() {  # measure LABEL BINARY FILE: one line of the table
  # shellcheck disable=SC2086  # the analyzer is a command with its arguments
  /usr/bin/time -v $2 "$3" > "$work/run.txt" 2> "$work/time.txt"
  local rc=$? wall cpu rss
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {printf "%.2f", s}' "$work/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
  # CPU seconds (user + system) beside the wall time: on a loaded machine they move less.
  printf '%-7s %-8s %-12s %8s kernels %7.1f MB  wall %8s  cpu %7s s  peak RSS %6.0f MB  load %s  exit %d\n' "$1" "${3##*.}" \
    "launches=$launches" "$kernels" "$(echo "$(stat -c %s "$3") / 1000000" | bc -l)" "$wall" "$cpu" "$(echo "$rss / 1024" | bc -l)" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$rc"
  cp "$work/run.txt" "$out/analysis_$1_${kernels}_launches_${launches}_${3##*.}.txt"
}
# Two shapes: kernels and step ranges only (the issue's 310 MB trace of 1M kernels), and with a
# launch call per kernel (twice the JSON: the calls and their flow arrows).
for steps in 5000 10000; do
  kernels=$((steps * 200))
  for launches in no yes; do
    for ext in json pftrace; do
      file=$work/run_${steps}_launches_$launches.$ext
      "$build/bin/trace_scale" --steps "$steps" --kernels-per-step 200 --launches "$launches" --out "$file" > /dev/null || exit 1
      measure after "$analyzer" "$file"
      # The old reader needs ~10x the file in memory: only the smaller size.
      if [ -n "$old" ] && [ "$ext" = json ] && [ "$steps" = 5000 ]; then measure before "$old" "$file"; fi
      rm -f "$file"
    done
  done
done | tee "$out/trace_scale.txt"
