"""The Python example runs end to end on a GPU (its --quick form) and writes what it says."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ridge

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "first_measurements.py"


@pytest.mark.gpu
def test_first_measurements_example(tmp_path):
    pytest.importorskip("torch")
    if not EXAMPLE.exists():
        pytest.skip(f"{EXAMPLE} is not beside these tests")
    run = subprocess.run([sys.executable, str(EXAMPLE), "--quick", "--out", str(tmp_path)], capture_output=True,
                         text=True, timeout=600, env=dict(os.environ))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for name in ("results.json", "bandwidth.svg", "matmul.svg", "roofline.svg", "trace.json"):
        assert (tmp_path / name).stat().st_size > 0, name
    results = ridge.Results.load(tmp_path / "results.json")
    assert len(results) == 3 + 4 + 3  # three timers, four x + y sizes, three matmul sizes
    summary = json.loads((tmp_path / "summary.json").read_text())
    steps = summary["kernels_per_step"]
    assert len(steps) == 5 and len(set(steps)) == 1 and steps[0] > 12 * 5, steps  # >= 5 kernels per layer
    assert 0 <= summary["step_gpu_idle_median"] < 1
    assert "1. FP32 4096^2 matmul" in run.stdout and "CUDA events" in run.stdout
