"""The timers, with the caller's stream and PyTorch-aware graph capture.

Names, argument order and defaults follow the C++ library (and the usual notebook helpers:
``measure_wall(function, samples=10, warmup=3, cuda=None)``, ``measure_cuda(function, warmup=5,
samples=20, repeats=1)``), so code written against those runs unchanged. Each returns a
:class:`Measurement`, which *is* its median in milliseconds wherever a number is expected.

``warmup`` and ``samples`` count calls, not milliseconds (Triton's ``do_bench(warmup=25, rep=100)``
takes milliseconds): ``measure_cuda(fn, warmup=5)`` runs ``fn`` five times before timing. For a
time budget instead, give ``target_ci_relative`` and ``time_budget_s`` (seconds).
"""
from __future__ import annotations

import contextlib
import html
import json
import inspect
import math
import numbers
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _ridge
from ._gpu import require_gpu_for
from ._signatures import signature_of

Repeats = Union[int, str]

# The library's defaults and limits, read once from C++ (CudaOptions, WallOptions): never restated here.
_CUDA = _ridge.CudaOptions()
_WALL = signature_of(_ridge.measure_wall).parameters  # samples, warmup: WallOptions{}'s


class CaptureError(_ridge.UsageError):
    """The callable could not be captured into a CUDA graph (see the message for why)."""


class LaunchBoundWarning(UserWarning):
    """A measurement mostly timed the host: queueing the work took about as long as the number
    measured, so it is the host's launch rate, not the GPU's time (``Measurement.warnings`` holds
    the text). ``measure_spin`` and ``measure_graph`` are launch-free. Silence it with
    ``warnings.simplefilter("ignore", ridge.LaunchBoundWarning)``."""


def _torch_if_in_use():
    """PyTorch's module when the program uses it on the GPU, else None (never imports it)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return torch
    except Exception:  # a broken or CPU-only build: treat as not in use
        return None
    return None


def stream_handle(stream: Any = None) -> int:
    """The CUDA stream handle (an int) that timing should use.

    None: PyTorch's current stream when PyTorch uses the GPU, else the legacy default stream (0).
    Also accepts an int handle, a ``torch.cuda.Stream`` (``.cuda_stream``) or any object with
    ``__cuda_stream__`` (the CUDA stream protocol: returns ``(version, handle)``).
    """
    if stream is None:
        torch = _torch_if_in_use()
        return int(torch.cuda.current_stream().cuda_stream) if torch is not None else 0
    if isinstance(stream, bool):
        raise TypeError("stream must be a stream object or an int handle, not a bool")
    if isinstance(stream, int):
        if stream < 0:
            raise ValueError(f"stream handle must be >= 0, got {stream}")
        return stream
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        value = protocol() if callable(protocol) else protocol
        if isinstance(value, tuple) and len(value) == 2:
            return int(value[1])
        raise TypeError(f"{type(stream).__name__}.__cuda_stream__ must give (version, handle), got {value!r}")
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    raise TypeError(
        f"stream must be None, an int handle, a torch.cuda.Stream or an object with __cuda_stream__; "
        f"got {type(stream).__name__}")


def _check_callable(fn: Any) -> None:
    if not callable(fn):
        raise TypeError(f"fn must be a callable that queues GPU work, got {type(fn).__name__}")


def _takes_stream(fn: Callable) -> bool:
    """Whether fn accepts one positional argument (the stream to launch on)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    return len(required) == 1


def _stream_adapter(fn: Callable, timed_stream: Optional[int] = None) -> Callable[[int], Any]:
    """fn as ridge calls it: fn(stream) when it takes the stream, else fn(). With PyTorch, a call
    on another stream than the timed one (the scratch capture that counts a call's launches before
    the stream is held) runs with that stream current, so PyTorch's launches land in the capture."""
    if _takes_stream(fn):
        return fn
    torch = _torch_if_in_use()
    if torch is None or timed_stream is None:
        return lambda _stream: fn()

    def call(stream: int) -> Any:
        if stream == timed_stream:
            return fn()
        with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
            return fn()
    return call


