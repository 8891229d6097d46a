"""The tracer as a context manager, NVTX ranges, and the analysis of saved traces."""
from __future__ import annotations

import contextlib
import json
import os
import warnings
from typing import Any, Dict, Iterable, Iterator, Optional

from . import _ridge
from ._gpu import require_gpu_for
from ._paths import PathArg, existing_path, fs_path


class TraceAnalysis:
    """What ``ridge trace`` reports, as data: kernel count, top kernels (count, total, avg, min, max,
    % of summed kernel time), per-NVTX-step kernel counts, host range, GPU span and GPU busy time,
    GPU busy and idle time, the idle time the GPU spent waiting on the host, the overlap share of
    kernel time, launch latency split into time queued behind earlier work and launch overhead,
    the window the numbers cover, findings. Times in the JSON are nanoseconds; the ``*_ms``
    properties convert the usual ones. Every field of ``ridge trace --json`` is an attribute."""

    def __init__(self, json_text: str, text: str):
        self.data = json.loads(json_text)
        self.text = text

    def __getattr__(self, name: str):
        try:
            return self.__dict__["data"][name]
        except KeyError:
            raise AttributeError(name) from None

    kernels = property(lambda self: self.data.get("top_kernels", []), doc="top kernels, as dicts")
    steps = property(lambda self: self.data.get("steps", []),
                     doc='one dict per NVTX step range; "number" is its step in the program (0-based: in a '
                         'scheduled trace, the step the schedule counted)')
    step_numbers = property(lambda self: [s.get("number", i) for i, s in enumerate(self.steps)],
                            doc="the program's numbers of the steps in the analysis (a schedule records some)")
    gpu_busy_ms = property(lambda self: self.data.get("gpu_busy_ns", 0) / 1e6)
    idle_ms = property(lambda self: self.data.get("idle_time_ns", 0) / 1e6)
    idle_waiting_on_host_ms = property(lambda self: self.data.get("idle_waiting_on_host_ns", 0) / 1e6)
    kernel_time_ms = property(lambda self: self.data.get("kernel_time_ns", 0) / 1e6,
                              doc="kernel durations summed (overlapping kernels count twice)")
    overlap_share = property(lambda self: self.data.get("kernel_overlap_fraction", 0.0),
                             doc="share of summed kernel time during which another kernel also ran (0..1)")
    launch_latency_median_ms = property(lambda self: self.data.get("launch_latency_median_ns", 0.0) / 1e6,
                                        doc="launch call start to kernel start, median")
    launch_queued_median_ms = property(lambda self: self.data.get("launch_queued_median_ns", 0.0) / 1e6,
                                       doc="of the latency, time queued behind earlier work on the stream, median")
    launch_overhead_median_ms = property(lambda self: self.data.get("launch_overhead_median_ns", 0.0) / 1e6,
                                         doc="of the latency, the rest (launch overhead), median")
    window = property(lambda self: self.data.get("window", ""),
                      doc='what the numbers cover ("" = the whole trace, start-up included)')
    rejected_events = property(lambda self: self.data.get("rejected_events", []),
                               doc="events left out or repaired because their times made no sense, by reason")
    kernels_left_out = property(lambda self: self.data.get("kernels_left_out", 0),
                                doc="launches that ran under hardware counters (profiled or replayed): in the trace, "
                                    "out of every time (left_out_reason says why)")
    steps_left_out = property(lambda self: self.data.get("steps_left_out", 0),
                              doc="steps that launched one of them: out of the per-step numbers")

    @property
    def counters(self):
        """The measured roofline of the profiled kernels (a trace taken with counters), one row per
        kernel name ranked by the time it would save at its roof: calls, time share, DRAM bytes and
        FLOPs per call, intensity, shares of the ceilings, bound and reason, win, and what that win
        gives all kernel time. A pandas DataFrame; None when the trace has no counters."""
        roofline = self.data.get("counter_roofline")
        if roofline is None:
            return None
        try:
            import pandas as pd  # type: ignore[import-untyped, unused-ignore]
        except ImportError as error:
            raise ImportError("TraceAnalysis.counters needs pandas: pip install pandas") from error
        return pd.DataFrame(roofline["kernels"])

    def counters_by(self, by: str = "kernel"):
        """The measured roofline with one row per ``by``: "kernel" (as :attr:`counters`),
        "nvtx_range" (the innermost NVTX range each kernel was launched in: an operator) or "step"
        (each step of the trace's step range; its ``whole_speedup`` is that step's own). Launches
        without counters of their own count their kernel name's mean. A pandas DataFrame; None when
        the trace has no counters. Raises ridge.UsageError for another ``by`` or for "step" when the
        trace was analysed without a step range."""
        if by == "kernel":
            return self.counters
        if self.data.get("counter_roofline") is None:
            return None
        if by not in ("nvtx_range", "step"):
            raise _ridge.UsageError(f"by: unknown grouping '{by}': give kernel, nvtx_range or step")
        roofline = self.data.get("counter_roofline_by", {}).get(by)
        if roofline is None:
            raise _ridge.UsageError("by: grouping by step needs the step range: trace with step_range=NAME")
        try:
            import pandas as pd  # type: ignore[import-untyped, unused-ignore]
        except ImportError as error:
            raise ImportError("TraceAnalysis.counters_by needs pandas: pip install pandas") from error
        return pd.DataFrame(roofline["kernels"])

    @property
    def kernels_per_step(self) -> list:
        return [s.get("kernels", 0) for s in self.steps]

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return "```\n" + self.text + "\n```"


