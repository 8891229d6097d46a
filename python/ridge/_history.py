"""The run history: ``ridge.History(path)`` keeps runs in one SQLite file, as ``ridge history``
does (the same library, include/ridge/history.hpp), and finds the commits where a record's
level changed. Runs and series come as pandas DataFrames; ``check()`` needs no pandas."""
from __future__ import annotations

import dataclasses
import errno
import json
import os
import pathlib
from typing import List, NamedTuple, Optional, Union

from . import _ridge
from ._paths import NotAFileError, PathArg, existing_path, fs_path
from ._results import Results, _flat_record

_CHECK = _ridge.CheckOptions()  # the library's defaults, written once in C++

# The order of the run table's columns (the values are the library's HistoryRun).
_RUN_COLUMNS = ("id", "commit", "branch", "run_time_utc", "added_utc", "machine", "gpu", "gpu_uuid",
                "driver_version", "ridge_version", "ridge_build", "records", "source", "content_hash")
_POINT_COLUMNS = ("series", "run_id", "commit", "branch", "run_time_utc", "machine", "gpu", "driver_version")


def _pandas(what: str):
    try:
        import pandas as pd  # type: ignore[import-untyped, unused-ignore]
    except ImportError as error:
        raise ImportError(f"History.{what} needs pandas: pip install pandas") from error
    return pd


class HistoryAdd(NamedTuple):
    """What :meth:`History.add` did: ``added`` is False when the same run was already there (then
    nothing changed and ``run_id`` is the run already stored)."""

    added: bool
    run_id: int
    content_hash: str
    commit: str
    branch: str


class HistoryImport(NamedTuple):
    """What :meth:`History.import_json_lines` did: runs added, and runs that were already there."""

    added: int
    already_present: int


@dataclasses.dataclass(frozen=True)
class HistoryChange:
    """A change of one record's level at one commit (ridge::HistoryChange): ``ratio`` is the median
    after over the median before (> 1: slower) with its 95% interval, ``p_value`` the test of the
    two windows' run medians (one number per run) against the series' own run-to-run noise, at
    ``alpha``, ``noise_band`` the relative change it had
    to exceed and ``noise_band_source`` which term set it. ``clock_changed`` and ``driver_changed``
    mark changes that coincide with a clock or driver change."""

    commit: str
    previous_commit: str
    run_time_utc: str
    name: str
    method: str
    dtype: str
    params: dict
    machine: str
    gpu: str
    runs_before: int
    runs_after: int
    median_before_ms: float
    median_after_ms: float
    ratio: float
    ratio_ci_low: float
    ratio_ci_high: float
    p_value: float
    alpha: float
    noise_band: float
    noise_band_source: str
    regression: bool
    clock_difference: float
    clock_changed: bool
    driver_changed: bool
    driver_before: int
    driver_after: int
    at_newest_commit: bool


class HistoryCheck:
    """The changes :meth:`History.check` found (ridge::HistoryCheck). The CI idiom is
    ``assert not h.check(since=base).regression_at_newest`` after checking ``nothing_compared``
    (``ridge history check`` exits 5 and 6 on them)."""

    def __init__(self, json_text: str, text: str):
        self.data = json.loads(json_text)
        self.text = text
        fields = {f.name for f in dataclasses.fields(HistoryChange)}
        self.changes: List[HistoryChange] = [
            HistoryChange(**{k: v for k, v in c.items() if k in fields}) for c in self.data["changes"]]

    runs = property(lambda self: self.data["runs"], doc="runs in the history")
    series = property(lambda self: self.data["series"], doc="record series (one machine and GPU each)")
    series_judged = property(lambda self: self.data["series_judged"],
                             doc="series long enough for at least one candidate commit")
    candidates = property(lambda self: self.data["candidates"], doc="(series, commit) pairs tested")
    newest_commit = property(lambda self: self.data["newest_commit"], doc="the commit of the newest run")

    @property
    def regression_at_newest(self) -> bool:
        """A regression at the newest commit (``ridge history check`` exits 5)."""
        return bool(self.data["regression_at_newest"])

    @property
    def nothing_compared(self) -> bool:
        """No series could be judged: there is no verdict (``ridge history check`` exits 6)."""
        return bool(self.data["nothing_compared"])

    @property
    def regressions(self) -> List[HistoryChange]:
        return [c for c in self.changes if c.regression]

    def to_pandas(self):
        """One row per change; needs pandas."""
        pd = _pandas("check().to_pandas")
        return pd.DataFrame([dataclasses.asdict(c) for c in self.changes],
                            columns=[f.name for f in dataclasses.fields(HistoryChange)])

    def __repr__(self) -> str:
        return self.text


