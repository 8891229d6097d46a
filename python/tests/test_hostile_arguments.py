"""Every public function outside the roofline ones, given hostile arguments: a clear Python
exception of a documented type or a right answer, never a crash, a hang or a silent wrong number.
The roofline functions have their own tests (test_roofline.py)."""
import inspect
import math
import os
import pathlib

import numpy as np
import pytest

import ridge

SOURCE = pathlib.Path(__file__).resolve().parents[2]
BASE = SOURCE / "tests" / "cli" / "data" / "base.json"
NAN, INF = float("nan"), float("inf")
DOCUMENTED = (ridge.Error, TypeError, ValueError, OSError)  # ridge.UsageError is also a ValueError


def _gpu_or(*types):
    """Without a GPU a GPU function must say so (NoGpuError) when its arguments are fine."""
    return types if ridge.device_count() > 0 else types + (ridge.NoGpuError,)


def _non_utf8(tmp_path):
    return os.path.join(os.fsencode(tmp_path), b"r\xff\xfe.json")


# (id, call, expectation): an exception type (or tuple) the call must raise, or a check of its answer.
CASES = [
    # Amdahl and the decode ceiling: out-of-range, NaN and inf refused, limits answered exactly.
    ("amdahl_speedup nan", lambda t: ridge.amdahl_speedup(NAN, 2), ridge.UsageError),
    ("amdahl_speedup negative", lambda t: ridge.amdahl_speedup(0.5, -1), ridge.UsageError),
    ("amdahl_speedup zero speedup", lambda t: ridge.amdahl_speedup(0.5, 0), ridge.UsageError),
    ("amdahl_speedup inf", lambda t: ridge.amdahl_speedup(0.5, INF), lambda r: r == 2.0),
    ("amdahl_speedup str", lambda t: ridge.amdahl_speedup("half", 2), TypeError),
    ("amdahl_limit 1", lambda t: ridge.amdahl_limit(1.0), lambda r: r == INF),
    ("amdahl_limit -inf", lambda t: ridge.amdahl_limit(-INF), ridge.UsageError),
    ("amdahl_required_speedup unreachable", lambda t: ridge.amdahl_required_speedup(0.5, 3), lambda r: r is None),
    ("amdahl_required_speedup nan", lambda t: ridge.amdahl_required_speedup(0.5, NAN), ridge.UsageError),
    ("decode_ceiling zero weights", lambda t: ridge.decode_ceiling(0, 1e12), ridge.UsageError),
    ("decode_ceiling inf bandwidth", lambda t: ridge.decode_ceiling(1e9, INF), ridge.UsageError),
    ("decode_ceiling negative kv", lambda t: ridge.decode_ceiling(1e9, 1e12, 1, -5), ridge.UsageError),
    ("decode_ceiling huge", lambda t: ridge.decode_ceiling(1e300, 1e12, 1e300, 1e300),
     lambda r: math.isfinite(r) and r > 0),
    ("matmul_flops zero", lambda t: ridge.matmul_flops(0, 1, 1), ridge.UsageError),
    ("matmul_flops nan", lambda t: ridge.matmul_flops(NAN, 1, 1), ridge.UsageError),
    ("matmul_flops overflow", lambda t: ridge.matmul_flops(1e200, 1e200, 1e200), ridge.UsageError),
    ("matmul_bytes bad dtype", lambda t: ridge.matmul_bytes(1, 1, 1, "bf17"), ridge.UsageError),
    ("matmul_intensity negative", lambda t: ridge.matmul_intensity(-4, 4, 4), ridge.UsageError),
    # Statistics.
    ("summarize empty", lambda t: ridge.summarize([]), ridge.UsageError),
    ("summarize nan", lambda t: ridge.summarize([1.0, NAN]), ridge.UsageError),
    ("summarize inf", lambda t: ridge.summarize([1.0, INF]), ridge.UsageError),
    ("summarize negative", lambda t: ridge.summarize([-1.0, 2.0]), lambda r: r.median == 0.5),
    ("summarize confidence 2", lambda t: ridge.summarize([1.0, 2.0], 2.0), ridge.UsageError),
    ("summarize str", lambda t: ridge.summarize("123"), TypeError),
    ("summarize numpy", lambda t: ridge.summarize(np.array([1.0, 2.0, 3.0])), lambda r: r.median == 2.0),
    ("describe_method str", lambda t: ridge.describe_method("events"), TypeError),
    # Timers: the checks come before the GPU is asked for.
    ("measure_wall not callable", lambda t: ridge.measure_wall(42), TypeError),
    ("measure_wall zero samples", lambda t: ridge.measure_wall(lambda: None, samples=0), ridge.UsageError),
    ("measure_wall negative warmup", lambda t: ridge.measure_wall(lambda: None, warmup=-1), ridge.UsageError),
    ("measure_wall huge samples", lambda t: ridge.measure_wall(lambda: None, samples=2**40), TypeError),
    ("measure_wall float samples", lambda t: ridge.measure_wall(lambda: None, samples=2.5), TypeError),
    ("measure_wall raising fn", lambda t: ridge.measure_wall(lambda: 1 / 0), ZeroDivisionError),
    ("measure_naive zero samples", lambda t: ridge.measure_naive(lambda: None, samples=0), ridge.UsageError),
    ("measure_cuda nan budget", lambda t: ridge.measure_cuda(lambda: None, time_budget_s=NAN), ridge.UsageError),
    ("measure_cuda inf budget", lambda t: ridge.measure_cuda(lambda: None, time_budget_s=INF), ridge.UsageError),
    ("measure_cuda negative repeats", lambda t: ridge.measure_cuda(lambda: None, repeats=-1), ridge.UsageError),
    ("measure_cuda repeats str", lambda t: ridge.measure_cuda(lambda: None, repeats="many"), TypeError),
    ("measure_cuda huge repeats", lambda t: ridge.measure_cuda(lambda: None, repeats=2**40),
     _gpu_or(ridge.UsageError, TypeError, OverflowError)),
    ("measure_cuda zero samples", lambda t: ridge.measure_cuda(lambda: None, samples=0), ridge.UsageError),
    ("measure_cuda bad stream", lambda t: ridge.measure_cuda(lambda: None, stream=-1), ValueError),
    ("measure_cuda stream object", lambda t: ridge.measure_cuda(lambda: None, stream=object()), TypeError),
    ("measure_spin throttle 2", lambda t: ridge.measure_spin(lambda: None, throttle_threshold=2), ridge.UsageError),
    ("measure_graph flush", lambda t: ridge.measure_graph(lambda s: None, flush_l2=True), ridge.UsageError),
    ("measure unknown method", lambda t: ridge.measure("fast", lambda: None), ridge.UsageError),
    ("stream_handle bool", lambda t: ridge.stream_handle(True), TypeError),
    ("stream_handle none", lambda t: ridge.stream_handle(None), lambda r: r == 0 or ridge.device_count() > 0),
    # Result files and compare.
    ("Results.load missing", lambda t: ridge.Results.load(t / "none.json"), FileNotFoundError),
    ("Results.load folder", lambda t: ridge.Results.load(t), ridge.UsageError),
    ("Results.load non-utf8 missing", lambda t: ridge.Results.load(_non_utf8(t)), FileNotFoundError),
    ("Results.load int", lambda t: ridge.Results.load(3), TypeError),
    ("Results.load nul", lambda t: ridge.Results.load("a\0b"), ValueError),
    ("Results.load not json", lambda t: ridge.Results.load(SOURCE / "README.md"), ridge.UsageError),
    ("Results records not dicts", lambda t: ridge.Results([1, 2]).to_json(), DOCUMENTED),
    ("Results add float", lambda t: ridge.Results().add(1.5, "x"), (TypeError, AttributeError)),
    ("Results add negative bytes", lambda t: ridge.Results().add(ridge.measure_wall(lambda: None), "x", bytes=-1),
     ridge.UsageError),
    ("Results add nan flops", lambda t: ridge.Results().add(ridge.measure_wall(lambda: None), "x", flops=NAN),
     ridge.UsageError),
    ("Results add inf bytes", lambda t: ridge.Results().add(ridge.measure_wall(lambda: None), "x", bytes=INF),
     ridge.UsageError),
    ("Results add str flops", lambda t: ridge.Results().add(ridge.measure_wall(lambda: None), "x", flops="1e9"),
     ridge.UsageError),
    ("Results write to a folder", lambda t: ridge.Results().write(t), DOCUMENTED),
    ("Results write non-utf8", lambda t: ridge.Results().write(_non_utf8(t)),
     lambda r: r is None),
    ("compare missing", lambda t: ridge.compare(t / "a.json", BASE), FileNotFoundError),
    ("compare int", lambda t: ridge.compare(1, BASE), TypeError),
    ("compare no baselines", lambda t: ridge.compare([], BASE), ridge.UsageError),
    ("compare nan threshold", lambda t: ridge.compare(BASE, BASE, threshold=NAN), ridge.UsageError),
    ("compare negative threshold", lambda t: ridge.compare(BASE, BASE, threshold=-1), ridge.UsageError),
    ("compare alpha 0", lambda t: ridge.compare(BASE, BASE, alpha=0), ridge.UsageError),
    ("compare inf spread", lambda t: ridge.compare(BASE, BASE, spread_factor=INF), ridge.UsageError),
    ("compare empty sets", lambda t: ridge.compare(ridge.Results(), ridge.Results()), ridge.NothingComparedError),
    # Traces.
    ("analyze_trace missing", lambda t: ridge.analyze_trace(t / "t.json"), FileNotFoundError),
    ("analyze_trace folder", lambda t: ridge.analyze_trace(t), IsADirectoryError),
    ("analyze_trace non-utf8", lambda t: ridge.analyze_trace(_non_utf8(t)), FileNotFoundError),
    ("analyze_trace nan skip", lambda t: ridge.analyze_trace(SOURCE / "tests/cli/data/tiny_pytorch_trace.json",
                                                            skip_seconds=NAN), ridge.UsageError),
    ("analyze_trace negative top", lambda t: ridge.analyze_trace(SOURCE / "tests/cli/data/tiny_pytorch_trace.json",
                                                                top=-1), TypeError),
    ("trace int path", lambda t: ridge.trace(5).__enter__(), TypeError),
    ("trace nan skip", lambda t: ridge.trace(None, skip_seconds=NAN).__enter__(),
     _gpu_or(ridge.UsageError)),
    ("nvtx int", lambda t: ridge.nvtx(5).__enter__(), TypeError),
    ("nvtx non-utf8", lambda t: ridge.nvtx("\udcff").__enter__(), UnicodeEncodeError),
    # Devices.
    ("require_gpu -1", lambda t: ridge.require_gpu(-1), _gpu_or(ridge.UsageError)),
    ("describe_device 99", lambda t: ridge.describe_device(99), _gpu_or(ridge.UsageError)),
    ("read_clocks -1", lambda t: ridge.read_clocks(-1), DOCUMENTED),
]


@pytest.mark.parametrize("name, call, expected", CASES, ids=[c[0] for c in CASES])
def test_hostile_argument(tmp_path, name, call, expected):
    if isinstance(expected, type) or isinstance(expected, tuple):
        with pytest.raises(expected) as caught:
            call(tmp_path)
        assert str(caught.value), "an exception without a message"
    else:
        result = call(tmp_path)
        assert expected(result), f"{name}: {result!r}"


def test_every_public_function_has_a_signature():
    failed = []
    for name in ridge.__all__:
        value = getattr(ridge, name)
        if callable(value) and not isinstance(value, type):
            try:
                inspect.signature(value)
            except (TypeError, ValueError) as error:
                failed.append(f"{name}: {error}")
    assert not failed, failed


def test_signatures_of_cpp_functions_name_their_parameters_and_defaults():
    sig = inspect.signature(ridge.decode_ceiling)
    assert list(sig.parameters) == ["weight_bytes", "bandwidth", "batch", "kv_bytes_per_sequence"]
    assert sig.parameters["batch"].default == 1
    assert inspect.signature(ridge.require_gpu).parameters["index"].default == 0
    assert ridge.decode_ceiling(1e9, 1e12) == pytest.approx(1000.0)  # the wrapper still calls through
