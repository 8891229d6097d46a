"""The tracer from Python: saved-trace analysis everywhere, live tracing on a GPU."""
import json
import pathlib

import pytest

import ridge

SOURCE = pathlib.Path(__file__).resolve().parents[2]


def test_analyze_a_saved_trace_that_is_not_ridges():
    with pytest.raises(ridge.UsageError):
        ridge.analyze_trace(SOURCE / "tests" / "cli" / "data" / "base.json")


def test_analyze_missing_trace():
    with pytest.raises(ridge.Error):
        ridge.analyze_trace(SOURCE / "no-such-trace.json")


def test_nvtx_ranges_are_harmless_without_a_profiler():
    with ridge.nvtx("outside any trace"):
        pass


def test_trace_refuses_unknown_api_call_levels_before_tracing(tmp_path):
    path = tmp_path / "never.json"
    with pytest.raises(ridge.UsageError, match="api_calls='launches'"):
        with ridge.trace(path, api_calls="launches"):
            pass
    with pytest.raises(ridge.UsageError, match="contradicts"):
        with ridge.trace(path, all_api_calls=True, api_calls="none"):
            pass
    with pytest.raises(ridge.UsageError, match="launch_calls"):
        with ridge.trace(path, launch_calls="yes"):
            pass
    assert not path.exists()


def test_trace_refuses_bad_counter_options_before_tracing(tmp_path):
    path = tmp_path / "never.json"
    with pytest.raises(ridge.UsageError, match="metric_set 'everything'"):
        with ridge.trace(path, counters="everything"):
            pass
    with pytest.raises(ridge.UsageError, match="give counters too"):
        with ridge.trace(path, counters_steps="10..12"):
            pass
    with pytest.raises(ridge.UsageError, match="steps '12..10' ends before it begins"):
        with ridge.trace(path, counters="roofline", counters_steps="12..10", step_range="step"):
            pass
    with pytest.raises(ridge.UsageError, match="NVTX range that marks a step"):
        with ridge.trace(path, counters="roofline", counters_steps="3"):
            pass
    assert not path.exists()
    assert issubclass(ridge.CountersUnavailableError, ridge.Error)


def test_trace_refuses_a_bad_counters_replay_before_tracing(tmp_path):
    path = tmp_path / "never.json"
    # The library checks the mode and names its field, GPU or not.
    with pytest.raises(ridge.UsageError, match="replay: 'sideways' is not a replay mode; use steps"):
        with ridge.trace(path, counters="roofline", counters_replay="sideways"):
            pass
    with pytest.raises(ridge.UsageError, match="replay: replaying by steps needs a step window"):
        with ridge.trace(path, counters="roofline", counters_replay="steps"):
            pass
    with pytest.raises(ridge.UsageError, match="give counters too"):
        with ridge.trace(path, counters_replay="kernel"):
            pass
    assert not path.exists()
    # Good values pass the library's check (tracing itself needs a GPU).
    ridge._ridge.check_counter_options(counters="roofline", counters_replay="kernel")
    ridge._ridge.check_counter_options(counters="roofline", counters_steps="10..12", counters_replay="steps",
                                       step_range="step")
    ridge._ridge.check_counter_options(counters="roofline", counters_steps="10..12", counters_replay="kernel",
                                       step_range="step")


torch = pytest.importorskip("torch") if ridge.device_count() > 0 else None


@pytest.mark.gpu
def test_trace_counts_kernels_per_step_and_writes_perfetto_json(tmp_path):
    x = torch.randn(256, 256, device="cuda")
    torch.cuda.synchronize()
    path = tmp_path / "trace.json"
    with ridge.trace(path, step_range="step") as t:
        for _ in range(3):
            with ridge.nvtx("step"):
                y = x @ x
                y = torch.relu(y)
    a = t.analysis
    assert path.exists() and path.stat().st_size > 0
    per_step = a.kernels_per_step
    assert len(per_step) == 3 and len(set(per_step)) == 1 and per_step[0] >= 2  # matmul + relu, each step alike
    assert a.kernel_count >= sum(per_step)
    assert a.gpu_busy_ms > 0 and a.kernels
    again = ridge.analyze_trace(path, step_range="step")
    assert again.kernel_count == a.kernel_count
    with ridge.trace(None, step_range="step", api_calls="none") as bare:
        with ridge.nvtx("step"):
            torch.relu(x @ x)
    assert bare.analysis.kernel_count >= 2 and bare.analysis.launch_latency_count == 0  # no launch calls recorded