def _shown(encoded: bytes) -> str:
    # A file name as ridge's messages and the history's `source` show it: bytes that are not UTF-8 as \xNN.
    return encoded.decode("utf-8", "backslashreplace")


def _require_history() -> None:
    if not _ridge.have_history:
        raise _ridge.Error("ridge.History: this ridge was built without SQLite: install libsqlite3-dev (or the "
                           "SQLite development files) and build ridge again")


class History:
    """A run history: every run kept in one SQLite file, the file ``ridge history`` reads and writes.

    ``History(path)`` opens it, creating it when missing; ``create=False`` refuses a missing file
    (PathNotFoundError). A folder is a NotAFileError; a file that is not SQLite, not a ridge history,
    truncated, or of a newer schema is a UsageError naming the problem, and the file is left as it
    was. Raises ridge.Error when this ridge was built without SQLite."""

    def __init__(self, path: PathArg, *, create: bool = True):
        _require_history()
        encoded = existing_path(path, "the history") if not create else fs_path(path, "the history")
        if os.path.isdir(encoded):
            raise NotAFileError(errno.EISDIR, f"the history {_shown(encoded)} is a folder, not a file", _shown(encoded))
        self._file: Optional[_ridge.HistoryFile] = _ridge.HistoryFile.open(encoded, bool(create))

    @property
    def path(self) -> pathlib.Path:
        return pathlib.Path(self._handle.path)

    @property
    def schema_version(self) -> int:
        """The schema version of the open file (``ridge._ridge.history_schema_version`` once opened)."""
        return self._handle.schema_version

    def add(self, run: Union[Results, PathArg], commit: Optional[str] = None, branch: Optional[str] = None,
            ) -> HistoryAdd:
        """Adds one run: a :class:`Results`, a result file or a report folder, in one transaction.
        ``commit`` and ``branch`` default to the git repository of the current directory, else the
        git sha in the results' context. Adding the same run again changes nothing (``added`` is
        False). Raises UsageError for a bad file, PathNotFoundError for a missing one."""
        if isinstance(run, Results):
            text, source = run.to_json(), "ridge.Results"
        elif isinstance(run, (str, bytes, os.PathLike)):
            encoded = existing_path(run, "the run", folder_ok=True)
            text, source = _ridge.load_result_file(encoded), _shown(encoded)
        else:
            raise TypeError(f"expected Results or a path to a result file or report folder, got {type(run).__name__}")
        return HistoryAdd(*self._handle.add(text, commit or "", branch or "", source, os.getcwd()))

    @property
    def runs(self):
        """One row per run, oldest first (pandas DataFrame): id, commit, branch, run_time_utc and
        added_utc (ISO 8601 text), machine, gpu, gpu_uuid, driver_version (e.g. 13000; 0 unknown),
        ridge_version, ridge_build, records (their number), source, content_hash."""
        pd = _pandas("runs")
        return pd.DataFrame(json.loads(self._handle.runs_json()), columns=list(_RUN_COLUMNS))

    def load_run(self, run_id: int) -> Results:
        """A stored run, as it was added."""
        data = json.loads(self._handle.load_run(int(run_id)))
        return Results(data["records"], data["context"])

    def series(self, name: Optional[str] = None, *, gpu: Optional[str] = None, machine: Optional[str] = None,
               method: Optional[str] = None, dtype: Optional[str] = None, samples: bool = False):
        """One row per run per record, oldest run first (pandas DataFrame), the rows ``check``
        judges: ``series`` (which record series: same record, machine and GPU), run_id, commit,
        branch, run_time_utc, machine, gpu, driver_version, then the record's columns as
        :meth:`Results.to_pandas` gives them (name, method, dtype, ``param.<key>``, median_ms,
        min_ms, max_ms, ..., ``clocks_start.sm_mhz``, ``gate.mode``). The arguments keep the rows
        that equal them; ``samples`` adds the raw samples (``samples_ms``, a list per row)."""
        pd = _pandas("series")
        wanted = {"name": name, "method": method, "dtype": dtype}
        where = {"gpu": gpu, "machine": machine}
        rows = []
        for point in json.loads(self._handle.series_json()):
            record = point["record"]
            if any(v is not None and record.get(k, "") != v for k, v in wanted.items()):
                continue
            if any(v is not None and point[k] != v for k, v in where.items()):
                continue
            row = {k: point[k] for k in _POINT_COLUMNS}
            row.update(_flat_record(record))
            if samples:
                row["samples_ms"] = record.get("samples_ms", [])
            rows.append(row)
        return pd.DataFrame(rows, columns=None if rows else list(_POINT_COLUMNS) + ["name", "method", "dtype"])

    def check(self, since: Optional[str] = None, *, threshold: float = _CHECK.threshold, alpha: float = _CHECK.alpha,
              window_runs: int = _CHECK.window_runs, max_window_runs: int = _CHECK.max_window_runs,
              detector: Optional[str] = None) -> HistoryCheck:
        """Finds the commits where a record's level changed, as ``ridge history check`` does: at
        each commit under review, the medians of up to ``window_runs`` runs before against up to
        ``window_runs`` from it on, one number per run, judged against the series' own run-to-run
        noise (a robust spread of its run medians) at ``alpha`` / commits tested, and against
        ``threshold``, the relative change that counts (docs/gate.md says how the band is set). A
        series whose noise hides a ``threshold`` step at ``window_runs`` widens its windows to the
        runs it needs, up to ``max_window_runs``. ``detector`` names the level detector (None: the
        run-median one history uses; see ``ridge history check --help`` for the names).
        ``since``: review only commits after this one (a run's commit or a unique prefix). Raises
        UsageError naming a bad option, or a ``since`` commit no run has."""
        return HistoryCheck(*self._handle.check(since, threshold, alpha, window_runs, max_window_runs, detector))

    def export_json_lines(self, path: Optional[PathArg] = None) -> str:
        """Every run as JSON lines, oldest first (what ``ridge history export`` writes); also
        written to ``path`` when given. Another history's :meth:`import_json_lines` reproduces them."""
        text = self._handle.export_json_lines()
        if path is not None:
            _ridge.write_text(fs_path(path), text)
        return text

    def import_json_lines(self, path: PathArg) -> HistoryImport:
        """Adds the runs of a JSON lines file (from :meth:`export_json_lines` or ``ridge history
        export``), one transaction each; runs already there are counted, not added. A bad line is a
        UsageError naming the file and the line, and then nothing is added."""
        encoded = existing_path(path, "the JSON lines file")
        with open(encoded, "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _ridge.UsageError(f"{_shown(encoded)}: not UTF-8 text at byte {error.start}; give a file that "
                                    "ridge history export wrote") from None
        return HistoryImport(*self._handle.import_json_lines(text, _shown(encoded)))

    @property
    def _handle(self) -> "_ridge.HistoryFile":
        if self._file is None:
            raise _ridge.UsageError("this History is closed; open the file again with ridge.History(path)")
        return self._file

    def close(self) -> None:
        """Closes the file (also at the end of a ``with`` block); the object is unusable then."""
        self._file = None

    def __enter__(self) -> "History":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"History({str(self.path)!r})" if self._file is not None else "History(closed)"


__all__ = ["History", "HistoryAdd", "HistoryChange", "HistoryCheck", "HistoryImport"]