class TraceSession:
    """The object ``with ridge.trace(...) as t`` gives: ``t.analysis`` once the block ends. Its
    repr says where the trace goes and whether it is recording or finished (kernels, dropped
    records). A finished session holds only Python data: the C++ tracer is released at the end
    of the block, so a session kept alive to the interpreter's exit leaks nothing of ridge's."""

    def __init__(self, path: Optional[PathArg], step_range: str, top: int, all_api_calls: bool,
                 skip_seconds: float = 0.0, steady_state: bool = False, sync_records: bool = False,
                 api_calls: str = "selected", launch_calls: bool = False, counters: Optional[dict] = None,
                 schedule=None):
        self.path = path
        self.step_range = step_range
        self.top = top
        self.skip_seconds = skip_seconds
        self.from_range = _steady_state_range(step_range, steady_state)
        self._tracer: Optional[_ridge.Tracer] = _ridge.Tracer(all_api_calls=all_api_calls, synchronization_records=sync_records,
                                     api_calls=api_calls, launch_calls=launch_calls, step_range=step_range,
                                     schedule=schedule, **(counters or {}))
        self._dropped_records = 0
        self.analysis: Optional[TraceAnalysis] = None

    @property
    def dropped_records(self) -> int:
        """Records CUPTI dropped for lack of buffer space (0 is the only trustworthy answer)."""
        return self._tracer.dropped_records if self._tracer is not None else self._dropped_records

    @property
    def recording(self) -> bool:
        return self._tracer is not None and self._tracer.running

    def _finish(self) -> None:
        tracer = self._tracer
        if tracer is None:
            return  # finished already
        try:
            tracer.stop()
            if self.path is not None:
                path = fs_path(self.path, "the trace path")
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                tracer.write(path)
            self.analysis = TraceAnalysis(*tracer.analysis(self.top, self.step_range, self.skip_seconds,
                                                           self.from_range))
        finally:
            self._dropped_records = tracer.dropped_records
            self._tracer = None

    def __repr__(self) -> str:
        where = "no file" if self.path is None else repr(os.fsdecode(fs_path(self.path)))
        if self.recording:
            return f"<ridge.trace session: recording, to {where}>"
        if self._tracer is not None:
            return f"<ridge.trace session: not started, to {where}>"
        kernels = "no analysis" if self.analysis is None else f"{self.analysis.data.get('kernel_count', 0)} kernels"
        written = "not written" if self.path is None else f"written to {where}"
        return f"<ridge.trace session: finished, {kernels}, {self.dropped_records} dropped records, {written}>"


_nvtx_routed = False


def _steady_state_range(step_range: str, steady_state: bool) -> str:
    if not steady_state:
        return ""
    if not step_range:
        raise ValueError("steady_state=True starts at the first step: name the step's NVTX range with step_range=")
    return step_range


def _route_nvtx_to_cupti() -> None:
    global _nvtx_routed
    if not _nvtx_routed:
        _ridge.enable_nvtx_capture()
        _nvtx_routed = True


_API_CALLS = ("none", "selected", "most", "all")


