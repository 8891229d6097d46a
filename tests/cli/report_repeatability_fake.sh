#!/usr/bin/env bash
# cli.report_repeatability_script: bench/report_repeatability.sh run end to end with a stand-in for
# `ridge report` (no GPU needed): each "report" writes a synthetic results.json shaped like an
# H200 report (timing exercise, a GEMM, decode), where the host's launch latency moves from
# process to process by ~15% and every median by ~0.3%; --inject-slowdown-us adds its time to the
# large matmul's records. `ridge compare` is the real one. Checks:
#   - with the producers' gates (what ridge writes now): every pairwise compare exits 0, the
#     slowed run is flagged, the script exits 0;
#   - the same reports without gates (an older ridge): the host-latency record is flagged in some
#     pair and the script exits non-zero, so it does catch a gate that cries wolf.
# Usage: report_repeatability_fake.sh RIDGE_BIN SOURCE_DIR WORK_DIR
set -u
ridge=$1 source=$2 work=$3
command -v python3 >/dev/null || { echo "python3 not found: skipped"; exit 77; }
rm -rf "$work"; mkdir -p "$work"
fake="$work/fake-ridge"
cat >"$fake" <<FAKE
#!/usr/bin/env bash
# report -o DIR [--inject-slowdown-us US]: a synthetic report; anything else: the real ridge.
if [ "\$1" = report ]; then
  shift; dir= slow=0
  while [ \$# -gt 0 ]; do
    case \$1 in -o) dir=\$2; shift 2 ;; --inject-slowdown-us) slow=\$2; shift 2 ;; *) shift ;; esac
  done
  mkdir -p "\$dir" && exec python3 "$source/tests/cli/fake_report.py" "\$dir" "\$slow"
fi
exec "$ridge" "\$@"
FAKE
chmod +x "$fake"

runs=4
if ! OUT="$work/gated" RIDGE="$fake" bash "$source/bench/report_repeatability.sh" "$runs" >"$work/gated.log" 2>&1; then
  cat "$work/gated.log"; echo "FAIL: with gates the script did not pass"; exit 1
fi
grep -q "$runs reports, $((runs * (runs - 1) / 2)) pairwise compares" "$work/gated.log" || { cat "$work/gated.log"; echo "FAIL: no summary"; exit 1; }
grep -Eq "^slowed-vs-run-1 .* 5 +5  ok +timing .*cuda_events fp32 [^;]*case=large" "$work/gated.log" ||
  { cat "$work/gated.log"; echo "FAIL: the slowed large matmul was not flagged against run 1"; exit 1; }
grep -Eq "^slowed-vs-all-runs .* 5 +5  ok" "$work/gated.log" || { cat "$work/gated.log"; echo "FAIL: not flagged against all runs"; exit 1; }
grep -Eq "slowdown 27[0-9]\.[0-9] us \(10% of run 1's large matmul\)" "$work/gated.log" ||
  { grep slowdown "$work/gated.log"; echo "FAIL: slowdown not sized from run 1"; exit 1; }

if FAKE_REPORT_NO_GATES=1 OUT="$work/ungated" RIDGE="$fake" bash "$source/bench/report_repeatability.sh" "$runs" >"$work/ungated.log" 2>&1; then
  cat "$work/ungated.log"; echo "FAIL: without gates the host-latency shifts passed (the fixture lost its point)"; exit 1
fi
grep -Eq "^pair-.*FAIL \(expected 0\) +timing cuda_events bf16 .*case=small" "$work/ungated.log" ||
  { cat "$work/ungated.log"; echo "FAIL: the ungated failure was not the host-latency record"; exit 1; }
echo "ok: gated reports pass every pair and flag the slowdown; ungated ones cry wolf"
