"""Timers: the CPU path everywhere, the GPU timers' argument checks and errors, and (marker gpu)
the GPU timers themselves on PyTorch work."""
import json
import math
import time
import pickle
import warnings

import numpy as np
import pytest

import ridge


def busy():
    return sum(range(2000))


def test_measure_wall_behaves_as_its_median_in_ms():
    m = ridge.measure_wall(busy)
    assert isinstance(m, float)
    assert float(m) == m.median_ms == m.summary.median
    assert m.min_ms <= float(m) <= m.max_ms
    assert m * 2 == pytest.approx(2 * m.median_ms)
    assert m < m.max_ms + 1
    assert f"{m:.3f}" == f"{m.median_ms:.3f}"
    assert m.method == ("wall_sync" if ridge.device_count() else "cpu_wall") and "wall clock" in m.meaning
    assert m.stop_reason == "samples"
    assert pickle.loads(pickle.dumps(m)) == float(m)


def test_measure_wall_keeps_the_usual_positional_order():
    calls = []
    m = ridge.measure_wall(lambda: calls.append(1), 4, 2)  # function, samples, warmup
    assert len(calls) == 6 and m.summary.count == 4
    assert isinstance(ridge.measure_wall(busy, 3, 1, False), float)  # cuda as the fourth


def test_code_reading_the_plain_helpers_dictionary_runs_unchanged():
    m = ridge.measure_wall(busy, 5, 1)
    assert m["median_ms"] == float(m) and m["min_ms"] == m.min_ms and m["max_ms"] == m.max_ms
    assert m["samples"] == 5  # as in the helpers' dictionary: the number of samples
    assert dict(m) == {"median_ms": float(m), "min_ms": m.min_ms, "max_ms": m.max_ms, "samples": 5}
    assert "median_ms" in m and "p50" not in m and m.get("p50", -1) == -1
    with pytest.raises(KeyError, match="median_ms"):
        m["median"]
    assert np.asarray(m).shape == ()  # still one number to NumPy


def test_samples_are_a_read_only_numpy_view():
    m = ridge.measure_wall(busy, samples=7)
    s = m.samples
    assert isinstance(s, np.ndarray) and s.shape == (7,) and s.dtype == np.float64
    assert not s.flags.writeable
    assert np.median(s) == pytest.approx(float(m))
    assert m.samples.__array_interface__["data"][0] == s.__array_interface__["data"][0]  # no copy


def test_quantiles_ci_and_rate():
    m = ridge.measure_wall(busy, samples=20)
    q = m.quantiles
    assert q["p10"] <= q["p25"] <= q["p50"] <= q["p75"] <= q["p90"]
    low, high = m.ci
    assert low <= float(m) <= high
    rate = m.rate(flops=2e9, bytes=1e9)
    assert rate.tflops == pytest.approx(2e9 / (float(m) * 1e-3) / 1e12)
    assert rate.gb_per_s == pytest.approx(1e9 / (float(m) * 1e-3) / 1e9)
    assert m.rate(bytes=1).flops_per_s is None
    assert "median" in m._repr_html_() and "Measurement(" in repr(m)


def test_exceptions_in_the_callable_propagate():
    def boom():
        raise KeyError("inside")
    with pytest.raises(KeyError, match="inside"):
        ridge.measure_wall(boom)


@pytest.mark.parametrize("bad", [None, 3, "x @ x"])
def test_non_callables_are_type_errors(bad):
    for timer in (ridge.measure_wall, ridge.measure_cuda, ridge.measure_spin, ridge.measure_graph):
        with pytest.raises(TypeError):
            timer(bad)


@pytest.mark.parametrize("stream", [-1, True, object(), "0", 1.5])
def test_bad_stream_objects_are_rejected(stream):
    with pytest.raises((TypeError, ValueError)):
        ridge.stream_handle(stream)


def test_stream_objects_resolve_to_handles():
    class Protocol:
        def __cuda_stream__(self):
            return (0, 1234)

    class TorchLike:
        cuda_stream = 77

    assert ridge.stream_handle(0) == 0
    assert ridge.stream_handle(Protocol()) == 1234
    assert ridge.stream_handle(TorchLike()) == 77


