"""Every GPU-facing call of the public API on a machine without a usable GPU: each raises
NoGpuError naming itself, none crashes, whatever CUPTI is installed (PyTorch's CUDA wheels bring
NVIDIA's nvidia-cuda-cupti, whose CUPTI crashed the first NVTX push when no driver is present).

Each call runs in a fresh interpreter, so a segfault shows as its exit status, not as a lost run.
CI installs nvidia-cuda-cupti (scripts/test_python.sh) and sets RIDGE_REQUIRE_WHEEL_CUPTI=1, so
these tests cannot pass there without that CUPTI present."""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import ridge
from ridge import _cupti

pytestmark = pytest.mark.skipif(ridge.device_count() > 0, reason="a GPU is usable here: these calls would run")

# (the name the message must carry, the call); each must raise ridge.NoGpuError.
GPU_CALLS = [
    ("ridge.measure_cuda", "ridge.measure_cuda(lambda: None)"),
    ("ridge.measure_spin", "ridge.measure_spin(lambda: None)"),
    ("ridge.measure_graph", "ridge.measure_graph(lambda: None)"),
    ("ridge.measure_wall", "ridge.measure_wall(lambda: None, cuda=True)"),
    ("ridge.measure_cuda", "ridge.measure('events', lambda: None)"),
    ("ridge.ceilings", "ridge.ceilings(0)"),
    ("ridge.ceilings", "ridge.ceilings(0, refresh=True)"),
    ("ridge.require_gpu", "ridge.require_gpu()"),
    ("ridge.describe_device", "ridge.describe_device()"),
    ("ridge.sweep", "ridge.sweep(lambda n: (lambda: None), [1024], ceilings=0)"),
    ("ridge.sweep", "ridge.sweep(lambda n: (lambda: None), [1024])"),
    ("ridge.place_matmul", "ridge.place_matmul(16, 4096, 4096, 'bf16')"),
    ("ridge.roofline", "ridge.roofline()"),
    ("ridge.trace", "ridge.trace(None).__enter__()"),
    ("ridge.trace", "ridge.trace(None, counters='roofline', counters_first=1).__enter__()"),
]

CALL = textwrap.dedent("""
    import ridge
    try:
        {call}
    except ridge.NoGpuError as error:
        print("NoGpuError:", error)
    else:
        raise SystemExit("returned without raising NoGpuError")
""")


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_ci_has_the_cupti_of_pytorchs_wheels_installed():
    if os.environ.get("RIDGE_REQUIRE_WHEEL_CUPTI") != "1":
        pytest.skip("RIDGE_REQUIRE_WHEEL_CUPTI is not set: the crash is checked with whichever CUPTI is here")
    assert _cupti.wheel_cupti() is not None, "nvidia-cuda-cupti is not installed: pip install nvidia-cuda-cupti"


@pytest.mark.parametrize("name,call", GPU_CALLS, ids=[call for _, call in GPU_CALLS])
def test_each_gpu_call_raises_no_gpu_error_naming_itself(name, call):
    done = run_python(CALL.format(call=call))
    assert done.returncode == 0, f"exit {done.returncode}: {done.stdout}{done.stderr}"
    message = done.stdout
    assert message.startswith(f"NoGpuError: {name}"), message
    # What to do, never a C++ source path or a misleading driver-version text.
    assert ".cpp" not in message and ".hpp" not in message, message
    assert "driver version is insufficient" not in message, message


@pytest.mark.parametrize("first", ["ridge", "torch"])
def test_an_nvtx_range_without_a_gpu_is_a_no_op_not_a_crash(first):
    if first == "torch":
        pytest.importorskip("torch", reason="PyTorch is not installed here")
    imports = "import torch, ridge" if first == "torch" else "import ridge"
    done = run_python(f"{imports}\nwith ridge.nvtx('step'):\n    ridge._ridge.nvtx_mark('inside')\nprint('ok')")
    assert done.returncode == 0 and done.stdout.strip() == "ok", f"exit {done.returncode}: {done.stdout}{done.stderr}"


def test_no_cupti_is_preloaded_without_a_driver():
    # Nothing can trace without a driver, so the wheel's CUPTI (only loaded to share it with a
    # framework that traces) stays out of the process.
    done = run_python("import ridge\nprint(ridge._cupti.PRELOADED)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None", done.stdout


def test_the_wheel_cupti_is_checked_before_it_is_used(tmp_path):
    # A file that is not a CUPTI of ridge's major version is never preloaded.
    fake = tmp_path / "libcupti.so.13"
    fake.write_bytes(b"not a library")
    assert _cupti.usable_cupti(str(fake)) is False
    wheel = _cupti.wheel_cupti()
    if wheel is not None and _cupti.driver_cuda_version() == 0:
        assert _cupti.usable_cupti(wheel) is False  # a real CUPTI, but no driver to trace with


def test_the_first_measurements_example_says_it_needs_a_gpu_and_writes_nothing(tmp_path):
    pytest.importorskip("torch", reason="the example imports PyTorch first")
    example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "first_measurements.py"
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(example), "--quick", "--out", str(out)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1 and "needs" not in done.stdout, done.stdout + done.stderr
    assert "none is usable here" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert not out.exists()