def _timed_stream_current(stream: Any, handle: int):
    """With PyTorch and ``stream=`` given, that stream is PyTorch's current stream while timing,
    so PyTorch and Triton work (both launch on the current stream) runs where ridge's events and
    hold are; otherwise the events would time an idle stream. A no-op otherwise."""
    torch = _torch_if_in_use()
    if torch is None or stream is None:
        return contextlib.nullcontext()
    if isinstance(stream, torch.cuda.Stream):
        return torch.cuda.stream(stream)
    return torch.cuda.stream(torch.cuda.ExternalStream(handle) if handle else torch.cuda.default_stream())


def _repeats_value(repeats: Repeats) -> int:
    if repeats == "auto":
        return 0
    if isinstance(repeats, bool) or not isinstance(repeats, int):
        raise TypeError(f"repeats must be an int >= 0 or 'auto', got {repeats!r}")
    return repeats


class CountMismatchWarning(UserWarning):
    """The bytes or FLOPs given to :meth:`Measurement.rate` disagree with what the hardware counters
    saw one call do (``measure_cuda(fn, counters=True)``) by more than the library's tolerance
    (:meth:`Measurement.count_findings` gives the findings as data)."""


class ImpossibleRateWarning(UserWarning):
    """``Measurement.rate`` gave a rate no GPU in ridge's catalog can reach: the time is not the
    work's (``measure_naive`` times the launch queue), or the stated bytes or FLOPs are too high."""


def impossible_rate_findings(flops_per_s: Optional[float], bytes_per_s: Optional[float]) -> List[str]:
    """Why a rate is physically impossible on every GPU ridge knows (empty when it is not): the
    library's check (``ridge::impossible_rate_findings``), with its slack and cache multiple."""
    return list(_ridge.impossible_rate_findings(flops_per_s or 0.0, bytes_per_s or 0.0))


class Rate(Tuple[Optional[float], Optional[float]]):
    """Throughput of a measurement: ``flops_per_s``, ``bytes_per_s`` (None when not given), and
    ``source``: "stated" when computed from the bytes and FLOPs the caller gave, "measured" when
    from the hardware counters of a counted measurement (DRAM bytes; FLOPs of every precision)."""

    source: str

    def __new__(cls, flops_per_s: Optional[float], bytes_per_s: Optional[float], source: str = "stated") -> "Rate":
        self = super().__new__(cls, (flops_per_s, bytes_per_s))
        self.source = source
        return self

    def __getnewargs__(self) -> Tuple[Optional[float], Optional[float], str]:  # type: ignore[override]
        return (self[0], self[1], self.source)  # pickle and copy keep the source

    @property
    def flops_per_s(self) -> Optional[float]:
        return self[0]

    @property
    def bytes_per_s(self) -> Optional[float]:
        return self[1]

    @property
    def tflops(self) -> Optional[float]:
        """TFLOP/s"""
        return None if self[0] is None else self[0] / 1e12

    @property
    def gb_per_s(self) -> Optional[float]:
        """GB/s"""
        return None if self[1] is None else self[1] / 1e9

    def __repr__(self) -> str:
        parts = []
        if self.tflops is not None:
            parts.append(f"{self.tflops:.3g} TFLOP/s")
        if self.gb_per_s is not None:
            parts.append(f"{self.gb_per_s:.4g} GB/s")
        measured = ", measured" if self.source == "measured" else ""
        return f"Rate({', '.join(parts) or 'nothing counted'}{measured})"