@pytest.mark.gpu
def test_trace_times_launches_from_queue_times_unless_launch_calls_are_asked_for(tmp_path):
    x = torch.randn(256, 256, device="cuda")
    torch.cuda.synchronize()
    runs = {}
    for launch_calls in (False, True):
        path = tmp_path / f"launch_calls_{launch_calls}.json"
        with ridge.trace(path, step_range="step", launch_calls=launch_calls) as t:
            for _ in range(3):
                with ridge.nvtx("step"):
                    torch.relu(x @ x)
        events = json.loads(path.read_text())["traceEvents"]
        kernels = [e for e in events if e.get("cat") == "kernel"]
        launches = [e for e in events if "LaunchKernel" in e.get("name", "") and e.get("cat", "").startswith("cuda_")]
        runs[launch_calls] = t.analysis
        assert t.analysis.data["kernels_without_launch_call"] == 0
        assert t.analysis.data["launch_latency_count"] >= 6
        if launch_calls:
            assert len(launches) >= len(kernels) >= 6
            assert t.analysis.data["launches_timed_from_queue"] == 0
        else:
            assert not launches
            assert kernels and all(e["args"]["queued ns before start"] >= 0 for e in kernels)
            assert t.analysis.data["launches_timed_from_queue"] == t.analysis.data["launch_latency_count"]
    assert runs[False].kernels_per_step == runs[True].kernels_per_step


TINY = SOURCE / "tests" / "cli" / "data" / "tiny_pytorch_trace.json"


def test_analysis_states_its_window_and_offers_the_steady_state():
    whole = ridge.analyze_trace(TINY, step_range="step")
    assert whole.window == ""
    assert "Window: the whole trace, start-up included" in whole.text
    steady = ridge.analyze_trace(TINY, step_range="step", steady_state=True)
    assert 'from the first NVTX range named "step"' in steady.window
    later = ridge.analyze_trace(TINY, skip_seconds=150e-6)
    assert later.kernel_count < whole.kernel_count
    with pytest.raises(ValueError):
        ridge.analyze_trace(TINY, steady_state=True)  # no step range to start from
    with pytest.raises(ridge.UsageError):
        ridge.analyze_trace(TINY, skip_seconds=-1)


def test_analysis_splits_launch_latency_and_reports_overlap_and_step_spans():
    a = ridge.analyze_trace(TINY, step_range="step")
    assert a.launch_latency_median_ms == pytest.approx(a.launch_queued_median_ms + a.launch_overhead_median_ms)
    assert a.overlap_share == 0.0 and a.kernel_time_ms == pytest.approx(a.gpu_busy_ms)
    step = a.steps[0]
    assert step["gpu_span_ns"] >= step["gpu_busy_ns"] > 0
    assert a.step_busy_fraction_of_gpu_span_median <= 1.0


def test_hostile_times_in_a_saved_trace(tmp_path):
    bad = SOURCE / "tests" / "cli" / "data" / "trace_bad_time.json"
    with pytest.raises(ridge.UsageError, match=r"traceEvents\[1\]\.ts"):
        ridge.analyze_trace(bad)
    dropped = ridge.analyze_trace(SOURCE / "tests" / "cli" / "data" / "trace_negative_duration.json")
    assert dropped.rejected_events and dropped.rejected_events[0]["count"] == 1
    assert any("negative duration" in f for f in dropped.findings)


@pytest.mark.gpu
@pytest.mark.parametrize("sync_records", [False, True])
def test_host_waits_are_seen_with_or_without_cupti_sync_records(sync_records):
    x = torch.randn(256, 256, device="cuda")
    torch.cuda.synchronize()
    with ridge.trace(None, step_range="step", sync_records=sync_records) as t:
        for _ in range(3):
            with ridge.nvtx("step"):
                torch.relu(x @ x)
                torch.cuda.synchronize()
    a = t.analysis
    assert len(a.kernels_per_step) == 3 and len(set(a.kernels_per_step)) == 1 and a.kernels_per_step[0] >= 2
    assert a.sync_count >= 3 and a.sync_time_ns > 0  # without the records, from the cudaDeviceSynchronize calls


