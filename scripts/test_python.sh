#!/usr/bin/env bash
# Builds and installs the Python package into a fresh virtual environment (PyPI dependencies
# only: scikit-build-core, nanobind, numpy, pytest) and runs its tests. GPU tests (marker `gpu`)
# skip, saying why, where no GPU is usable. RIDGE_VENV: where to put the environment.
# --current-env: build offline with the current Python's packages (e.g. the GPU machine's
# PyTorch environment) and install into RIDGE_VENV as a plain folder put on PYTHONPATH.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
venv="$(pwd)/${RIDGE_VENV:-build/python-venv}"
python="${PYTHON:-python3}"
rm -rf "$venv"
if [ "${1:-}" = --current-env ]; then
  "$python" -m pip install -q --no-build-isolation --no-deps --target "$venv" .
  export PYTHONPATH="$venv${PYTHONPATH:+:$PYTHONPATH}"
else
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q ".[test]"
  python="$venv/bin/python"
fi
# Run from the tests' folder, so `import ridge` finds the installed package, not the sources.
cd python/tests && "$python" -m pytest -q -p no:cacheprovider .