class Measurement(float):
    """A timing result that *is* its median in milliseconds (``float(m)``, ``m * 2``, ``m < 1``,
    ``f"{m:.3f}"`` all use it), and carries the rest: samples, quantiles, the median's confidence
    interval, the method and what its number means, and why sampling stopped.
    """

    _raw: "_ridge.Measurement"
    _divisor: int
    _method: str
    _summary: "_ridge.Summary"

    def __new__(cls, raw: "_ridge.Measurement", *, method: Optional[str] = None,
                per_call_divisor: int = 1) -> "Measurement":
        divisor = max(1, int(per_call_divisor))
        self = super().__new__(cls, raw.summary.median / divisor)
        self._raw = raw
        self._divisor = divisor
        self._method = method or _ridge.method_name(raw.method)
        if divisor == 1:
            self._summary = raw.summary
        else:
            self._summary = _ridge.summarize(list(np.asarray(raw.samples_ms) / divisor))
        return self

    @classmethod
    def from_record(cls, record: Dict[str, Any]) -> "Measurement":
        """The measurement a stored record holds (an entry of ``Results.records`` or of a result
        file's "records"): its raw samples (ms per call), method, repeats and L2 flush, so its
        summary, CI, ``rate`` and ``to_record`` are as when it was taken. UsageError when the record
        has no samples or an unknown method."""
        if not isinstance(record, dict):
            raise TypeError(f"record must be a dict of ridge's result schema, got {type(record).__name__}")
        samples = record.get("samples_ms")
        if not isinstance(samples, list) or not samples or not all(
                isinstance(x, numbers.Real) and not isinstance(x, bool) for x in samples):
            raise _ridge.UsageError(f"record {record.get('name', '?')!r}: 'samples_ms' must be a non-empty list of "
                                    "numbers (ms per call); a record written without its samples cannot be rebuilt")
        method = record.get("method")
        if not isinstance(method, str):
            raise _ridge.UsageError(f"record {record.get('name', '?')!r}: 'method' must be a method name, got {method!r}")
        given_extra = record.get("extra")
        extra: Dict[str, Any] = given_extra if isinstance(given_extra, dict) else {}
        raw = _ridge.Measurement.__new__(_ridge.Measurement)
        raw.__setstate__((_ridge.method_from_string(method), [float(x) for x in samples],
                          int(record.get("repeats_per_sample", 1)), bool(record.get("l2_flushed", False)),
                          str(extra.get("stop_reason", "samples")), [], 0, 0.0, -1.0, 0.0, -1.0, True, ""))
        return cls(raw, method=method)

    # ---- the numbers, all in milliseconds per call ---------------------------------------
    @property
    def median_ms(self) -> float:
        return float(self)

    @property
    def min_ms(self) -> float:
        return self._summary.min

    @property
    def max_ms(self) -> float:
        return self._summary.max

    @property
    def mean_ms(self) -> float:
        return self._summary.mean

    @property
    def summary(self) -> "_ridge.Summary":
        return self._summary

    @property
    def quantiles(self) -> dict:
        """p10, p25, p50, p75, p90 in ms."""
        s = self._summary
        return {"p10": s.p10, "p25": s.p25, "p50": s.median, "p75": s.p75, "p90": s.p90}

    @property
    def ci(self) -> tuple:
        """Distribution-free confidence interval of the median, (low, high) in ms."""
        return (self._summary.median_ci_low, self._summary.median_ci_high)

    @property
    def cv(self) -> float:
        """Coefficient of variation of the samples (stddev / mean)."""
        return self._summary.cv

    @property
    def samples(self) -> np.ndarray:
        """Raw samples in ms per call: a read-only view of the C++ buffer when no rescaling applies."""
        raw = self._raw.samples_ms
        return raw if self._divisor == 1 else np.asarray(raw) / self._divisor

    @property
    def method(self) -> str:
        return self._method

    @property
    def meaning(self) -> str:
        """What this method's number means, in one sentence."""
        return _ridge.describe_method(_ridge.method_from_string(self._method))

    @property
    def stop_reason(self) -> str:
        return self._raw.stop_reason

    @property
    def sample_sm_mhz(self) -> List[float]:
        """The SM clock (MHz) of each kept sample; empty unless ``throttle_threshold`` was set."""
        return list(self._raw.sample_sm_mhz)

    @property
    def throttled_samples_dropped(self) -> int:
        """Samples taken below ``throttle_threshold`` and dropped (not in ``samples``)."""
        return self._raw.throttled_samples_dropped

    @property
    def rest_before_sample_s(self) -> float:
        """Seconds the GPU was left idle before each held batch (0: back to back)."""
        return self._raw.rest_before_sample_s

    @property
    def settle_ms(self) -> float:
        """Time spent running the work until the SM clock stopped moving, before the first sample
        (ms; launch-free methods); 0 when the clock was not settled (no NVML, or ``settle_max_s=0``)."""
        return self._raw.settle_ms

    @property
    def settled_sm_mhz(self) -> float:
        """The SM clock (MHz) sampling started at; -1 when not read."""
        return self._raw.settled_sm_mhz

    @property
    def settle_reached_steady(self) -> bool:
        """False when settling ran out of time with the clock still moving (a warning says so)."""
        return self._raw.settle_reached_steady

    @property
    def repeats_per_sample(self) -> int:
        return self._raw.repeats_per_sample * self._divisor

    @property
    def l2_flushed(self) -> bool:
        return self._raw.l2_flushed

    @property
    def host_queue_ms(self) -> float:
        """measure_cuda: the host's time to queue one call, median (ms); -1 when not timed."""
        return self._raw.host_queue_ms

    @property
    def warnings(self) -> List[str]:
        """What the library finds wrong with this number on its own, e.g. "launch-bound: ..." when
        the host's launches, not the GPU, set the pace (see :class:`LaunchBoundWarning`)."""
        return list(_ridge.measurement_warnings(self._raw))

    @property
    def counted(self) -> Optional["_ridge.CountedWork"]:
        """What one call did, from hardware counters (``measure_cuda(fn, counters=True)``): DRAM
        bytes read and written, L2 bytes, FLOPs by precision, kernels, the profiled pass's SM clock.
        None when the measurement was not counted."""
        return self._raw.counted

    def count_findings(self, bytes: Optional[float] = None,  # noqa: A002
                       flops: Optional[float] = None) -> List["_ridge.WorkCountFinding"]:
        """Where the `bytes` (DRAM) and `flops` you count per call disagree with the counters by
        more than the library's tolerance (``counted_work_tolerance`` of the stated amount), or
        cannot be checked: the library's findings as
        data (``.text`` in words). Empty when all you state agrees. Needs a counted measurement."""
        if self.counted is None:
            raise _ridge.UsageError("count_findings needs a counted measurement: measure_cuda(fn, counters=True)")
        stated = [_stated_amount(what, value) for what, value in (("bytes", bytes), ("flops", flops))]
        return list(_ridge.compare_counted_work(stated[0] or 0.0, stated[1] or 0.0, self.counted))

    def rate(self, flops: Optional[float] = None, bytes: Optional[float] = None, *,  # noqa: A002
             measured: Optional[bool] = None) -> Rate:
        """FLOP/s and bytes/s for `flops` and `bytes` per call (``.tflops``, ``.gb_per_s``).

        measured: use the hardware counters' DRAM bytes and FLOPs (all precisions) of a counted
        measurement (``measure_cuda(fn, counters=True)``) instead of stated ones. None (default):
        measured when nothing is stated and the measurement was counted. ``Rate.source`` says which
        was used. Stated amounts that disagree with the counters raise a :class:`CountMismatchWarning`.
        """
        seconds = float(self) * 1e-3
        if not seconds > 0:
            raise ValueError("the measurement's median is not positive: no rate")
        if measured is None:
            measured = flops is None and bytes is None and self.counted is not None
        if measured:
            if self.counted is None:
                raise _ridge.UsageError("rate(measured=True) needs a counted measurement: "
                                        "measure_cuda(fn, counters=True)")
            if flops is not None or bytes is not None:
                raise _ridge.UsageError("rate(measured=True) takes the counters' bytes and FLOPs; give no flops= "
                                        "or bytes= with it")
            return Rate(self.counted.total_flops / seconds, self.counted.dram_bytes / seconds, "measured")
        if self.counted is not None:
            for finding in self.count_findings(bytes=bytes, flops=flops):
                warnings.warn(finding.text, CountMismatchWarning, stacklevel=2)
        rate = Rate(None if flops is None else flops / seconds, None if bytes is None else bytes / seconds)
        for impossible in impossible_rate_findings(rate.flops_per_s, rate.bytes_per_s):
            warnings.warn(impossible, ImpossibleRateWarning, stacklevel=2)
        return rate

    def to_record(self, name: str, *, dtype: str = "", params: Optional[dict] = None, bytes: float = 0,  # noqa: A002
                  flops: float = 0) -> dict:
        """A record of ridge's result schema (what the CLI writes), for :class:`ridge.Results`."""
        for what, value in (("bytes", bytes), ("flops", flops)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise _ridge.UsageError(f"{what} must be a finite number (per call), got {value!r}")
        if not isinstance(params or {}, dict):
            raise _ridge.UsageError(f"params must be a dict of the measured case's settings, got {params!r}")
        return json.loads(_ridge.measurement_record(self._raw, name, self._method, self._divisor, dtype,
                                                    params_json(params), float(bytes), float(flops)))

    # ---- the plain-Python helpers' dictionary ------------------------------------------------
    # The textbook helpers return {"median_ms", "min_ms", "max_ms", "samples"}; code written
    # against them (r["median_ms"], dict(r)) runs unchanged. As there, "samples" is the count.
    _DICT_KEYS = ("median_ms", "min_ms", "max_ms", "samples")

    def keys(self) -> Tuple[str, ...]:
        return self._DICT_KEYS

    def __getitem__(self, key: str) -> Union[float, int]:
        if key == "samples":
            return self._summary.count
        if key in self._DICT_KEYS:
            return getattr(self, key)
        raise KeyError(f"{key!r}: a Measurement's keys are {', '.join(map(repr, self._DICT_KEYS))} "
                       "(the attributes hold the rest: .samples, .ci, .quantiles, .method ...)")

    def __contains__(self, key: object) -> bool:
        return key in self._DICT_KEYS

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self._DICT_KEYS else default

    # ---- display ------------------------------------------------------------------------------
    def __repr__(self) -> str:
        low, high = self.ci
        flags = "".join(f", WARNING {w}" for w in self.warnings)
        return (f"Measurement({float(self):.6g} ms median, {self._method}, n={self._summary.count}, "
                f"CI [{low:.6g}, {high:.6g}], cv {self.cv:.2%}, stop: {self.stop_reason or 'samples'}{flags})")

    def __str__(self) -> str:
        return float.__repr__(float(self))

    def _repr_html_(self) -> str:
        rows = [("median", f"{float(self):.6g} ms"), ("95% CI of median", "[{:.6g}, {:.6g}] ms".format(*self.ci)),
                ("min / max", f"{self.min_ms:.6g} / {self.max_ms:.6g} ms"), ("cv", f"{self.cv:.2%}"),
                ("samples", str(self._summary.count)), ("calls per sample", str(self.repeats_per_sample)),
                ("method", self._method), ("meaning", self.meaning), ("stopped because", self.stop_reason)]
        rows += [("warning", w) for w in self.warnings]
        body = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                       for k, v in rows)
        return f"<table>{body}</table>"

    def __reduce__(self):  # pickle and copy keep every field: the C++ measurement pickles whole
        return (_restore_measurement, (self._raw, self._method, self._divisor))


