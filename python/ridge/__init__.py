"""ridge: measure GPU work honestly and explain the number.

Timers (PyTorch, Triton, CuPy or any callable that queues GPU work)::

    import ridge, torch
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    m = ridge.measure_cuda(lambda: a @ a)        # events on PyTorch's current stream
    print(m, m.rate(flops=2 * 4096**3).tflops)   # m is its median in ms; .samples, .ci, .meaning ...
    g = ridge.measure_graph(lambda: a @ a)       # launch-free: CUDA graph replay

Models with no GPU: ``matmul_intensity``, ``attainable_flops``, ``ridge_point``,
``decode_ceiling``, ``amdahl_speedup`` and its inverse ``amdahl_required_speedup``.
Result files: :class:`Results` (same JSON/CSV/Markdown as the CLI) and :func:`compare`; in CI,
``assert ridge.compare(base, new).ok`` (``compare`` raises :class:`NothingComparedError` when no
record could be compared).

Errors: ``ridge.Error`` is the base; ``UsageError`` (also a ValueError) for bad arguments;
``PathNotFoundError`` (also FileNotFoundError) and ``NotAFileError`` (also IsADirectoryError) for
paths; ``NoGpuError`` when no GPU is usable; ``CountersUnavailableError`` when hardware counters
may not be read; ``NothingComparedError``; ``CaptureError``. Warnings:
``LaunchBoundWarning`` when ``measure_cuda`` timed the host's launches rather than the GPU;
``CountMismatchWarning`` when the bytes or FLOPs given to ``rate`` disagree with the counters.
Catalog and roofline with no GPU: ``ridge.device("h100-sxm")``, ``ridge.devices()``,
``ridge.place_matmul(16, 4096, 4096, "bf16", device="h100-sxm")``, ``ridge.roofline(...)``.
Size sweeps: ``ridge.sweep(factory, sizes, bytes=..., ceilings=0)`` (knees, warnings, plot).
Tracing: ``with ridge.trace("runs/trace.json", step_range="step") as t: ...`` then ``t.analysis``.
The whole report: ``r = ridge.report("runs/report")`` writes the folder ``ridge report`` writes
(``history="runs/history.db"`` also adds the run to a run history).
Run history: ``h = ridge.History("runs/history.db")``; ``h.add(results)``, ``h.runs`` and
``h.series()`` (pandas DataFrames), ``h.check().regression_at_newest``.
"""
import atexit as _atexit

from ._cupti import load_wheel_cupti as _load_wheel_cupti

_load_wheel_cupti()  # before the extension loads CUPTI: one copy with PyTorch, in either import order
from . import _ridge  # noqa: E402
from ._ridge import (  # noqa: F401  (re-exported)
    CountersUnavailableError, Error, Method, NoGpuError, Summary, UsageError, VerificationError,
    amdahl_limit, amdahl_required_speedup, amdahl_speedup, attainable_flops, bound, decode_ceiling,
    describe_method, device_count, matmul_bytes, matmul_flops, matmul_intensity, no_gpu_reason,
    Device, DeviceCeilings, ShapePlacement, TraceSchedule, ridge_point, roofline_efficiency,
    roofline_floor_s, summarize,
)
from ._paths import NotAFileError, PathNotFoundError  # noqa: F401
from ._results import Comparison, NothingComparedError, Results, compare  # noqa: F401
from ._history import History, HistoryAdd, HistoryChange, HistoryCheck, HistoryImport  # noqa: F401
from ._report import Report, ReportError, ReportSection, report  # noqa: F401
from ._roofline import (  # noqa: F401
    Figure, cache_folder, cached_ceilings, ceilings, device, devices, load_catalog, place_matmul, roofline,
)
from ._sweep import Sweep, sweep  # noqa: F401
from ._trace import TraceAnalysis, analyze_trace, nvtx, trace  # noqa: F401
from ._timing import (  # noqa: F401
    CaptureError, CountMismatchWarning, ImpossibleRateWarning, LaunchBoundWarning, Measurement, Rate, measure,
    measure_cuda, measure_graph, measure_naive, measure_spin, measure_wall, stream_handle,
)

from ._gpu import require_gpu_for as _require_gpu_for
from ._signatures import class_signature as _class_signature, with_signature as _with_signature

# The C++ functions re-exported above, through wrappers that give inspect.signature their signature.
for _name, _value in list(globals().items()):
    if not _name.startswith("_") and hasattr(_value, "__nb_signature__") and not isinstance(_value, type):
        globals()[_name] = _with_signature(_value)
del _name, _value
# The C++ classes a user constructs: inspect.signature (help(), IDEs) reads their constructors.
for _class in (DeviceCeilings, Summary, TraceSchedule):
    _class.__signature__ = _class_signature(_class)  # type: ignore[attr-defined]
del _class

__version__ = "0.1.0"


def _quiet_leak_report_when_torch_holds_references() -> None:
    # PyTorch keeps references to a script's objects past the interpreter's teardown, where nanobind
    # would report ridge objects among them as leaked (dozens of lines that are not ridge's doing).
    import sys

    if "torch" in sys.modules:
        _ridge.set_leak_warnings(False)


_atexit.register(_quiet_leak_report_when_torch_holds_references)


def require_gpu(index: int = 0) -> None:
    """Makes GPU ``index`` current; NoGpuError (saying why) when no GPU is usable, UsageError when
    no GPU has that index."""
    _require_gpu_for("require_gpu")
    _ridge.require_gpu(index)


def describe_device(index: int = 0) -> dict:
    """The device's properties (name, SMs, L2, memory, clocks, versions, catalog match)."""
    import json

    _require_gpu_for("describe_device")
    return json.loads(_ridge.describe_device(index))


def read_clocks(index: int = 0) -> dict:
    """The device's clocks now (NVML): ``sm_mhz``, ``memory_mhz``, ``power_w``, ``temperature_c``,
    ``throttle_reasons``; -1 where unknown, ``source`` "none" without NVML."""
    import json

    return json.loads(_ridge.read_clocks(index))


# Written out, so type checkers (mypy --strict: no implicit re-export) see each public name.
__all__ = [
    "CaptureError", "Comparison", "CountMismatchWarning", "CountersUnavailableError", "Device", "DeviceCeilings",
    "Error", "Figure", "History", "HistoryAdd", "HistoryChange", "HistoryCheck", "HistoryImport",
    "ImpossibleRateWarning", "LaunchBoundWarning", "Measurement", "Method", "NoGpuError",
    "NotAFileError", "NothingComparedError", "PathNotFoundError", "Rate", "Report", "ReportError", "ReportSection",
    "Results", "ShapePlacement", "Summary", "Sweep", "TraceAnalysis", "TraceSchedule", "UsageError",
    "VerificationError", "amdahl_limit", "amdahl_required_speedup", "amdahl_speedup", "analyze_trace",
    "attainable_flops", "bound", "cache_folder", "cached_ceilings", "ceilings", "compare", "decode_ceiling",
    "describe_device", "describe_method", "device", "device_count", "devices", "load_catalog", "matmul_bytes",
    "matmul_flops", "matmul_intensity", "measure", "measure_cuda", "measure_graph", "measure_naive", "measure_spin",
    "measure_wall", "no_gpu_reason", "nvtx", "place_matmul", "read_clocks", "report", "require_gpu", "ridge_point",
    "roofline", "roofline_efficiency", "roofline_floor_s", "stream_handle", "summarize", "sweep", "trace",
]
