"""Python never passes silently: a compare of nothing raises, DataFrames keep the flags, errors
have the documented types, measurements pickle whole, and the trace session says what it is."""
import copy
import errno
import inspect
import math
import os
import pathlib
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ridge
from ridge import _ridge

SOURCE = pathlib.Path(__file__).resolve().parents[2]
CLI_DATA = SOURCE / "tests" / "cli" / "data"


# ---- 1. compare that compared nothing --------------------------------------------------------

def test_compare_of_unrelated_files_raises_instead_of_passing():
    with pytest.raises(ridge.NothingComparedError, match="no record was compared") as caught:
        ridge.compare(CLI_DATA / "base.json", CLI_DATA / "unrelated.json")
    assert isinstance(caught.value, ridge.Error)
    c = caught.value.comparison
    assert c.nothing_compared and not c.ok and not c.passed
    assert math.isnan(c.geomean_ratio)  # never 0.0, which reads as infinitely faster


def test_compare_of_only_informational_records_raises():
    naive = ridge.Results()
    naive.add(ridge.measure_naive(lambda: None, samples=12), "queue")
    with pytest.raises(ridge.NothingComparedError):
        ridge.compare(naive, naive)


def test_comparison_ok_is_the_ci_check():
    assert ridge.compare(CLI_DATA / "base.json", CLI_DATA / "base.json").ok
    slower = ridge.compare(CLI_DATA / "base.json", CLI_DATA / "slower.json")
    assert slower.regressions and not slower.ok and not slower.nothing_compared
    assert slower.geomean_ratio > 1


def test_a_judged_record_missing_from_the_new_run_is_not_ok():
    # rerun_short.json kept 1 of base.json's 3 judged records (a section that crashed).
    short = ridge.compare(CLI_DATA / "base.json", CLI_DATA / "rerun_short.json")
    assert not short.regressions and not short.nothing_compared
    assert [(r["name"], r["params"]["n"]) for r in short.missing] == [("matmul", 2048), ("matmul", 4096)]
    assert not short.ok
    allowed = ridge.compare(CLI_DATA / "base.json", CLI_DATA / "rerun_short.json", allow_missing=True)
    assert len(allowed.missing) == 2 and allowed.ok


# ---- 2. to_pandas keeps the flags --------------------------------------------------------------

def test_to_pandas_keeps_warnings_verification_gate_and_clocks():
    pytest.importorskip("pandas")
    results = ridge.Results()
    m = ridge.measure_wall(lambda: sum(range(100)), samples=12)
    record = results.add(m, "tiny", flops=1e15, gate={"mode": "informational", "reason": "demo"})
    results.records[-1] = dict(record, warnings=["impossible: 10.9 PFLOP/s"], verification="passed",
                               clocks_start={"sm_mhz": 1980, "memory_mhz": 3201, "power_w": 121,
                                             "temperature_c": 35, "throttle_reasons": 0})
    frame = results.to_pandas()
    row = frame.iloc[0]
    assert row["warnings"] == ["impossible: 10.9 PFLOP/s"]
    assert row["verification"] == "passed"
    assert row["gate.mode"] == "informational" and row["gate.reason"] == "demo"
    assert row["clocks_start.sm_mhz"] == 1980
    assert "extra.stop_reason" in frame.columns and "samples_ms" not in frame.columns
    assert row["median_ms"] == pytest.approx(float(m))


# ---- 3. errors of documented types -------------------------------------------------------------

@pytest.mark.skipif(ridge.device_count() > 0, reason="the no-GPU path")
def test_trace_without_a_gpu_is_no_gpu_error_that_speaks_python(tmp_path):
    with pytest.raises(ridge.NoGpuError, match="ridge.trace needs a CUDA GPU") as caught:
        with ridge.trace(tmp_path / "t.json"):
            pass
    assert "ridge.roofline" in str(caught.value) and "`ridge " not in str(caught.value)