def params_json(params: Optional[dict]) -> str:
    """A record's params as JSON: NumPy scalars become Python numbers (``np.int64(3)`` -> 3); any
    other value JSON cannot hold is a UsageError naming it."""
    def plain(value: Any) -> Any:
        if isinstance(value, np.generic):
            return value.item()
        raise _ridge.UsageError(f"params: {value!r} ({type(value).__name__}) cannot be stored in a record; use "
                                "numbers, strings, booleans, None, or lists and dicts of them")
    try:
        return json.dumps(dict(params or {}), default=plain, allow_nan=False)
    except ValueError as error:
        if isinstance(error, _ridge.UsageError):
            raise
        raise _ridge.UsageError(f"params: {error} (NaN and infinity cannot be stored in a record)") from None


def _stated_amount(what: str, value: Optional[float]) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise _ridge.UsageError(f"{what} must be a finite number >= 0 (per call), got {value!r}")
    return float(value)


def _restore_measurement(raw: "_ridge.Measurement", method: str, divisor: int) -> Measurement:
    return Measurement(raw, method=method, per_call_divisor=divisor)


def _warn_if_flagged(m: Measurement) -> Measurement:
    """Raises each library warning about `m` as a Python warning at the caller's line."""
    for text in m.warnings:
        if text.startswith("launch-bound"):
            warnings.warn(f"{text}. From Python: ridge.measure_spin or ridge.measure_graph.", LaunchBoundWarning,
                          stacklevel=3)
    return m