@pytest.mark.parametrize("option", [
    dict(target_ci_relative=float("nan")), dict(time_budget_s=float("inf")), dict(time_budget_s=0.0),
    dict(target_sample_ms=float("nan")), dict(repeats="many"), dict(repeats=-1), dict(samples=0), dict(warmup=-1),
])
def test_bad_options_fail_before_any_gpu_work(option):
    with pytest.raises((ValueError, TypeError)):
        ridge.measure_cuda(lambda: None, **option)


@pytest.mark.parametrize("option", [
    dict(throttle_threshold=float("nan")), dict(throttle_threshold=1.5), dict(throttle_threshold=-0.1),
    dict(throttle_threshold=True), dict(throttle_recovery_s=-1.0), dict(throttle_recovery_s=float("inf")),
    dict(rest_before_sample_s=-0.001), dict(rest_before_sample_s=11.0), dict(rest_before_sample_s=float("nan")),
    dict(rest_before_sample_s="1"),
])
def test_bad_throttle_and_rest_options_fail_before_any_gpu_work(option):
    name = next(iter(option))
    with pytest.raises(ridge.UsageError, match=name):
        ridge.measure_spin(lambda: None, **option)
    with pytest.raises(ridge.UsageError, match=name):
        ridge.measure_graph(lambda: None, **option)


def test_throttle_recovery_is_only_for_the_launch_free_timers():
    with pytest.raises(TypeError):
        ridge.measure_cuda(lambda: None, throttle_threshold=0.5)
    # The C++ timers refuse it too, before any GPU work: a per-launch timer cannot drop a sample.
    with pytest.raises(ridge.UsageError, match="launch-free methods"):
        ridge._ridge.measure_cuda(lambda _s: None, ridge._ridge.CudaOptions(throttle_threshold=0.5))
    with pytest.raises(ridge.UsageError, match="throttle_threshold must be"):
        ridge._ridge.CudaOptions(throttle_threshold=2.0)
    with pytest.raises(TypeError):
        ridge.measure_cuda(lambda: None, rest_before_sample_s=0.001)
    with pytest.raises(ridge.UsageError, match="launch-free methods"):
        ridge._ridge.measure_cuda(lambda _s: None, ridge._ridge.CudaOptions(rest_before_sample_s=0.001))
    with pytest.raises(ridge.UsageError, match="rest_before_sample_s must be"):
        ridge._ridge.CudaOptions(rest_before_sample_s=-1.0)


def test_bad_wall_options():
    with pytest.raises(ridge.UsageError):
        ridge.measure_wall(busy, samples=0)


def test_unknown_method():
    with pytest.raises(ridge.UsageError, match="unknown timing method 'stopwatch'"):
        ridge.measure("stopwatch", busy)
    assert ridge.measure("wall_sync", busy, 3, 1).method in ("cpu_wall", "wall_sync")


@pytest.mark.skipif(ridge.device_count() > 0, reason="checks the no-GPU error")
def test_gpu_timers_raise_no_gpu_error_without_a_gpu():
    for timer in (ridge.measure_cuda, ridge.measure_spin, ridge.measure_graph):
        with pytest.raises(ridge.NoGpuError, match="needs a CUDA GPU"):
            timer(lambda: None)


def _counted_measurement(median_ms, counted):
    """A cuda_events measurement carrying counted work, made from its pickled state (no GPU)."""
    raw = ridge._ridge.Measurement.__new__(ridge._ridge.Measurement)
    raw.__setstate__((ridge.Method.cuda_events, [median_ms] * 3, 1, False, "samples", [], 0, 0.0, -1.0, 0.0, -1.0,
                      False, json.dumps(counted)))
    return ridge.Measurement(raw)


# 2^26 FP32 elements of PyTorch's a + b: 3N x 4 bytes through DRAM, N FFMA (a + alpha*b).
_N = 1 << 26
_ADD = {"metric_set": "roofline", "kernels": 1, "passes": 3, "dram_read_bytes": 8.0 * _N,
        "dram_write_bytes": 4.0 * _N, "l2_bytes": 12.0 * _N, "flops": {"fp32": 2.0 * _N},
        "profiled_duration_ns": 1e5, "profiled_sm_mhz": 1980.0, "missing": [], "metrics_not_offered": []}


