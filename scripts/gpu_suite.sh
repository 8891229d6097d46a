#!/usr/bin/env bash
# On a GPU machine, from a fresh copy of the repository: builds ridge, runs the whole test suite
# (CPU and GPU), a full `ridge report`, the Python package's tests and the Python-vs-Triton
# comparison, and leaves their logs in OUT_DIR (default runs/gpu-suite). Needs CUDA 13, CMake,
# Ninja and, for the Python part, an environment with PyTorch, Triton, nanobind and
# scikit-build-core (the GPU machine's).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-runs/gpu-suite}"
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
{ git log --oneline -1; nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv; } > "$out/environment.txt" 2>&1
scripts/setup.sh > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
ctest --test-dir build -j4 --output-on-failure > "$out/ctest.log" 2>&1; ctest_rc=$?
{ time build/bin/ridge report -o "$out/report" --force ; } > "$out/report.log" 2>&1; report_rc=$?
RIDGE_VENV=build/python-site scripts/test_python.sh --current-env > "$out/pytest.log" 2>&1; pytest_rc=$?
PYTHONPATH=build/python-site python3 bench/python_vs_triton.py --out "$out" > "$out/python_vs_triton.log" 2>&1; bench_rc=$?
grep -E "tests passed|tests failed" "$out/ctest.log"; tail -1 "$out/pytest.log"; tail -3 "$out/report.log"
cat "$out/python_vs_triton.md" 2>/dev/null
echo "ctest $ctest_rc report $report_rc pytest $pytest_rc bench $bench_rc"
[ $ctest_rc -eq 0 ] && [ $report_rc -eq 0 ] && [ $pytest_rc -eq 0 ] && [ $bench_rc -eq 0 ]