# ---- the timers ---------------------------------------------------------------------------------

def measure_wall(function: Callable[[], Any], samples: int = _WALL["samples"].default,
                 warmup: int = _WALL["warmup"].default, cuda: Optional[bool] = None) -> Measurement:
    """Wall-clock ms of ``function()``, the GPU synchronized before and after each sample
    (``cuda=None``: whenever a usable GPU exists; ``cuda=True`` raises NoGpuError without one).
    ``warmup`` untimed calls first, then ``samples`` timed calls (counts, not milliseconds)."""
    _check_callable(function)
    if cuda:
        require_gpu_for("measure_wall")
    return Measurement(_ridge.measure_wall(function, samples, warmup, cuda))


def measure_naive(function: Callable[[], Any], samples: int = _WALL["samples"].default,
                  warmup: int = _WALL["warmup"].default) -> Measurement:
    """The wrong way, kept for the demonstration: no synchronization, so GPU work is only queued."""
    _check_callable(function)
    return Measurement(_ridge.measure_naive(function, samples, warmup))


def _cuda_options(warmup: int, samples: int, repeats: Repeats, stream: Any, **fields) -> "_ridge.CudaOptions":
    """The timers' options, checked (types and ranges, by the library) before any GPU work."""
    return _ridge.CudaOptions(warmup=warmup, samples=samples, repeats=_repeats_value(repeats),
                              stream=stream_handle(stream), **fields)