@contextlib.contextmanager
def trace(path: Optional[PathArg] = "runs/trace.json", *, step_range: str = "", top: int = 10,
          all_api_calls: bool = False, skip_seconds: float = 0.0,
          steady_state: bool = False, sync_records: bool = False,
          api_calls: str = "selected", launch_calls: bool = False, counters: Optional[str] = None,
          metrics: Iterable[str] = (), counters_steps: Optional[str] = None,
          counters_first: Optional[int] = None, counters_replay: Optional[str] = None,
          schedule: Optional["_ridge.TraceSchedule"] = None,
          wait: Optional[int] = None, warmup: Optional[int] = None, active: Optional[int] = None,
          repeat: Optional[int] = None, skip_first: Optional[int] = None) -> Iterator[TraceSession]:
    """Traces the CUDA work of the block (kernels, copies, API calls, NVTX ranges) with CUPTI.

    Writes the Chrome/Perfetto trace to ``path`` (None: write nothing) and sets ``.analysis``.
    ``step_range``: the NVTX range name that marks one step, for per-step kernel counts, GPU span
    and busy time. ``.analysis`` covers the whole block unless ``skip_seconds`` (leave out what
    began in the first S seconds) or ``steady_state=True`` (from the first ``step_range`` range
    on) narrow it; the trace file keeps everything. ``path``: str, bytes or os.PathLike, any name
    the file system allows. ``all_api_calls``: record every CUDA call, not only launches, copies,
    syncs and allocations. ``sync_records``: CUPTI's records of the host's waits; off by default,
    as in ``ridge trace``, because CUPTI then hooks every CUDA runtime call, which PyTorch makes
    several of per operator (the waits still come from the recorded ``cuda*Synchronize`` calls). Raises
    ridge.Error if another profiler (torch.profiler, Nsight) holds CUPTI. The trace is written even
    when the block raises. ``api_calls``: which CUDA calls become records, as ``ridge trace --api``:
    "selected" (the default), "most" (all but trivial queries), "all" (= ``all_api_calls=True``),
    or "none" (least overhead; kernels then have no launch call, so no launch latency).
    ``launch_calls``: with "selected", record each kernel launch call too (cudaLaunchKernel,
    cuLaunchKernel), with flow arrows from call to kernel in the timeline. Off by default: hooking
    every launch costs ~0.6 us per launch from Python on an H200. Instead each kernel carries the
    time its launch was queued (~0.07 us), from which the analysis places kernels in steps and
    NVTX ranges, attributes idle gaps to the host, and times launch latency (queued to start).
    ``counters``: "roofline" reads each selected launch's hardware counters (DRAM and L2 bytes,
    FLOPs by precision) with CUPTI's range profiler, replaying it, and ``.analysis.counters`` is
    then the measured roofline of every profiled kernel; "raw" reads only ``metrics`` (CUPTI names
    with their rollup). The launches are those inside steps ``counters_steps`` ("10..12", counted
    by ``step_range``), else the first ``counters_first`` launches of each kernel name.
    ``counters_replay`` (as ``ridge trace --counters-replay``): how a metric set of several passes
    is replayed. "steps": the program's own steps replay it, pass p of a profiled step running on
    the p-th step after it (nothing saved or restored; the window then takes passes x its steps;
    the default with ``counters_steps``). "kernel": CUPTI replays each profiled kernel once per
    pass inside its launch, saving and restoring its memory (the default otherwise). Profiled and
    replayed launches, and the steps and NVTX ranges that launched them, never count in the
    timing: ``.analysis.kernels_left_out`` and ``steps_left_out`` say how many were left out. Bad
    counter options raise ridge.UsageError naming the field before anything is traced. Raises
    ridge.CountersUnavailableError where counters may not be read. ``schedule``: a ``ridge.TraceSchedule`` (or the keywords ``wait``, ``warmup``,
    ``active``, ``repeat``, ``skip_first``), like torch.profiler's schedule: steps are the pushes of
    ``step_range``; collection is off in the waiting steps, on in the warmup steps (whose records
    are dropped) and the active ones, which alone are kept. ``.analysis.step_numbers`` says which
    steps of the program it holds.
    """
    if api_calls not in _API_CALLS:
        raise _ridge.UsageError(f"api_calls={api_calls!r}: use one of {', '.join(_API_CALLS)}")
    if all_api_calls and api_calls not in ("selected", "all"):
        raise _ridge.UsageError(f"all_api_calls=True contradicts api_calls={api_calls!r}")
    if path is not None:
        fs_path(path, "the trace path")  # a bad path fails here, before anything is traced
    _ridge.check_trace_window(skip_seconds, _steady_state_range(step_range, steady_state))
    if not isinstance(launch_calls, bool):
        raise _ridge.UsageError(f"launch_calls={launch_calls!r}: use True or False")
    counter_options: Optional[Dict[str, Any]] = None
    if counters is not None or metrics:
        counter_options = {"counters": counters or "raw", "metrics": list(metrics),
                           "counters_steps": counters_steps or "", "counters_replay": counters_replay or ""}
        if counters_first is not None:
            counter_options["counters_first"] = counters_first
        elif counters_steps:
            counter_options["counters_first"] = 0  # every launch of the steps
        _ridge.check_counter_options(step_range=step_range, **counter_options)  # the library's checks, GPU or not
    elif counters_steps is not None or counters_first is not None or counters_replay is not None:
        raise _ridge.UsageError("counters_steps, counters_first and counters_replay choose the launches counters= "
                                "profiles and how: give counters too")
    schedule = _schedule_of(schedule, step_range, wait=wait, warmup=warmup, active=active, repeat=repeat,
                            skip_first=skip_first)
    require_gpu_for("trace")
    session = TraceSession(path, step_range, top, all_api_calls, skip_seconds, steady_state, sync_records, api_calls,
                           launch_calls, counter_options, schedule)
    tracer = session._tracer
    assert tracer is not None  # a new session holds its tracer until it finishes
    tracer.start()
    try:
        yield session
    finally:
        session._finish()
    if step_range and session.analysis is not None and not session.analysis.steps:
        warnings.warn(f"no NVTX range named {step_range!r} reached the trace. NVTX picks its tool at the process's "
                      "first NVTX call: import ridge and use ridge.nvtx (or ridge.trace) before anything else "
                      "calls NVTX.", RuntimeWarning, stacklevel=3)


