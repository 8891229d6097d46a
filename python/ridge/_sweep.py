"""A size sweep in the spirit of ``triton.testing.perf_report``: a callable factory timed over
sizes, with ridge's rates, knees and plausibility warnings."""
from __future__ import annotations

import json
from typing import Any, Callable, Iterable, List, Optional

from . import _ridge
from ._gpu import require_gpu_for
from ._results import Results
from ._roofline import DeviceLike, Figure, ceilings as ceilings_of
from ._timing import measure


class Sweep:
    """The result of :func:`sweep`: ``results`` (records of ridge's schema), ``knees`` (fraction ->
    size or None) against the ceiling used, per-record ``warnings``, and ``plot`` (rate vs size)."""

    def __init__(self, results: Results, rate: str, ceiling: float, knees: list, warnings: List[List[str]]):
        self.results = results
        self.rate = rate
        self.ceiling = ceiling
        self.knees = dict(knees)
        self.warnings = warnings

    @property
    def records(self) -> list:
        return self.results.records

    @property
    def plot(self) -> Figure:
        unit, scale = ("GB/s", 1e9) if self.rate == "bytes" else ("TFLOP/s", 1e12)
        points = [(r["params"]["size"], r[f"{self.rate}_per_s"] / scale,
                   f"{r['params']['size']}: {r[f'{self.rate}_per_s'] / scale:.4g} {unit}") for r in self.records]
        series = [{"name": self.records[0]["name"] if self.records else "", "points": points, "line": True,
                   "markers": True, "dashed": False, "color": "", "end_label": "", "in_legend": True}]
        if self.ceiling > 0 and points:
            series.append({"name": f"ceiling {self.ceiling / scale:.4g} {unit}", "points":
                           [(points[0][0], self.ceiling / scale, ""), (points[-1][0], self.ceiling / scale, "")],
                           "line": True, "markers": False, "dashed": True, "color": "#888888", "end_label": "",
                           "in_legend": True})
        data = {"title": f"{unit} vs size", "x_label": "size", "y_label": unit, "log_x": True, "log_y": True,
                "series": series}
        return Figure(_ridge.render_plot(data), data)

    def __repr__(self) -> str:
        knees = ", ".join(f"{int(f * 100)}% at {'never' if s is None else f'{s:.4g}'}" for f, s in self.knees.items())
        return f"Sweep({len(self.records)} sizes; knees: {knees or 'no ceiling'})"


def sweep(factory: Callable[[int], Callable[[], Any]], sizes: Iterable[int], *, name: str = "sweep",
          method: str = "events", flops: Optional[Callable[[int], float]] = None,
          bytes: Optional[Callable[[int], float]] = None, dtype: str = "fp32",  # noqa: A002
          ceilings: DeviceLike = None, l2_bytes: float = 0, **timer_options) -> Sweep:
    """Times ``factory(n)`` (a callable that queues the work at size n) for each size with
    ``method`` ("events", "spin", "graph", "wall_sync"), counts ``flops(n)`` and ``bytes(n)``, and
    analyses the curve with ridge's library: the 70% and 90% knees against the device's ceiling
    (memory bandwidth when ``bytes`` is given, else the dtype's peak) and the plausibility warnings
    (faster than physically possible, high spread, L2-resident when ``l2_bytes`` is given).
    ``ceilings``: a catalog key, a GPU index (measured, cached) or DeviceCeilings; None: none."""
    if not callable(factory):
        raise TypeError("factory must be a callable: size -> callable that queues GPU work")
    gpu_timer = _ridge.method_from_string(method) in (_ridge.Method.cuda_events, _ridge.Method.spin_hold,
                                                        _ridge.Method.graph_replay)
    if gpu_timer or (isinstance(ceilings, int) and not isinstance(ceilings, bool)):
        require_gpu_for("sweep")
    device_ceilings = ceilings_of(ceilings) if ceilings is not None else None
    rate = "bytes" if bytes else "flops"
    ceiling = 0.0
    if device_ceilings is not None:  # before measuring: a dtype the ceilings lack is a UsageError
        ceiling = device_ceilings.memory_bytes_per_s if rate == "bytes" else device_ceilings.roof_for(dtype)
    results = Results()
    for n in sizes:
        m = measure(method, factory(n), **timer_options)
        results.add(m, name, dtype=dtype, params={"size": int(n)},
                    bytes=float(bytes(n)) if bytes else 0.0, flops=float(flops(n)) if flops else 0.0)
    curve = [(r["params"]["size"], r[f"{rate}_per_s"]) for r in results.records]
    knees = _ridge.find_knees(curve, ceiling) if ceiling > 0 and (bytes or flops) else []
    warnings = [_ridge.plausibility_warnings(json.dumps(r), device_ceilings, float(l2_bytes)) for r in results.records]
    return Sweep(results, rate, ceiling, knees, warnings)