@pytest.mark.skipif(ridge.device_count() > 0, reason="the no-GPU path")
def test_no_gpu_messages_name_python_functions_not_commands():
    for call in (ridge.require_gpu, lambda: ridge.measure_cuda(lambda: None)):
        with pytest.raises(ridge.NoGpuError) as caught:
            call()
        text = str(caught.value)
        assert "needs a CUDA GPU" in text and "ridge.devices()" in text
        assert "ridge roofline" not in text and "ridge amdahl" not in text


@pytest.mark.parametrize("load", [
    ridge.Results.load,
    lambda p: ridge.compare(p, CLI_DATA / "base.json"),
    lambda p: ridge.compare(CLI_DATA / "base.json", p),
    ridge.analyze_trace,
    ridge.load_catalog,
], ids=["Results.load", "compare base", "compare new", "analyze_trace", "load_catalog"])
def test_a_missing_file_is_file_not_found_and_usage_error(tmp_path, load):
    missing = tmp_path / "no-such-file.json"
    with pytest.raises(FileNotFoundError) as caught:
        load(missing)
    assert isinstance(caught.value, ridge.UsageError)
    assert caught.value.errno == errno.ENOENT and caught.value.filename == str(missing)


@pytest.mark.parametrize("load", [ridge.analyze_trace, ridge.load_catalog], ids=["analyze_trace", "load_catalog"])
def test_a_folder_where_a_file_is_wanted_is_is_a_directory_error(tmp_path, load):
    with pytest.raises(IsADirectoryError) as caught:
        load(tmp_path)
    assert isinstance(caught.value, ridge.UsageError)


def test_a_folder_without_results_is_a_usage_error(tmp_path):
    with pytest.raises(ridge.UsageError):
        ridge.Results.load(tmp_path)


# ---- 4. pickling a Measurement -----------------------------------------------------------------

def _public_state(m):
    state = {}
    for name in dir(m):
        if name.startswith("_") or name in ("summary",):
            continue
        value = getattr(m, name)
        if inspect.ismethod(value) or inspect.isbuiltin(value):
            continue
        state[name] = value.tolist() if isinstance(value, np.ndarray) else value
    state["summary"] = {k: getattr(m.summary, k) for k in dir(m.summary) if not k.startswith("_")}
    return state


@pytest.mark.parametrize("clone", [lambda m: pickle.loads(pickle.dumps(m)), copy.copy, copy.deepcopy],
                         ids=["pickle", "copy", "deepcopy"])
def test_measurement_round_trips_every_field(clone):
    m = ridge.measure_wall(lambda: sum(range(1000)), samples=15)
    again = clone(m)
    assert type(again) is ridge.Measurement
    assert _public_state(again) == _public_state(m)
    assert len(again.samples) == 15 and again.method == m.method and again.meaning == m.meaning


# ---- 5. the trace session's repr ---------------------------------------------------------------

def test_trace_session_repr_says_what_it_is(tmp_path):
    from ridge._trace import TraceSession
    session = TraceSession(tmp_path / "t.json", "", 10, False)
    assert "object at 0x" not in repr(session)
    assert "not started" in repr(session) and "t.json" in repr(session)


# ---- 6. launch-bound measurements --------------------------------------------------------------

def _raw_events(samples_ms, host_queue_ms, repeats=10, settle=(0.0, -1.0, False)):
    raw = _ridge.Measurement.__new__(_ridge.Measurement)
    raw.__setstate__((_ridge.Method.cuda_events, list(samples_ms), repeats, False, "samples", [], 0, 0.0,
                      host_queue_ms, *settle, ""))  # "": no counted work
    return raw


def test_launch_bound_decision_on_stored_samples():
    # The H200's Triton x + y on 2^20 elements from Python: 13.06 us a call, the host 12.5 us queueing it.
    flagged = ridge.Measurement(_raw_events([0.01306] * 20, 0.0125))
    assert flagged.warnings and flagged.warnings[0].startswith("launch-bound")
    assert "launch-bound" in repr(flagged)
    assert flagged.to_record("add")["warnings"] == flagged.warnings
    fine = ridge.Measurement(_raw_events([1.0] * 20, 0.0125))
    assert fine.warnings == [] and "WARNING" not in repr(fine)
    assert pickle.loads(pickle.dumps(flagged)).warnings == flagged.warnings


