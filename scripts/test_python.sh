#!/usr/bin/env bash
# Builds the Python package as a wheel (`pip wheel .`), checks what the wheel holds (the
# extension, its type stubs, py.typed), installs that wheel into a fresh virtual environment
# (PyPI dependencies only: scikit-build-core, nanobind, numpy, pytest) and runs its tests. GPU
# tests (marker `gpu`) skip, saying why, where no GPU is usable. RIDGE_VENV: where to put the
# environment (the wheel goes to its `wheels/`).
# --current-env: build offline with the current Python's packages (e.g. the GPU machine's
# PyTorch environment) and install the wheel into RIDGE_VENV as a plain folder put on PYTHONPATH.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
# A fresh clone (CI) builds the wheel from nothing: ccache, where installed, keeps that cheap.
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}"
  export CMAKE_CUDA_COMPILER_LAUNCHER="${CMAKE_CUDA_COMPILER_LAUNCHER:-ccache}"
fi
venv="$(pwd)/${RIDGE_VENV:-build/python-venv}"
python="${PYTHON:-python3}"
rm -rf "$venv"
wheels="$venv/wheels"
if [ "${1:-}" = --current-env ]; then
  "$python" -m pip wheel -q --no-build-isolation --no-deps -w "$wheels" .
else
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" wheel -q --no-deps -w "$wheels" .
fi
wheel=$(ls "$wheels"/ridge-*.whl)
# A wheel that imports from the build tree can still lack files: check it holds what ships.
"$python" - "$wheel" <<'PY'
import re, sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
wanted = {"the extension": r"ridge/_ridge\..*(so|pyd)$", "its type stubs": r"ridge/_ridge\.pyi$",
          "py.typed": r"ridge/py\.typed$", "the Python layer": r"ridge/__init__\.py$"}
missing = [what for what, pattern in wanted.items() if not any(re.match(pattern, n) for n in names)]
if missing:
    sys.exit(f"{sys.argv[1]} lacks {', '.join(missing)}; it holds: {', '.join(names)}")
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {len(names)} files, with the extension, stubs and py.typed")
PY
if [ "${1:-}" = --current-env ]; then
  "$python" -m pip install -q --no-deps --target "$venv" "$wheel"
  export PYTHONPATH="$venv${PYTHONPATH:+:$PYTHONPATH}"
else
  "$venv/bin/pip" install -q "$wheel[test]"
  python="$venv/bin/python"
fi
# Run from the tests' folder, so `import ridge` finds the installed package, not the sources.
cd python/tests && "$python" -m pytest -q -p no:cacheprovider .
