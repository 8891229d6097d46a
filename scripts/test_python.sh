#!/usr/bin/env bash
# Builds and installs the Python package into a fresh virtual environment (PyPI dependencies
# only: scikit-build-core, nanobind, numpy, pytest) and runs its tests. GPU tests (marker `gpu`)
# skip, saying why, where no GPU is usable. RIDGE_VENV: where to make the environment.
# --system-site-packages: use an existing environment's packages (e.g. PyTorch on the GPU machine)
# and build without isolation, offline.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
venv="${RIDGE_VENV:-build/python-venv}"
python="${PYTHON:-python3}"
if [ "${1:-}" = --system-site-packages ]; then
  "$python" -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --no-build-isolation --no-deps .
else
  rm -rf "$venv"
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q ".[test]"
fi
# Run from outside the source tree, so `import ridge` finds the installed package.
cd python/tests && "../../$venv/bin/python" -m pytest -q -p no:cacheprovider .