def test_settling_is_reported_and_survives_pickling():
    # 250 ms of settling that ended with the clock still moving, as the timers record it.
    unsettled = ridge.Measurement(_raw_events([1.0] * 20, -1, settle=(250.0, 1755.0, False)))
    assert (unsettled.settle_ms, unsettled.settled_sm_mhz, unsettled.settle_reached_steady) == (250.0, 1755.0, False)
    assert any("still moving" in w for w in unsettled.warnings)
    record = unsettled.to_record("add")
    assert record["extra"]["settle_ms"] == 250.0 and record["extra"]["settled_sm_mhz"] == 1755.0
    again = pickle.loads(pickle.dumps(unsettled))
    assert (again.settle_ms, again.settled_sm_mhz, again.settle_reached_steady) == (250.0, 1755.0, False)
    # The record is the library's (C++ to_record), with every field the measurement has.
    assert record["method"] == "cuda_events" and record["median_ms"] == 1.0 and record["repeats_per_sample"] == 10
    settled = ridge.Measurement(_raw_events([1.0] * 20, -1, settle=(12.0, 1980.0, True)))
    assert settled.warnings == [] and settled.to_record("add")["extra"]["settle_ms"] == 12.0


@pytest.mark.gpu
def test_measure_cuda_of_a_tiny_op_warns_that_it_timed_the_launches():
    torch = pytest.importorskip("torch")
    x = torch.randn(1 << 20, device="cuda")
    y = torch.randn(1 << 20, device="cuda")
    with pytest.warns(ridge.LaunchBoundWarning, match="launch-bound"):
        m = ridge.measure_cuda(lambda: x + y, repeats=10)
    assert any(w.startswith("launch-bound") for w in m.warnings) and "launch-bound" in repr(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ridge.LaunchBoundWarning)
        big = torch.randn(4096, 4096, device="cuda")
        ridge.measure_cuda(lambda: big @ big, repeats=2)  # GPU-bound: no warning


# ---- 7. nothing leaks at exit ------------------------------------------------------------------

_OBJECTS = """
import ctypes, pickle, sys, ridge
keep = [ridge.measure_wall(lambda: None, samples=3)]
keep.append(pickle.loads(pickle.dumps(keep[0])))
keep += [keep[0].summary, ridge.summarize([1.0, 2.0, 3.0]), ridge.Results()]
with ridge.nvtx("range"):
    pass
try:
    with ridge.trace(None) as session:
        pass
except ridge.NoGpuError:
    from ridge._trace import TraceSession
    session = TraceSession(None, "", 10, False)
keep.append(session)
"""


def _run(script):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)


def test_ridge_alone_leaks_nothing_at_exit():
    done = _run(_OBJECTS)
    assert done.returncode == 0, done.stderr
    assert "leaked" not in done.stderr, done.stderr


def test_no_leak_report_when_torch_keeps_ridge_objects_past_exit():
    # PyTorch (torch.compile's caches) keeps a script's objects alive past the interpreter's
    # teardown; a reference nobody releases stands in for it, and a module named torch for PyTorch.
    script = _OBJECTS + """
sys.modules.setdefault("torch", type(sys)("torch"))
ctypes.pythonapi.Py_IncRef(ctypes.py_object(keep))
"""
    done = _run(script)
    assert done.returncode == 0, done.stderr
    assert "leaked" not in done.stderr, done.stderr


@pytest.mark.gpu
def test_no_leak_report_after_tracing_a_compiled_torch_function():
    pytest.importorskip("torch")
    script = """
import torch, ridge
x = torch.randn(256, 256, device="cuda")
step = torch.compile(lambda a: torch.relu(a @ a))
step(x)
with ridge.trace(None, step_range="step") as session:
    for _ in range(3):
        with ridge.nvtx("step"):
            step(x)
torch.cuda.synchronize()
print(session)
m = ridge.measure_spin(lambda: step(x))
"""
    done = _run(script)
    assert done.returncode == 0, done.stderr
    assert "finished" in done.stdout and "kernels" in done.stdout and "object at 0x" not in done.stdout
    assert "leaked" not in done.stderr, done.stderr