def measure_cuda(function: Callable[[], Any], warmup: int = _CUDA.warmup, samples: int = _CUDA.samples,
                 repeats: Repeats = _CUDA.repeats, *, stream: Any = None, flush_l2: bool = _CUDA.flush_l2,
                 target_ci_relative: float = _CUDA.target_ci_relative,
                 time_budget_s: float = _CUDA.time_budget_s, max_samples: int = _CUDA.max_samples,
                 target_sample_ms: float = _CUDA.target_sample_ms, counters: bool = False) -> Measurement:
    """GPU ms per call between CUDA events around ``repeats`` calls of ``function`` on the
    caller's stream (PyTorch's current stream by default; ``stream=`` is made PyTorch's current
    stream while timing). ``warmup``: untimed calls first; ``samples``: timed samples (both counts,
    not milliseconds as in Triton's ``do_bench``). Includes the host's launch latency when the GPU was idle;
    ``measure_spin`` and ``measure_graph`` remove it. When queueing the calls took the host about
    as long as the number itself (a tiny kernel launched from Python), the number is the host's
    launch rate, not the GPU's time: the result then carries a "launch-bound: ..." entry in
    ``.warnings`` (and its repr), and a :class:`LaunchBoundWarning` is raised.

    repeats: calls per sample, or "auto" (0) for about ``target_sample_ms`` per sample.
    flush_l2: overwrite the L2 before each sample, outside the timed window (cold cache).
    target_ci_relative: keep sampling until the median's CI half-width is below this fraction of
    the median, or ``time_budget_s`` (seconds) runs out.
    counters: after the timed samples, call ``function`` once more under CUPTI's range profiler
    (each kernel replayed, so never timed) and keep what it did in ``.counted``: DRAM and L2
    bytes, FLOPs by precision, kernels, the SM clock of that pass. ``rate()`` then uses them, and
    ``to_record`` adds them and any disagreement with the bytes and FLOPs you state. Raises
    ``CountersUnavailableError`` (before timing) where counters cannot be read: not permitted,
    a virtualized or MIG GPU, inside ``ridge.trace``, or under Nsight Systems or Nsight Compute.
    """
    _check_callable(function)
    if not isinstance(counters, bool):
        raise TypeError(f"counters must be True or False, got {counters!r}")
    options = _cuda_options(warmup, samples, repeats, stream, flush_l2=flush_l2,
                            target_ci_relative=target_ci_relative, time_budget_s=time_budget_s,
                            max_samples=max_samples, target_sample_ms=target_sample_ms)
    require_gpu_for("measure_cuda")
    with _timed_stream_current(stream, options.stream):
        adapter = _stream_adapter(function, options.stream)
        if counters:
            raw = _ridge.measure_with_counters(_ridge.Method.cuda_events, adapter, options)
        else:
            raw = _ridge.measure_cuda(adapter, options)
        return _warn_if_flagged(Measurement(raw))