def _schedule_of(schedule, step_range: str, **counts) -> Optional["_ridge.TraceSchedule"]:
    """The schedule ridge.trace's arguments ask for, its step range filled in and validated (in C++)."""
    given = {k: v for k, v in counts.items() if v is not None}
    if schedule is None and not given:
        return None
    if schedule is not None and given:
        raise _ridge.UsageError(f"give schedule= or the keywords {', '.join(sorted(given))}, not both")
    if schedule is None:
        schedule = _ridge.TraceSchedule(**given)
    elif not isinstance(schedule, _ridge.TraceSchedule):
        raise TypeError(f"schedule must be a ridge.TraceSchedule, not {type(schedule).__name__}")
    else:
        schedule = _ridge.TraceSchedule(wait=schedule.wait, warmup=schedule.warmup, active=schedule.active,
                                        repeat=schedule.repeat, skip_first=schedule.skip_first,
                                        step_range=schedule.step_range)  # a copy: the caller's stays as given
    if not schedule.step_range:
        schedule.step_range = step_range
    schedule.validate()
    return schedule


@contextlib.contextmanager
def nvtx(name: str) -> Iterator[None]:
    """An NVTX range around the block (a step or an operator in the trace). The first call routes
    NVTX to CUPTI, so ranges reach ridge.trace even when opened before a trace starts. ``name``:
    a str that UTF-8 can encode (TypeError, UnicodeEncodeError otherwise)."""
    if not isinstance(name, str):
        raise TypeError(f"the NVTX range name must be a str, not {type(name).__name__}")
    name.encode("utf-8")  # a lone surrogate fails here, with Python's own message
    _route_nvtx_to_cupti()
    scope = _ridge.NvtxScope(name)
    scope.enter()
    try:
        yield
    finally:
        scope.exit()


def analyze_trace(path: PathArg, *, step_range: str = "", top: int = 10, skip_seconds: float = 0.0,
                  steady_state: bool = False) -> TraceAnalysis:
    """Analyzes a saved trace (``ridge trace``, ``ridge profile``, ``ridge.trace``, PyTorch's
    profiler), as ``ridge trace --analyze`` does. ``skip_seconds`` leaves out what began in the
    first S seconds of the trace; ``steady_state=True`` keeps what began from the first
    ``step_range`` range on (start-up left out). Raises ridge.UsageError for a file that is not a
    trace or whose times are not numbers (the message names the file and the JSON path),
    FileNotFoundError or IsADirectoryError (both also UsageErrors) for a missing file or a folder.
    ``path``: str, bytes or os.PathLike, any name the file system allows."""
    return TraceAnalysis(*_ridge.analyze_trace_file(existing_path(path, "the trace"), top, step_range, skip_seconds,
                                                    _steady_state_range(step_range, steady_state)))
