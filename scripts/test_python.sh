#!/usr/bin/env bash
# Builds the Python package as a wheel, checks what the wheel holds (the extension, its type stubs,
# py.typed, the command-line tool), installs it into a virtual environment and runs its tests. GPU
# tests (marker `gpu`) skip, saying why, where no GPU is usable.
#
# The wheel is built in ./build, the folder scripts/setup.sh built: only the extension compiles, the
# libraries are reused (a wheel built from nothing takes as long as the whole of setup.sh).
# RIDGE_VENV: where to put the environment (the wheel goes to its `wheels/`); PYTHON: which Python.
# --current-env: build offline with the current Python's packages (e.g. the GPU machine's PyTorch
# environment) and install the wheel into RIDGE_VENV as a plain folder put on PYTHONPATH.
# Arguments after -- go to pytest (e.g. `-- test_trace.py -k counters`); the default is every test.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then export PATH=/usr/local/cuda/bin:$PATH; fi
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export CMAKE_GENERATOR=Ninja  # the generator scripts/setup.sh configured ./build with
if [ ! -f build/CMakeCache.txt ]; then
  echo "test_python: no ./build: run scripts/setup.sh first (it builds what the wheel reuses)" >&2; exit 1
fi
venv="$(pwd)/${RIDGE_VENV:-build/python-venv}"
python="${PYTHON:-python3}"
rm -rf "$venv"
wheels="$venv/wheels"
# The wheel reuses ./build; CMake arguments given to setup.sh stay in its cache.
build_wheel() { "$1" -m pip wheel -q --no-build-isolation --no-deps -C build-dir=build -w "$wheels" .; }
if [ "${1:-}" = --current-env ]; then
  build_wheel "$python"
else
  "$python" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  # nvidia-cuda-cupti: the CUPTI PyTorch's CUDA wheels install (test_no_gpu.py); mypy: test_python_standard.py.
  "$venv/bin/pip" install -q scikit-build-core nanobind numpy pytest pandas lizard mypy "nvidia-cuda-cupti==13.2.86"
  build_wheel "$venv/bin/python"
fi
wheel=$(ls "$wheels"/ridge-*.whl)
# A wheel that imports from the build tree can still lack files: check it holds what ships.
"$python" - "$wheel" <<'PY'
import re, sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
wanted = {"the extension": r"ridge/_ridge\..*(so|pyd)$", "its type stubs": r"ridge/_ridge\.pyi$",
          "py.typed": r"ridge/py\.typed$", "the Python layer": r"ridge/__init__\.py$",
          "the command-line tool": r"ridge/bin/ridge$", "the tracer's injection library": r"ridge/lib/libridge_inject\.so$"}
missing = [what for what, pattern in wanted.items() if not any(re.match(pattern, n) for n in names)]
if missing:
    sys.exit(f"{sys.argv[1]} lacks {', '.join(missing)}; it holds: {', '.join(names)}")
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {len(names)} files, with {', '.join(wanted)}")
PY
if [ "${1:-}" = --current-env ]; then
  "$python" -m pip install -q --no-deps --target "$venv" "$wheel"
  export PYTHONPATH="$venv${PYTHONPATH:+:$PYTHONPATH}"
else
  "$venv/bin/pip" install -q --no-deps "$wheel"
  python="$venv/bin/python"
fi
# Run from the tests' folder, so `import ridge` finds the installed package, not the sources.
pytest_args=(.)
for i in $(seq 1 $#); do
  if [ "${!i}" = -- ]; then pytest_args=("${@:i+1}"); break; fi
done
cd python/tests && "$python" -m pytest -q -p no:cacheprovider "${pytest_args[@]}"