def test_counters_is_a_bool_checked_before_any_gpu_work():
    with pytest.raises(TypeError, match="counters must be True or False"):
        ridge.measure_cuda(lambda: None, counters="roofline")


def test_a_counted_measurement_carries_its_work_through_rate_records_and_pickle():
    m = _counted_measurement(0.1, _ADD)
    c = m.counted
    assert (c.kernels, c.dram_read_bytes, c.dram_write_bytes, c.dram_bytes) == (1, 8.0 * _N, 4.0 * _N, 12.0 * _N)
    assert c.flops == {"fp32": 2.0 * _N} and c.total_flops == 2.0 * _N and c.sm_mhz == pytest.approx(1980)
    # No amounts given: the counters' (DRAM bytes, FLOPs of every precision), and the rate says so.
    r = m.rate()
    assert r.source == "measured" and "measured" in repr(r)
    assert r.bytes_per_s == pytest.approx(12.0 * _N / 1e-4) and r.flops_per_s == pytest.approx(2.0 * _N / 1e-4)
    # Stated amounts are used as given; the ones the counters contradict raise a warning that says so.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stated = m.rate(bytes=12.0 * _N)
    assert stated.source == "stated" and stated.bytes_per_s == pytest.approx(12.0 * _N / 1e-4)
    with pytest.warns(ridge.CountMismatchWarning, match=r"a \+ alpha\*b"):
        m.rate(flops=_N)
    with pytest.raises(ridge.UsageError, match="give no flops= or bytes="):
        m.rate(flops=_N, measured=True)
    findings = m.count_findings(bytes=6.0 * _N, flops=_N)
    assert [f.quantity for f in findings] == ["bytes", "flops"]
    assert findings[0].ratio == pytest.approx(2.0) and "the DRAM moved 2.00x that" in findings[0].text
    assert m.count_findings(bytes=12.0 * _N) == []
    with pytest.raises(ridge.UsageError, match="bytes must be a finite number"):
        m.count_findings(bytes=float("nan"))
    record = m.to_record("add", bytes=6.0 * _N)
    assert record["extra"]["counters"]["dram_write_bytes"] == 4.0 * _N
    assert any("the DRAM moved 2.00x that" in w for w in record["warnings"])
    back = pickle.loads(pickle.dumps(m))
    assert back.counted.dram_bytes == c.dram_bytes and back.counted.flops == c.flops


def test_a_measurement_without_counters_rates_what_is_stated():
    m = _counted_measurement(0.1, _ADD)
    plain = ridge.measure_wall(busy, 3, 1)
    assert plain.counted is None
    assert plain.rate(bytes=1.0).source == "stated"
    with pytest.raises(ridge.UsageError, match="needs a counted measurement"):
        plain.rate(measured=True)
    with pytest.raises(ridge.UsageError, match="needs a counted measurement"):
        plain.count_findings(bytes=1.0)
    assert "counters" not in plain.to_record("busy", bytes=1.0)["extra"]
    assert m.rate(bytes=12.0 * _N, measured=False).source == "stated"


# ---- on a GPU ------------------------------------------------------------------------------

torch = pytest.importorskip("torch") if ridge.device_count() > 0 else None


@pytest.mark.gpu
def test_torch_matmul_by_every_gpu_timer():
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    flops = 2 * 1024 ** 3
    events = ridge.measure_cuda(lambda: a @ a)
    spin = ridge.measure_spin(lambda: a @ a)
    graph = ridge.measure_graph(lambda: a @ a)
    for m, method in ((events, "cuda_events"), (spin, "spin_hold"), (graph, "graph_replay")):
        assert m.method == method
        assert 0 < float(m) < 5, m  # a 1024^3 bf16 matmul takes microseconds on any datacenter GPU
        assert m.rate(flops=flops).tflops < 2000  # no GPU does 2 PFLOP/s dense bf16
    # Launch-free methods cannot be slower than per-sample events by more than noise.
    assert float(graph) <= float(events) * 1.2


