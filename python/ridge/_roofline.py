"""The catalog, ceilings and the roofline: placing operations without running them, and plots."""
from __future__ import annotations

import os
from typing import Iterable, Optional, Sequence, Tuple, Union

from . import _ridge
from ._gpu import require_gpu_for
from ._paths import PathArg, existing_path, fs_path
from ._ridge import DeviceCeilings

DeviceLike = Union[str, int, DeviceCeilings, "_ridge.Device", None]


def device(key: str) -> "_ridge.Device":
    """A device's datasheet entry (``ridge.device("h100-sxm").ceilings``)."""
    return _ridge.device(key)


def devices() -> list:
    """The keys of ridge's device catalog."""
    return _ridge.devices()


def ceilings(of: DeviceLike = 0, refresh: bool = False) -> DeviceCeilings:
    """Ceilings to compare with: a catalog key gives the datasheet's, a GPU index the measured
    ones (cached as the CLI caches them; measured in seconds when absent or ``refresh``), a
    DeviceCeilings or Device is used as it is."""
    if isinstance(of, DeviceCeilings):
        return of
    if isinstance(of, _ridge.Device):
        return of.ceilings
    if isinstance(of, str):
        return _ridge.device(of).ceilings
    if isinstance(of, int) and not isinstance(of, bool):
        require_gpu_for("ceilings")
        return _ridge.measured_ceilings(of, refresh).ceilings
    raise TypeError(f"expected a catalog key, a GPU index, a Device or DeviceCeilings, got {type(of).__name__}")


def load_catalog(path: PathArg) -> None:
    """Replaces the active device catalog with a catalog JSON file (the form of ``RIDGE_CATALOG``)."""
    _ridge.load_catalog(existing_path(path, "the catalog"))


def cache_folder() -> "os.PathLike[str]":
    """Where ridge caches measurements, as the CLI does: ``$RIDGE_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/ridge``, else ``~/.cache/ridge`` (a pathlib.Path)."""
    return _ridge.cache_folder()


def cached_ceilings(uuid: str) -> "Optional[_ridge.MeasuredCeilings]":
    """The measured ceilings cached for the GPU with this UUID (``describe_device()["uuid"]``),
    measuring nothing: None when there is no cache file. A cache file that cannot be used is
    None too, with a RuntimeWarning saying why (``ceilings(index)`` then measures over it)."""
    cached, problem = _ridge.cached_ceilings(uuid)
    if problem:
        import warnings
        warnings.warn(f"the ceilings cache is not used: {problem}", RuntimeWarning, stacklevel=2)
    return cached


def _default_ceilings(device: DeviceLike, caller: str) -> DeviceCeilings:
    """The ceilings of ``device``; with None, GPU 0's measured ones (cached, else measured in
    seconds), and without a usable GPU a NoGpuError asking for ``device=``."""
    if device is not None:
        return ceilings(device)
    reason = _ridge.no_gpu_reason()
    if reason:
        raise _ridge.NoGpuError(
            f"ridge.{caller}: no device given and no GPU is usable here ({reason}); pass device= a catalog key "
            f"(e.g. device='h100-sxm'; ridge.devices() lists them), a GPU index or ridge.DeviceCeilings")
    return ceilings(0)


def place_matmul(m: float, n: float, k: float, dtype: str = "bf16",
                 device: DeviceLike = None) -> "_ridge.ShapePlacement":
    """Places [m,k] @ [k,n] on a device's roofline without running it: ``.intensity_flop_per_byte``,
    ``.attainable_flops_per_s``, ``.ridge_point``, ``.bound`` ("memory" or "compute"), ``.floor_s``,
    ``.placed_on`` (the ceilings used); ``print()`` shows them in one line, as ``ridge roofline
    --matmul`` does. ``device``: a catalog key ("h100-sxm": its datasheet), a GPU index (measured,
    cached), a Device or DeviceCeilings; None: GPU 0's measured ceilings, and NoGpuError when no GPU
    is usable. UsageError when the device has no peak for ``dtype`` (e.g. bf16 on a T4)."""
    return _ridge.place_matmul(_default_ceilings(device, "place_matmul"), m, n, k, dtype)


class Figure:
    """A plot from ridge's library: ``.svg`` (what the CLI writes), shown inline in Jupyter, and
    ``.to_matplotlib()`` for a matplotlib figure of the same series."""

    def __init__(self, svg: str, data: dict):
        self.svg = svg
        self.data = data

    @property
    def warnings(self) -> list:
        """Findings about what is drawn (e.g. a point above the roof: impossible); also in the SVG."""
        return list(self.data.get("warnings", []))

    def __repr__(self) -> str:
        title = self.data.get("title") or "untitled"
        flagged = f", {len(self.warnings)} warning(s): .warnings" if self.warnings else ""
        return (f"Figure({title!r}, {len(self.data.get('series', []))} series{flagged}: .save(path), .svg, "
                f".to_matplotlib())")

    def _repr_svg_(self) -> str:
        return self.svg

    def save(self, path: PathArg) -> None:
        """Writes the SVG the way ridge writes every file ('-' = stdout); any file name."""
        _ridge.write_text(fs_path(path), self.svg)

    def to_matplotlib(self):
        try:
            import matplotlib.pyplot as plt  # type: ignore[import-not-found, import-untyped, unused-ignore]
        except ImportError as error:
            raise ImportError("Figure.to_matplotlib needs matplotlib: pip install matplotlib") from error
        fig, ax = plt.subplots(figsize=(9, 5.6))
        for s in self.data["series"]:
            xs = [p[0] for p in s["points"]]
            ys = [p[1] for p in s["points"]]
            style = ("--" if s["dashed"] else "-") if s["line"] else ""
            ax.plot(xs, ys, linestyle=style or "none", marker="o" if s["markers"] else None,
                    color=s["color"] or None, label=s["name"] if s["in_legend"] and s["name"] else None)
        ax.set_xscale("log" if self.data["log_x"] else "linear")
        ax.set_yscale("log" if self.data["log_y"] else "linear")
        ax.set_xlabel(self.data["x_label"])
        ax.set_ylabel(self.data["y_label"])
        ax.set_title(self.data["title"])
        if any(s["in_legend"] and s["name"] for s in self.data["series"]):
            ax.legend(fontsize="small")
        return fig


Operation = Tuple[str, str, float, float]  # label, dtype, FLOP/byte, FLOP/s


def roofline(device: DeviceLike = None, operations: Iterable[Operation] = (), title: str = "") -> Figure:
    """The roofline of a device (its datasheet for a catalog key, measured ceilings for a GPU index,
    a Device or DeviceCeilings; None: GPU 0's measured ceilings, NoGpuError when no GPU is usable)
    with operations placed on it: (label, dtype, intensity in FLOP/byte, achieved FLOP/s), each
    finite and > 0 (UsageError names the operation otherwise). An operation above its roof
    (impossible) or with no roof of its dtype is listed in ``Figure.warnings`` and in the SVG."""
    svg, data = _ridge.roofline_plot(_default_ceilings(device, "roofline"), list(operations), title)
    return Figure(svg, data)