def measure_spin(function: Callable[[], Any], warmup: int = _CUDA.warmup, samples: int = _CUDA.samples,
                 repeats: Repeats = _CUDA.repeats, *, stream: Any = None, flush_l2: bool = _CUDA.flush_l2,
                 target_ci_relative: float = _CUDA.target_ci_relative,
                 time_budget_s: float = _CUDA.time_budget_s, max_samples: int = _CUDA.max_samples,
                 target_sample_ms: float = _CUDA.target_sample_ms,
                 throttle_threshold: float = _CUDA.throttle_threshold,
                 throttle_recovery_s: float = _CUDA.throttle_recovery_s,
                 rest_before_sample_s: float = _CUDA.rest_before_sample_s) -> Measurement:
    """Like :func:`measure_cuda`, with the stream held by a spin kernel while each sample is
    queued (nvbench's technique): GPU time only, the launch latency stays out. With ``flush_l2``
    each sample is flushed, synchronized and held on its own, as nvbench's cold measurement does.

    ``throttle_threshold`` (0..1, e.g. 0.75; 0 = off), as nvbench's throttle threshold: after each
    held batch the SM clock is read (NVML); a batch below that fraction of the rated SM clock is
    dropped (``.throttled_samples_dropped``) and the GPU rests ``throttle_recovery_s`` seconds.
    The kept samples' clocks are in ``.sample_sm_mhz`` (MHz).

    ``rest_before_sample_s``: leave the GPU idle this many seconds before each held batch, as a
    loop with host work between samples does (nvbench's cold loop from Python idles ~1.6 ms per
    8192^3 BF16 matmul). A power-limited kernel then runs at the clocks it reaches after a pause
    (9% faster for that matmul on an H200) rather than under sustained load (0, the default)."""
    _check_callable(function)
    options = _cuda_options(warmup, samples, repeats, stream, flush_l2=flush_l2,
                            target_ci_relative=target_ci_relative, time_budget_s=time_budget_s,
                            max_samples=max_samples, target_sample_ms=target_sample_ms,
                            throttle_threshold=throttle_threshold, throttle_recovery_s=throttle_recovery_s,
                            rest_before_sample_s=rest_before_sample_s)
    require_gpu_for("measure_spin")
    with _timed_stream_current(stream, options.stream):
        return Measurement(_ridge.measure_spin(_stream_adapter(function, options.stream), options))


def _auto_graph_repeats(function, stream: int, target_sample_ms: float) -> int:
    """Calls per captured graph for repeats=0, chosen as the C++ timers choose (auto_repeats)."""
    probe = _ridge.measure_cuda(lambda _s: function(), _ridge.CudaOptions(warmup=1, samples=3, stream=stream))
    return _ridge.auto_repeats(probe.summary.median, target_sample_ms)


_CAPTURE_RULES = ("Graph capture needs GPU work only: no host synchronization (.item(), .cpu(), print of a "
                  "tensor), no new allocations outside PyTorch's allocator, fixed shapes. Use measure_spin instead.")


def _check_no_host_sync(torch, function) -> None:
    """Runs function once with PyTorch's sync debug mode set to error, so a call that would
    synchronize with the host fails here, before a capture starts: a failed capture can leave
    PyTorch's stream state broken for the rest of the process."""
    previous = torch.cuda.get_sync_debug_mode()
    try:
        with warnings.catch_warnings():  # PyTorch calls the mode a prototype on every switch
            warnings.filterwarnings("ignore", message="Synchronization debug mode")
            torch.cuda.set_sync_debug_mode("error")
        function()
    except RuntimeError as error:
        if "synchroniz" not in str(error):
            raise
        raise CaptureError(f"the callable synchronizes with the host, so it cannot be captured into a CUDA graph "
                           f"({error}). {_CAPTURE_RULES}") from error
    finally:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Synchronization debug mode")
            torch.cuda.set_sync_debug_mode(previous)


