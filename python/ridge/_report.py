"""The report: ``ridge.report()`` writes the folder that ``ridge report`` writes, through the same
library function (device, timing, ceilings, sweeps, roofline, decode and profile sections on one
GPU; a model-only report without one)."""
from __future__ import annotations

import json
import os
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _ridge
from ._history import HistoryAdd
from ._paths import PathArg, fs_path
from ._results import Results


@dataclass(frozen=True)
class ReportSection:
    """How one section went: ``error`` is empty when it succeeded."""

    key: str
    title: str
    seconds: float
    records: int
    error: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.error)


@dataclass
class Report:
    """A written report folder, and what the run found.

    ``folder`` holds report.md, report.html, the SVG plots, results.json and trace.json;
    ``results`` is its results.json; ``measured`` the values the predictions were scored against."""

    folder: pathlib.Path
    gpu: bool
    subject: str
    sections: List[ReportSection]
    results: Results
    measured: Dict[str, float]
    markdown: str
    files: List[str]
    wall_seconds: float
    kept_files: List[str] = field(default_factory=list)
    #: How the run went into the ``history`` given to :func:`report` (None when none was given).
    history: Optional[HistoryAdd] = None
    #: The answer first, as the report opens: ``numbers`` (each with ``value``, ``reference``,
    #: ``fraction`` and its ``section``) and ``findings`` that need action (results.json's report.summary).
    summary: Dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when every section succeeded."""
        return not any(s.failed for s in self.sections)

    def __repr__(self) -> str:
        mode = "" if self.gpu else ", model only"
        return (f"Report({str(self.folder)!r}, {self.subject}{mode}: {len(self.sections)} sections, "
                f"{len(self.results)} records, {self.wall_seconds:.1f} s)")

    def _repr_markdown_(self) -> str:
        return self.markdown


class ReportError(_ridge.Error):
    """A report section failed. The folder was written anyway: ``.report`` holds it, and the
    message names each failed section and why."""

    def __init__(self, message: str, report: Report):
        super().__init__(message)
        self.report = report


def _prediction_texts(predictions: Union[None, Mapping[str, float], Sequence[str]]) -> List[str]:
    if predictions is None:
        return []
    if isinstance(predictions, Mapping):
        return [f"{key}={value!r}" for key, value in predictions.items()]
    if isinstance(predictions, (str, bytes)):
        raise TypeError("predictions must be a mapping {key: number} or a list of 'KEY=VALUE' strings, not one string")
    return [str(p) for p in predictions]


def _print_start(index: int, count: int, key: str, title: str) -> None:
    print(f"ridge report: [{index + 1}/{count}] {title} ...", file=sys.stderr, flush=True)


def _print_done(index: int, count: int, run_json: str) -> None:
    run = json.loads(run_json)
    state = f"FAILED: {run['error']}" if run["error"] else "done"
    print(f"ridge report: [{index + 1}/{count}] {run['title']} {state} in {run['seconds']:.1f} s", file=sys.stderr,
          flush=True)


def _history_add(raw: Optional[dict]) -> Optional[HistoryAdd]:
    if raw is None:
        return None
    return HistoryAdd(raw["added"], raw["run_id"], raw["content_hash"], raw["commit"], raw["branch"])


def report(folder: Optional[PathArg] = None, *, device: Optional[int] = None, quick: bool = False,
           model: Optional[str] = None, predictions: Union[None, Mapping[str, float], Sequence[str]] = None,
           force: bool = False, progress: bool = True, history: Optional[PathArg] = None) -> Report:
    """Runs the report and writes its folder, as ``ridge report`` does.

    folder: where to write (default ``runs/report-<UTC time>``); an existing non-empty folder is
    refused (UsageError) unless ``force``, which replaces only ridge's own files in it.
    device: the GPU to measure (default 0). quick: fewer samples and sizes, a short run.
    model: the catalog device of the model-only report, when there is no GPU (default: the
    library's, ``h100-sxm``). predictions: numbers committed before the run, ``{"hbm_tb_per_s": 4.2}``
    or ``["hbm_tb_per_s=4.2"]``; the report scores them. progress: one line per section on stderr.
    history: a run history file (see :class:`History`, created when missing) the finished report is
    added to, under the commit of the git repository of the current directory, else the results' git
    sha; ``.history`` of the result says how. It is opened before any work: a bad file is a UsageError
    then, and a ridge built without SQLite raises ridge.Error.

    Raises UsageError before any work for bad arguments; ReportError (with ``.report``) when a
    section failed; KeyboardInterrupt after Ctrl-C, which stops at the next section and leaves
    the finished sections in a folder marked INCOMPLETE beside ``folder``."""
    if device is not None and (isinstance(device, bool) or not isinstance(device, int)):
        raise TypeError(f"device must be an int, not {type(device).__name__}")
    path = os.fsdecode(fs_path(folder, "folder")) if folder is not None else None
    history_path = os.fsdecode(fs_path(history, "history")) if history is not None else None
    argv = ["ridge.report()"]
    raw_json, folder_path = _ridge.run_report(
        path, device, bool(quick), model, _prediction_texts(predictions), bool(force), argv,
        _print_start if progress else None, _print_done if progress else None, history_path)
    raw = json.loads(raw_json)
    folder_path = pathlib.Path(folder_path)
    sections = [ReportSection(s["key"], s["title"], s["seconds"], s["records"], s["error"]) for s in raw["sections"]]
    if raw["stopped_by_signal"]:
        raise KeyboardInterrupt(f"ridge.report stopped after {len(sections)} section(s); the partial report is in "
                                f"{folder_path} (marked INCOMPLETE); the destination folder was not touched")
    result = Report(folder=folder_path, gpu=raw["gpu"], subject=raw["subject"], sections=sections,
                    results=Results.load(folder_path), measured=raw["measured"], markdown=raw["markdown"],
                    files=raw["files"], wall_seconds=raw["wall_seconds"], kept_files=raw["kept_files"],
                    history=_history_add(raw["history"]),
                    summary=json.loads((folder_path / "results.json").read_text())["report"].get("summary", {}))
    failed = [s for s in sections if s.failed]
    if failed:
        reasons = "; ".join(f"{s.title}: {s.error}" for s in failed)
        raise ReportError(f"{len(failed)} report section(s) failed ({reasons}); the report was written to {folder_path}",
                          result)
    return result