@pytest.mark.gpu
def test_timers_follow_the_current_torch_stream():
    a = torch.randn(512, 512, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert ridge.stream_handle() == side.cuda_stream
        m = ridge.measure_cuda(lambda: a @ a)
    assert float(m) > 0
    assert ridge.stream_handle(side) == side.cuda_stream


@pytest.mark.gpu
def test_a_stream_given_is_where_the_pytorch_work_runs():
    # stream= means "time my work on this stream": PyTorch queues on its current stream, so ridge
    # makes the given stream current while timing (before, the events timed the idle side stream).
    a = torch.randn(4096, 4096, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        inside = ridge.measure_cuda(lambda: a @ a)
    for timer in (ridge.measure_cuda, ridge.measure_spin):
        given = timer(lambda: a @ a, stream=side)
        assert 0.8 < float(given) / float(inside) < 1.25, (timer.__name__, given, inside)
    handle = ridge.measure_spin(lambda: a @ a, stream=side.cuda_stream)
    assert 0.8 < float(handle) / float(inside) < 1.25, (handle, inside)
    assert torch.cuda.current_stream() == torch.cuda.default_stream()  # put back afterwards


@pytest.mark.gpu
def test_the_spin_hold_counts_the_launches_of_a_pytorch_callable():
    # 40 launches per call: the hold may queue at most 512 launches, so "auto" repeats must stay
    # at or below 12 (the count once read 1 here: PyTorch launched outside ridge's counting capture).
    x = torch.zeros(1, device="cuda")

    def forty_launches():
        for _ in range(40):
            x.add_(1)
    m = ridge.measure_spin(forty_launches, repeats="auto", samples=5, target_sample_ms=5)  # wants ~50 calls
    assert 1 <= m.repeats_per_sample <= 512 // 40, m.repeats_per_sample
    assert math.isfinite(float(m)) and float(m) > 0


@pytest.mark.gpu
def test_measure_graph_does_not_pass_on_pytorchs_prototype_warning():
    a = torch.randn(64, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ridge.measure_graph(lambda: a * 2)
    assert not [w for w in caught if "Synchronization debug mode" in str(w.message)]


@pytest.mark.gpu
def test_a_graph_of_no_gpu_work_is_a_capture_error():
    with pytest.raises(ridge.CaptureError, match="no GPU work"):
        ridge.measure_graph(lambda: torch.ones(3) + 1)


@pytest.mark.gpu
def test_graph_capture_failure_is_explained_and_leaves_torch_usable():
    a = torch.randn(64, device="cuda")
    with pytest.raises(ridge.CaptureError, match="synchronizes with the host"):
        ridge.measure_graph(lambda: (a * 2).sum().item())
    torch.randn(1 << 10, device="cuda").sum().item()  # PyTorch still samples and synchronizes
    assert float(ridge.measure_graph(lambda: a * 2)) > 0  # capture still works afterwards


@pytest.mark.gpu
def test_ctrl_c_inside_a_held_batch_releases_the_stream():
    # Ctrl-C lands where Python spends its time: inside the callable, while measure_spin holds the
    # stream. The KeyboardInterrupt must come back at once (the GPU's own release comes only after
    # the 5 s spin timeout) with every call queued before it run, and the stream must work after.
    x = torch.zeros(1, device="cuda")
    calls = 0

    def interrupted_midway():
        nonlocal calls
        calls += 1
        if calls == 12:  # calls 1-3: warm-up and counting; 4 on: the first held batch
            raise KeyboardInterrupt
        x.add_(1)

    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        ridge.measure_spin(interrupted_midway, warmup=2, samples=50)
    took = time.perf_counter() - t0
    torch.cuda.synchronize()
    assert took < 4, f"{took:.1f} s: the held stream waited for the spin timeout"
    assert x.item() in (10, 11)  # 11 calls before it; call 3 counts launches under a capture
    assert float(ridge.measure_spin(lambda: x.add_(1), samples=5)) > 0


@pytest.mark.gpu
def test_cold_l2_and_adaptive_stop():
    a = torch.randn(1 << 24, device="cuda")
    cold = ridge.measure_cuda(lambda: a.add_(1), flush_l2=True, repeats=1)
    assert cold.l2_flushed
    adaptive = ridge.measure_spin(lambda: a.add_(1), target_ci_relative=0.01, time_budget_s=2)
    assert adaptive.stop_reason in ("converged", "time_budget", "max_samples")
    assert math.isfinite(float(adaptive))


@pytest.mark.gpu
def test_probe_kernels_without_torch():
    # ridge's own busy-wait kernel: 20 us of GPU time per call, launched on the stream it is given.
    spin = ridge.measure_spin(lambda s: ridge._ridge.launch_busy_wait(s, 20_000), stream=0)
    assert 0.018 < float(spin) < 0.040, spin
    graph = ridge.measure_graph(lambda s: ridge._ridge.launch_busy_wait(s, 20_000), stream=0)
    assert 0.018 < float(graph) < 0.040, graph
    assert graph.method == "graph_replay"


@pytest.mark.gpu
def test_throttle_recovery_keeps_each_samples_clock():
    busy = lambda s: ridge._ridge.launch_busy_wait(s, 20_000)  # noqa: E731
    watched = ridge.measure_spin(busy, stream=0, flush_l2=True, throttle_threshold=0.05)
    assert watched.throttled_samples_dropped == 0  # no working GPU runs below 5% of its rated clock
    assert len(watched.sample_sm_mhz) == len(watched.samples) == 20
    assert all(mhz > 0 for mhz in watched.sample_sm_mhz)
    assert 0.018 < float(watched) < 0.040, watched
    assert watched.to_record("busy")["extra"]["sample_sm_mhz"] == watched.sample_sm_mhz
    # Without a threshold every batch's clock is kept too (compare judges a record by its samples'
    # clock), after the clock settled.
    plain = ridge.measure_spin(busy, stream=0)
    assert len(plain.sample_sm_mhz) == len(plain.samples) and all(mhz > 0 for mhz in plain.sample_sm_mhz)


@pytest.mark.gpu
def test_a_rest_before_each_sample_idles_the_gpu_and_is_recorded():
    busy = lambda s: ridge._ridge.launch_busy_wait(s, 20_000)  # noqa: E731
    t0 = time.perf_counter()
    rested = ridge.measure_spin(busy, stream=0, flush_l2=True, samples=20, rest_before_sample_s=0.01)
    took = time.perf_counter() - t0
    assert took >= 20 * 0.01  # one rest per flushed sample
    assert rested.rest_before_sample_s == 0.01 and rested.to_record("busy")["extra"]["rest_before_sample_s"] == 0.01
    assert 0.018 < float(rested) < 0.040, rested  # the rest is outside the timed window
    plain = ridge.measure_spin(busy, stream=0, flush_l2=True)
    assert plain.rest_before_sample_s == 0 and "rest_before_sample_s" not in plain.to_record("busy")["extra"]


def _counted(function, **options):
    try:
        return ridge.measure_cuda(function, counters=True, samples=5, **options)
    except ridge.CountersUnavailableError as error:
        pytest.skip(f"hardware counters cannot be read here: {error}")


@pytest.mark.gpu
def test_counters_see_the_dram_traffic_and_fmas_of_a_torch_add():
    n = 1 << 26
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    m = _counted(lambda: a + b)
    c = m.counted
    assert c.kernels == 1, c
    assert c.dram_bytes == pytest.approx(12 * n, rel=0.02), c
    assert c.flops.get("fp32", 0) == pytest.approx(2 * n, rel=0.01), c  # a + alpha*b: one FFMA per element
    assert c.sm_mhz > 100
    assert m.rate().source == "measured"
    assert m.count_findings(bytes=12 * n) == []
    with pytest.warns(ridge.CountMismatchWarning, match=r"a \+ alpha\*b"):
        m.rate(flops=n)
    assert m.to_record("add", bytes=12 * n)["extra"]["counters"]["kernels"] == 1


@pytest.mark.gpu
def test_counters_see_the_tensor_flops_of_a_bf16_matmul():
    n = 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    m = _counted(lambda: a @ b)
    assert m.counted.flops.get("tensor_bf16", 0) == pytest.approx(2 * n**3, rel=0.01), m.counted
    assert m.count_findings(flops=2 * n**3) == []


@pytest.mark.gpu
def test_counters_are_refused_inside_a_trace(tmp_path):
    with ridge.trace(str(tmp_path / "trace.json")):
        with pytest.raises(ridge.CountersUnavailableError, match="tracer"):
            ridge.measure_cuda(lambda: None, counters=True)