def _measure_graph_torch(torch, function, options: "_ridge.CudaOptions") -> Measurement:
    """Captures with torch.cuda.graph, so PyTorch's caching allocator knows about the capture."""
    stream, repeats = options.stream, options.repeats
    if repeats == 0:
        repeats = _auto_graph_repeats(function, stream, options.target_sample_ms)
    torch_stream = torch.cuda.ExternalStream(stream) if stream else torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(torch_stream)
    with torch.cuda.stream(side):  # warm up outside the capture, as PyTorch requires
        _check_no_host_sync(torch, function)
        for _ in range(max(1, options.warmup)):
            function()
    torch_stream.wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with torch.cuda.graph(graph):
                for _ in range(repeats):
                    function()
    except Exception as error:  # noqa: BLE001 - say what failed, keep the cause
        raise CaptureError(f"the callable could not be captured into a CUDA graph ({type(error).__name__}: "
                           f"{error}). {_CAPTURE_RULES}") from error
    for w in caught:
        # PyTorch warns when the capture recorded nothing: timing it would time an empty replay.
        if "CUDA Graph is empty" in str(w.message):
            raise CaptureError("the callable queued no GPU work on PyTorch's current stream, so the captured "
                               "graph is empty and its replay would time nothing. Time GPU work (tensors on "
                               "the GPU), launched on the current stream.")
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    with torch.cuda.stream(torch_stream):
        raw = _ridge.measure_spin(lambda _s: graph.replay(), options.replace(repeats=1))
    return Measurement(raw, method="graph_replay", per_call_divisor=repeats)


def measure_graph(function: Callable[..., Any], warmup: int = _CUDA.warmup, samples: int = _CUDA.samples,
                  repeats: Repeats = _CUDA.graph_repeats, *, stream: Any = None, flush_l2: bool = _CUDA.flush_l2,
                  target_ci_relative: float = _CUDA.target_ci_relative,
                  time_budget_s: float = _CUDA.time_budget_s, max_samples: int = _CUDA.max_samples,
                  target_sample_ms: float = _CUDA.target_sample_ms,
                  throttle_threshold: float = _CUDA.throttle_threshold,
                  throttle_recovery_s: float = _CUDA.throttle_recovery_s,
                  rest_before_sample_s: float = _CUDA.rest_before_sample_s) -> Measurement:
    """``repeats`` calls captured in one CUDA graph, its replays timed behind a held stream: GPU
    ms per call with no launch cost (``triton.testing.do_bench_cudagraph``'s idea).

    With PyTorch the capture goes through ``torch.cuda.graph`` (its allocator must know); other
    code must launch on the stream it is given: ``function(stream_handle)``. Raises
    :class:`CaptureError` when the callable cannot be captured.
    """
    _check_callable(function)
    if flush_l2:
        raise _ridge.UsageError("flush_l2 cannot apply inside one graph replay; use measure_cuda or measure_spin")
    options = _cuda_options(warmup, samples, repeats, stream, flush_l2=flush_l2,
                            target_ci_relative=target_ci_relative, time_budget_s=time_budget_s,
                            max_samples=max_samples, target_sample_ms=target_sample_ms,
                            throttle_threshold=throttle_threshold, throttle_recovery_s=throttle_recovery_s,
                            rest_before_sample_s=rest_before_sample_s)
    require_gpu_for("measure_graph")
    torch = _torch_if_in_use()
    if torch is not None and not _takes_stream(function):
        return _measure_graph_torch(torch, function, options)
    try:
        return Measurement(_ridge.measure_graph(_stream_adapter(function), options))
    except _ridge.NoGpuError:
        raise
    except _ridge.Error as error:
        raise CaptureError(f"{error}. Without PyTorch, the callable must take the stream handle and launch on it: "
                           "function(stream).") from error


def _measure_cpu_wall(function: Callable[[], Any], samples: int = _WALL["samples"].default,
                      warmup: int = _WALL["warmup"].default) -> Measurement:
    return measure_wall(function, samples, warmup, cuda=False)


# The timer of each Method; the names that select one are the library's (method_names()).
_TIMERS: Dict["_ridge.Method", Callable[..., Measurement]] = {_ridge.Method.cpu_wall: _measure_cpu_wall, _ridge.Method.wall_naive: measure_naive,
           _ridge.Method.wall_sync: measure_wall, _ridge.Method.cuda_events: measure_cuda,
           _ridge.Method.spin_hold: measure_spin, _ridge.Method.graph_replay: measure_graph}


def measure(method: str, function: Callable[..., Any], *args, **kwargs) -> Measurement:
    """Dispatches to the timer of ``method``: any name the library accepts, as the CLI does
    ("events", "spin", "graph", "wall_sync", "wall_naive", a :class:`Method`'s name, ...)."""
    if not isinstance(method, str):
        raise TypeError(f"method must be a str, got {method!r}")
    return _TIMERS[_ridge.method_from_string(method)](function, *args, **kwargs)