@pytest.mark.gpu
def test_counters_measure_the_bytes_of_an_add_and_leave_its_timing_alone(tmp_path):
    n = 1 << 26
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    torch.cuda.synchronize()
    path = tmp_path / "counted.json"
    with ridge.trace(path, step_range="step", counters="roofline", counters_steps="1..1") as t:
        for _ in range(4):
            with ridge.nvtx("step"):
                z = x + y
        torch.cuda.synchronize()
    torch.testing.assert_close(z, x + y)
    rows = t.analysis.counters
    assert rows is not None and len(rows) >= 1
    add = rows.iloc[rows["time_share"].argmax()]
    assert add["calls"] == 4 and add["profiled_calls"] == 1  # only step 1 was profiled
    assert abs(add["dram_bytes"] / (3 * 4 * n) - 1) < 0.02  # reads x and y, writes z
    assert add["bound"] == "memory"
    assert not add["time_from_profiled_pass"]  # its time comes from the three untouched launches
    again = ridge.analyze_trace(path, step_range="step")
    assert again.counters is not None and len(again.counters) == len(rows)


def test_trace_schedule_is_validated_in_cpp_before_tracing(tmp_path):
    s = ridge.TraceSchedule(wait=9)
    assert (s.wait, s.warmup, s.active, s.repeat, s.skip_first, s.step_range) == (9, 0, 1, 0, 0, "")
    assert [s.phase(i) for i in (0, 8, 9, 19)] == ["wait", "wait", "active", "active"]
    assert ridge.TraceSchedule(active=2, repeat=1).phase(2) == "done"
    with pytest.raises(ridge.UsageError, match="schedule active must be at least 1"):
        ridge.TraceSchedule(active=0, step_range="step").validate()
    path = tmp_path / "never.json"
    with pytest.raises(ridge.UsageError, match="schedule step_range is empty"):
        with ridge.trace(path, schedule=s):
            pass
    with pytest.raises(ridge.UsageError, match="not both"):
        with ridge.trace(path, step_range="step", schedule=s, wait=3):
            pass
    with pytest.raises(TypeError, match="TraceSchedule"):
        with ridge.trace(path, step_range="step", schedule={"wait": 9}):
            pass
    assert not path.exists()
    assert s.step_range == ""  # ridge.trace fills in a copy, not the caller's schedule


@pytest.mark.gpu
def test_a_scheduled_trace_holds_only_its_active_steps(tmp_path):
    x = torch.randn(256, 256, device="cuda")
    torch.cuda.synchronize()
    path = tmp_path / "scheduled.json"
    with ridge.trace(path, step_range="step", wait=1, warmup=1, active=1) as t:  # steps 2, 5, 8 recorded
        for _ in range(10):
            with ridge.nvtx("step"):
                torch.relu(x @ x)
    assert t.analysis.step_numbers == [2, 5, 8]
    per_step = t.analysis.kernels_per_step
    assert len(set(per_step)) == 1 and per_step[0] >= 2
    assert t.analysis.kernel_count == sum(per_step)  # nothing from the waiting and warmup steps
    assert "recorded by the schedule" in t.analysis.window
    assert ridge.analyze_trace(path, step_range="step").step_numbers == [2, 5, 8]


def test_a_saved_trace_with_counters_leaves_the_profiled_launches_out_of_every_time():
    # The stored H200 GEMM trace: 33 launches replayed per kernel for their counters.
    a = ridge.analyze_trace(SOURCE / "results" / "h200" / "counters" / "gemm_trace.json.gz")
    assert a.kernels_left_out == 33 and a.steps_left_out == 0
    assert "replayed them once per hardware-counter pass" in a.left_out_reason
    assert "Left out of every time below: 33 launches under hardware counters" in a.text
    assert a.kernel_count == 453  # every launch is still in the trace
    assert sum(k["time"]["count"] for k in a.kernels) <= a.kernel_count - a.kernels_left_out
