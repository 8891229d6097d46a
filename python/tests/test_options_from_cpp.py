"""The Python timers restate nothing of the C++ library: their defaults and limits are
CudaOptions's and WallOptions's (read through the binding), their checks are
CudaOptions::validate's, and the method names they accept are the C++ parser's."""
import inspect
import math

import pytest

import ridge
from ridge import _ridge, _timing
from ridge._signatures import signature_of

CPP = _ridge.CudaOptions()  # the library's defaults
GPU_TIMER = {_ridge.Method.cuda_events: "measure_cuda", _ridge.Method.spin_hold: "measure_spin",
             _ridge.Method.graph_replay: "measure_graph"}


@pytest.mark.parametrize("timer", [ridge.measure_cuda, ridge.measure_spin, ridge.measure_graph])
def test_gpu_timer_defaults_are_the_libraries(timer):
    params = inspect.signature(timer).parameters
    checked = 0
    for name, param in params.items():
        if name in ("function", "stream", "counters"):  # counters: a second, profiled call, not a CudaOptions field
            continue
        expected = _ridge.CudaOptions.graph_repeats if (timer, name) == (ridge.measure_graph, "repeats") \
            else getattr(CPP, name)
        assert param.default == expected, f"{timer.__name__}({name}=...)"
        checked += 1
    assert checked >= 7  # warmup, samples, repeats, flush_l2, target_ci_relative, time_budget_s, ...


@pytest.mark.parametrize("timer", [ridge.measure_wall, ridge.measure_naive])
def test_wall_timer_defaults_are_the_libraries(timer):
    cpp = signature_of(getattr(_ridge, timer.__name__)).parameters
    ours = inspect.signature(timer).parameters
    assert (ours["samples"].default, ours["warmup"].default) == (cpp["samples"].default, cpp["warmup"].default)


def test_the_automatic_repeats_cap_is_the_libraries(monkeypatch):
    # The PyTorch graph path picks its own count: it must stop where the C++ timers stop.
    assert _ridge.CudaOptions.max_auto_repeats == _ridge.auto_repeats(1e-9, 10.0) == 10000

    class Probe:
        class summary:
            median = 1e-6

    monkeypatch.setattr(_ridge, "measure_cuda", lambda fn, options: Probe())
    assert _timing._auto_graph_repeats(lambda: None, 0, 10.0) == _ridge.CudaOptions.max_auto_repeats
    assert _timing._auto_graph_repeats(lambda: None, 0, 1e-9) == 1


@pytest.mark.parametrize("option, value", [
    ("time_budget_s", math.nan), ("target_sample_ms", 0.0), ("target_ci_relative", -1.0),
    ("throttle_threshold", 1.5), ("throttle_recovery_s", _ridge.CudaOptions.max_throttle_recovery_s + 1),
    ("rest_before_sample_s", _ridge.CudaOptions.max_rest_before_sample_s + 0.5), ("max_samples", 1),
])
def test_python_reports_the_libraries_check(option, value):
    with pytest.raises(ridge.UsageError) as cpp:
        _ridge.CudaOptions(**{option: value})
    with pytest.raises(ridge.UsageError) as python:
        ridge.measure_spin(lambda: None, **{option: value})
    assert str(python.value) == str(cpp.value) and str(cpp.value).startswith(option)
    assert "--" not in str(cpp.value)


def test_every_method_name_the_library_accepts_selects_its_timer():
    names = dict(_ridge.method_names())
    assert {"sync", "cpu_wall", "events", "spin", "graph", "wall", "naive"} <= set(names)
    for name, method in names.items():
        assert _ridge.method_from_string(name) == method
        if method in GPU_TIMER:
            if ridge.device_count() > 0:
                continue  # the GPU timers' own tests run them
            with pytest.raises(ridge.NoGpuError, match=f"ridge.{GPU_TIMER[method]} "):
                ridge.measure(name, lambda: None, samples=2, warmup=0)
            continue
        m = ridge.measure(name, lambda: None, samples=2, warmup=0)
        expected = {_ridge.Method.cpu_wall: {"cpu_wall"}, _ridge.Method.wall_naive: {"wall_naive"},
                    _ridge.Method.wall_sync: {"wall_sync", "cpu_wall"}}[method]  # cpu_wall: no GPU
        assert m.method in expected, name


@pytest.mark.parametrize("name", ["fast", "Events", "wall-sync", "", "cuda"])
def test_names_the_library_refuses_python_refuses(name):
    with pytest.raises(ridge.UsageError) as python:
        ridge.measure(name, lambda: None)
    with pytest.raises(ridge.UsageError) as cpp:
        _ridge.method_from_string(name)
    assert str(python.value) == str(cpp.value)


@pytest.mark.gpu
def test_automatic_graph_repeats_with_pytorch_stay_within_the_libraries_cap():
    if ridge.device_count() == 0:
        pytest.skip("needs a GPU")
    torch = pytest.importorskip("torch")
    x = torch.ones(16, device="cuda")
    # One second per sample wants far more calls of a microsecond kernel than the cap allows: the
    # count is the cap's (PyTorch's path once stopped at 1,000, the C++ timers at 10,000).
    m = ridge.measure_graph(lambda: x.add_(1), repeats="auto", samples=3, target_sample_ms=1000)
    assert m.repeats_per_sample == _ridge.CudaOptions.max_auto_repeats
